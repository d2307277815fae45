"""Live views below the top (subscribe with an offset): a deep page gets its own rows as a
snapshot and then whenever they move, checked against the board read through the API's own
selectors; a view inside the top is cut from the top's message; the rows of one view are read
once per change however many sockets show it."""

from __future__ import annotations

from typing import Any

import pytest
from channels.testing.websocket import WebsocketCommunicator

from core import metrics
from core.config import GameConfig
from games import selectors, services
from live import broadcaster, events, fanout
from tests.live.live_helpers import QUIET_SECS, drain, make_config

pytestmark = pytest.mark.django_db(transaction=True)

PLAYERS = 300


async def submit(game: GameConfig, *scores: tuple[str, int]) -> None:
    for player_id, score in scores:
        await services.score_submit(game=game, board=game.boards[0], player_id=player_id, score=score)


async def subscribe(ws: WebsocketCommunicator, **fields: Any) -> dict[str, Any]:
    await ws.send_json_to({"action": "subscribe", "period": "all-time", **fields})
    message = await ws.receive_json_from()
    assert message["type"] in ("standings", "error"), message
    return message


async def expected(game: GameConfig, offset: int, limit: int) -> list[tuple[int, str, int]]:
    page = await selectors.leaderboard_page(board=game.boards[0], period="all-time", offset=offset, limit=limit)
    return [(e.rank, e.player_id, e.score) for e in page.entries]


def rows(message: dict[str, Any]) -> list[tuple[int, str, int]]:
    return [(e["rank"], e["player_id"], e["score"]) for e in message["entries"]]


def reads() -> float:
    return metrics.LIVE_DEEP_READS._value.get()


@pytest.fixture
async def deep_game(make_game) -> GameConfig:
    game = await make_config(make_game, periods_kept=["all-time"])
    await submit(game, *((f"p{i:03}", i * 10) for i in range(PLAYERS)))
    return game


async def test_it_keeps_a_deep_page_live_as_players_move_through_it(deep_game, sockets):
    game = deep_game
    ws = await sockets.open()
    snapshot = await subscribe(ws, offset=200, limit=50)
    assert (snapshot["offset"], snapshot["total"]) == (200, PLAYERS)
    assert rows(snapshot) == await expected(game, 200, 50)
    state = broadcaster.BroadcasterState()

    # p050 (now rank 250) jumps to the top: everyone above it on the page moves down one.
    await submit(game, ("p050", 10_000))
    await broadcaster.tick(state=state, games=[game])
    [moved] = await drain(ws)

    assert moved["type"] == "standings" and moved["offset"] == 200
    assert moved["version"] > snapshot["version"]
    assert rows(moved) == await expected(game, 200, 50)
    assert "p050" not in [e["player_id"] for e in moved["entries"]]

    # A change that leaves the page's rows as they are sends nothing.
    await submit(game, ("p299", 20_000))
    await broadcaster.tick(state=state, games=[game])
    assert await drain(ws) == []


async def test_it_cuts_a_view_inside_the_top_from_the_tops_message(deep_game, sockets):
    game = deep_game
    ws = await sockets.open()
    snapshot = await subscribe(ws, offset=50, limit=50)
    before = reads()

    await submit(game, ("p000", 5_000))  # into the top: the view's rows move
    await broadcaster.tick(state=broadcaster.BroadcasterState(), games=[game])
    [moved] = await drain(ws)

    assert snapshot["offset"] == moved["offset"] == 50
    assert rows(moved) == await expected(game, 50, 50)
    assert reads() == before  # read by the broadcaster once, not again for the view


async def test_it_reads_a_deep_view_once_for_all_the_sockets_that_show_it(deep_game, sockets):
    game = deep_game
    watchers = [await sockets.open() for _ in range(5)]
    for ws in watchers:
        await subscribe(ws, offset=150, limit=25)
    other = await sockets.open()
    await subscribe(other, offset=250, limit=25)
    before = reads()

    await submit(game, ("p100", 9_000))  # leaves ranks 101..200 for the top: both views move
    await broadcaster.tick(state=broadcaster.BroadcasterState(), games=[game])
    got = [await drain(ws) for ws in [*watchers, other]]

    assert [len(messages) for messages in got] == [1, 1, 1, 1, 1, 0]  # 250.. saw nothing move
    want = await expected(game, 150, 25)
    assert all(rows(messages[0]) == want for messages in got[:5])
    assert reads() - before == 2  # one read per distinct view, not per socket


async def test_it_refuses_an_offset_it_cannot_serve(deep_game, sockets):
    ws = await sockets.open()

    too_deep = await subscribe(ws, offset=10**9 + 1)
    on_cohort = await subscribe(ws, offset=5, cohort="mine")

    assert (too_deep["code"], too_deep["message"]) == ("invalid", "offset must be an integer from 0 to 1,000,000,000.")
    cohort_refusal = ("invalid", "offset is for a view of the board, not of a cohort.")
    assert (on_cohort["code"], on_cohort["message"]) == cohort_refusal
    assert await ws.receive_nothing(timeout=QUIET_SECS)


async def test_it_answers_a_view_past_the_end_with_no_rows_then_fills_it(deep_game, sockets):
    game = deep_game
    ws = await sockets.open()
    empty = await subscribe(ws, offset=300, limit=10)
    assert (empty["entries"], empty["total"]) == ([], PLAYERS)

    await submit(game, ("late", -1))
    await broadcaster.tick(state=broadcaster.BroadcasterState(), games=[game])
    [filled] = await drain(ws)

    assert rows(filled) == [(301, "late", -1)]


async def test_it_reads_changes_that_arrive_together_once(deep_game, sockets):
    # Five changes of the window reach a busy process at once (the hub hands them over in one
    # go): the deep view is read once for all five, not once each (bench-deep found 10 reads
    # per frame sent at 1,000 pages when every held change started a read of its own).
    game = deep_game
    ws = await sockets.open()
    snapshot = await subscribe(ws, offset=200, limit=50)
    await submit(game, ("p050", 10_000))  # moves every row of the page
    report = await broadcaster.tick(state=broadcaster.BroadcasterState(), games=[game])
    assert report.boards == 1
    [moved] = await drain(ws)
    before = reads()
    group = events.board_group(game.boards[0].ref, "all-time")

    hub = fanout.hub()
    for step in range(1, 6):
        hub.dispatch({"type": fanout.EVENT, "group": group, "payload": {**moved, "version": moved["version"] + step}})
    got = await drain(ws)

    assert reads() - before == 1
    assert got == []  # the one read found the rows this socket already shows
    assert moved["version"] > snapshot["version"]
