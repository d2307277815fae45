"""Live cohorts (issue 22): a socket subscribes to a cohort of a competing window, by id or as
"mine" (the followed player's, which moves with them), gets its standings ranked within it,
and the broadcaster reads each watched cohort once per tick its board changed, whatever the
number of its watchers, and no cohort nobody watches. Real Redis, real channel layer."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from channels.testing.websocket import WebsocketCommunicator
from django.test import AsyncClient

from competitions.selectors import cohorts as cohort_reads
from core import config
from core.config import GameConfig
from games import periods, services
from live import broadcaster
from live import services as live_services
from live.fanout import hub
from tests.competitions.test_cohorts import MONDAY, WEEK, board, cup, join, split_now  # noqa: F401 - cup: a fixture
from tests.conftest import clock_at
from tests.live.live_helpers import QUIET_SECS, drain, make_config

pytestmark = pytest.mark.django_db(transaction=True)


async def cup_game() -> GameConfig:
    game = await config.get_game("cup")
    assert game is not None
    return game


async def scores(game: GameConfig, *pairs: tuple[str, int]) -> None:
    board_config = game.board_named("weekly")
    assert board_config is not None
    for player_id, score in pairs:
        await services.score_submit(game=game, board=board_config, player_id=player_id, score=score)


async def tick(game: GameConfig, state: broadcaster.BroadcasterState) -> broadcaster.TickReport:
    return await broadcaster.tick(state=state, games=[game])


async def subscribe(ws: WebsocketCommunicator, cohort: str, limit: int = 10, period: str = "weekly") -> dict[str, Any]:
    await ws.send_json_to(
        {"action": "subscribe", "leaderboard": "weekly", "period": period, "cohort": cohort, "limit": limit}
    )
    return await ws.receive_json_from()


async def follow(ws: WebsocketCommunicator, *player_ids: str) -> list[dict[str, Any]]:
    await ws.send_json_to({"action": "follow", "player_ids": list(player_ids)})
    return await drain(ws)


def rows(message: dict[str, Any]) -> list[tuple[int, str, int]]:
    return [(e["rank"], e["player_id"], e["score"]) for e in message["entries"]]


def cohort_fields(message: dict[str, Any]) -> dict[str, Any]:
    return {k: message.get(k) for k in ("type", "period", "period_id", "cohort", "cohort_size", "tier", "total")}


async def four_in_two_cohorts(aclient: AsyncClient, cup: tuple[str, str]) -> GameConfig:  # noqa: F811
    """An open weekly board in cohorts of 2: p1, p2 in cohort 1; p3, p4 in cohort 2."""
    manage, _ = cup
    await board(aclient, manage, entry="open", cohort_size=2)
    game = await cup_game()
    await scores(game, ("p1", 10), ("p2", 20), ("p3", 30), ("p4", 40))
    return game


# --------------------------------------------------------------------------- by id


async def test_it_sends_a_cohorts_standings_ranked_within_it(aclient, cup, sockets):  # noqa: F811
    game = await four_in_two_cohorts(aclient, cup)
    state = broadcaster.BroadcasterState()
    await tick(game, state)  # the scores above: nobody watched a cohort yet
    ws = await sockets.open("cup")

    snapshot = await subscribe(ws, "2")

    assert cohort_fields(snapshot) == {
        "type": "standings",
        "period": "weekly",
        "period_id": WEEK,
        "cohort": "2",
        "cohort_size": 2,
        "tier": None,
        "total": 2,
    }
    assert rows(snapshot) == [(1, "p4", 40), (2, "p3", 30)]

    await scores(game, ("p3", 50), ("p1", 99))  # p1 is in cohort 1: it moves nothing here
    report = await tick(game, state)

    assert (report.cohorts, report.cohort_reads) == (1, 1)
    (pushed,) = await drain(ws)
    assert cohort_fields(pushed) == cohort_fields(snapshot)
    assert rows(pushed) == [(1, "p3", 50), (2, "p4", 40)]
    assert pushed["version"] > snapshot["version"]


async def test_it_reads_a_watched_cohort_once_per_tick_however_many_sockets_watch(aclient, cup, sockets):  # noqa: F811
    game = await four_in_two_cohorts(aclient, cup)
    state = broadcaster.BroadcasterState()
    watchers = [await sockets.open("cup") for _ in range(2)]
    for ws, limit in zip(watchers, (1, 10), strict=True):
        await subscribe(ws, "1", limit)
    await tick(game, state)

    await scores(game, ("p1", 25))
    report = await tick(game, state)

    # One read and one message for cohort 1, none for cohort 2, which nobody watches.
    assert (report.cohort_reads, report.cohorts, report.standings) == (1, 1, 2)
    first, second = [await drain(ws) for ws in watchers]
    assert [rows(m) for m in first] == [[(1, "p1", 25)]]
    assert [rows(m) for m in second] == [[(1, "p1", 25), (2, "p2", 20)]]
    assert first[0]["version"] == second[0]["version"]


async def test_it_reads_no_cohort_on_a_tick_where_no_board_changed(aclient, cup, sockets):  # noqa: F811
    game = await four_in_two_cohorts(aclient, cup)
    state = broadcaster.BroadcasterState()
    ws = await sockets.open("cup")
    await subscribe(ws, "1")
    await scores(game, ("p2", 30))
    assert (await tick(game, state)).cohort_reads == 1
    assert len(await drain(ws)) == 1

    report = await tick(game, state)

    assert report == broadcaster.TickReport()
    assert await ws.receive_nothing(timeout=QUIET_SECS)


async def test_it_reads_no_cohort_when_nobody_watches_one(aclient, cup, sockets):  # noqa: F811
    game = await four_in_two_cohorts(aclient, cup)
    ws = await sockets.open("cup")
    await ws.send_json_to({"action": "subscribe", "leaderboard": "weekly", "period": "weekly"})
    assert "cohort" not in await ws.receive_json_from()  # the board's own standings
    await scores(game, ("p5", 50))  # into a third cohort

    report = await tick(game, broadcaster.BroadcasterState())

    assert (report.standings, report.cohort_reads, report.cohorts) == (2, 0, 0)
    (board_message,) = await drain(ws)
    assert "cohort" not in board_message and board_message["total"] == 5


async def test_it_stops_a_cohorts_standings_once_unsubscribed(aclient, cup, sockets):  # noqa: F811
    game = await four_in_two_cohorts(aclient, cup)
    state = broadcaster.BroadcasterState()
    ws = await sockets.open("cup")
    await ws.send_json_to({"action": "subscribe", "leaderboard": "weekly", "period": "weekly"})
    await ws.receive_json_from()
    await subscribe(ws, "2")

    await ws.send_json_to({"action": "unsubscribe", "leaderboard": "weekly", "period": "weekly", "cohort": "2"})
    await scores(game, ("p3", 77))
    await tick(game, state)

    # The board view stays; the cohort's message has no watcher left on this socket.
    assert [("cohort" in m, m["total"]) for m in await drain(ws)] == [(False, 4)]


async def test_it_replaces_a_windows_cohort_when_subscribed_to_another(aclient, cup, sockets):  # noqa: F811
    game = await four_in_two_cohorts(aclient, cup)
    state = broadcaster.BroadcasterState()
    ws = await sockets.open("cup")
    await subscribe(ws, "2")

    replaced = await subscribe(ws, "01", limit=1)
    await scores(game, ("p3", 77), ("p2", 66))
    report = await tick(game, state)

    assert (replaced["cohort"], rows(replaced)) == ("1", [(1, "p2", 20)])
    # Cohort 2 had no other watcher in this process: the broadcaster stopped reading it at once.
    assert (report.cohorts, report.cohort_reads) == (1, 1)
    assert [(m["cohort"], rows(m)) for m in await drain(ws)] == [("1", [(1, "p2", 66)])]


# --------------------------------------------------------------------------- mine


async def test_it_subscribes_to_the_followed_players_cohort_as_mine(aclient, cup, sockets):  # noqa: F811
    game = await four_in_two_cohorts(aclient, cup)
    state = broadcaster.BroadcasterState()
    ws = await sockets.open("cup")
    mine = await subscribe(ws, "mine")
    assert (mine["cohort"], mine["total"], mine["entries"]) == (None, 0, [])  # nobody followed yet

    answers = await follow(ws, "p1")

    moved, player = answers if answers[0]["type"] == "standings" else answers[::-1]
    assert (moved["cohort"], rows(moved)) == ("1", [(1, "p2", 20), (2, "p1", 10)])
    assert player["periods"]["weekly"] | {"percentile": None} == {
        "period_id": WEEK,
        "score": 10,
        "shown": "10",
        "rank": 4,
        "total": 4,
        "percentile": None,
        "cohort": "1",
        "cohort_rank": 2,
        "cohort_size": 2,
        "tier": None,
    }

    # Following another player moves "mine" to their cohort.
    (moved,) = [m for m in await follow(ws, "p3") if m["type"] == "standings"]
    assert (moved["cohort"], rows(moved)) == ("2", [(1, "p4", 40), (2, "p3", 30)])

    await tick(game, state)  # the broadcaster's first look at the followed players
    await drain(ws)
    await scores(game, ("p3", 45))
    report = await tick(game, state)

    # Cohort 2 is read once, for the socket's view and p3's place; p1, followed too, is in
    # cohort 1, which nobody watches: read once more for p1's place alone.
    assert (report.cohorts, report.cohort_reads, report.players) == (1, 2, 1)
    received = await drain(ws)
    standings = [m for m in received if m["type"] == "standings"]
    assert [(m["cohort"], rows(m)) for m in standings] == [("2", [(1, "p3", 45), (2, "p4", 40)])]
    (player,) = [m for m in received if m["type"] == "player"]
    assert (player["player_id"], player["periods"]["weekly"]["cohort_rank"]) == ("p3", 1)


async def test_it_moves_mine_from_none_to_the_players_cohort_at_a_balanced_split(aclient, cup, sockets):  # noqa: F811
    manage, submit = cup
    state = broadcaster.BroadcasterState()
    with clock_at(MONDAY + dt.timedelta(minutes=5)):
        await board(aclient, manage, entry="join", cohort_size=2, cohort_fill="balanced", entry_window_secs=3600)
        game = await cup_game()
        for i in range(5):
            await join(aclient, submit, f"p{i}")
        await scores(game, *((f"p{i}", 10 * i) for i in range(5)))  # held: they count from the start
        ws = await sockets.open("cup")
        await follow(ws, "p3")
        held = await subscribe(ws, "mine")
        (player,) = await drain(ws)
        assert (held["cohort"], held["cohort_size"], held["entries"]) == (None, 0, [])
        weekly = player["periods"]["weekly"]
        assert (weekly["cohort"], weekly["cohort_rank"], weekly["cohort_size"]) == (None, None, None)
        await tick(game, state)
        # The broadcaster's first look at p3: held, in no cohort; nothing for "mine" to show.
        assert [(m["type"], m["periods"]["weekly"]["cohort"]) for m in await drain(ws)] == [("player", None)]

    with clock_at(MONDAY + dt.timedelta(hours=1)):
        # The open socket renews its follow every 20 s; the pinned clock jumped an hour past that.
        await live_services.live_follow(game=game, player_ids=["p3"])
        assert await split_now() == 1
        report = await tick(game, state)  # the split marked the board changed

        assert report.players == 1
        player, moved = await drain(ws)
        board_config = game.board_named("weekly")
        assert board_config is not None
        period = periods.window_current(board_config, "weekly", MONDAY + dt.timedelta(hours=1))
        index = (await cohort_reads.cohorts_of(board=board_config, period=period, player_ids=["p3"]))["p3"]
        cohort = cohort_reads.cohort_label(board_config, index)[0]
        assert (player["type"], player["periods"]["weekly"]["cohort"]) == ("player", cohort)
        assert (moved["type"], moved["cohort"], moved["cohort_size"]) == ("standings", cohort, 2)
        assert "p3" in [e["player_id"] for e in moved["entries"]]

        # From now on the broadcaster reads that cohort for this socket.
        await scores(game, ("p3", 1000))
        report = await tick(game, state)
        assert (report.cohorts, report.cohort_reads) == (1, 1)
        pushed = [m for m in await drain(ws) if m["type"] == "standings"]
        assert [(m["cohort"], m["entries"][0]["player_id"]) for m in pushed] == [(cohort, "p3")]


async def test_it_resets_cohort_views_with_their_window(aclient, cup, sockets):  # noqa: F811
    game = await four_in_two_cohorts(aclient, cup)
    state = broadcaster.BroadcasterState()
    await tick(game, state)  # claims this week's period: its end is announced once
    by_id, mine = await sockets.open("cup"), await sockets.open("cup")
    await subscribe(by_id, "1")
    await follow(mine, "p3")
    assert (await subscribe(mine, "mine"))["cohort"] == "2"
    await drain(mine)

    next_week = MONDAY + dt.timedelta(days=7, hours=1)
    with clock_at(next_week):
        # What the open sockets renew every 20 s, past the clock's jump.
        await live_services.live_follow(game=game, player_ids=["p3"])
        await live_services.live_watch_cohorts(ref="cup.weekly", window="weekly", indexes=[1], watcher=hub().token)
        report = await tick(game, state)
        assert report.resets == 1  # the weekly window's (all-time never resets)
        for ws in (by_id, mine):
            (reset,) = await drain(ws)
            assert (reset["type"], reset["period"]) == ("reset", "weekly")
        new_week = reset["period_id"]

        await scores(game, ("p9", 5), ("p3", 1))  # the new week's cohort 1
        report = await tick(game, state)

        # The id view goes on with cohort 1 of the new week; "mine" had none until p3's message named it.
        (pushed,) = await drain(by_id)
        assert (pushed["period_id"], pushed["cohort"], rows(pushed)) == (new_week, "1", [(1, "p9", 5), (2, "p3", 1)])
        player, moved = await drain(mine)
        assert (player["type"], player["periods"]["weekly"]["period_id"]) == ("player", new_week)
        assert player["periods"]["weekly"]["cohort"] == "1"
        # Its snapshot carries the board's version, as the broadcaster's message of that cohort did.
        assert (moved["period_id"], moved["cohort"], moved["version"]) == (new_week, "1", pushed["version"])


# --------------------------------------------------------------------------- refusals


async def test_it_refuses_cohorts_where_there_are_none_and_cohorts_that_do_not_exist(
    aclient,
    cup,  # noqa: F811
    sockets,
    make_game,
):
    await four_in_two_cohorts(aclient, cup)
    ws = await sockets.open("cup")

    assert await subscribe(ws, "1", period="all-time") == {
        "type": "error",
        "code": "no_cohorts",
        "message": "Cohorts race in this leaderboard's weekly window.",
    }
    assert await subscribe(ws, "9") == {
        "type": "error",
        "code": "cohort_not_found",
        "message": f"The period {WEEK} has no cohort '9'.",
    }
    assert (await subscribe(ws, "two"))["code"] == "cohort_not_found"
    refused = await subscribe(ws, "Mine")
    assert (refused["code"], refused["message"]) == ("invalid", 'cohort must be "mine" or a cohort id, such as "3".')

    await make_config(make_game, slug="tetris")
    plain = await sockets.open("tetris")
    await plain.send_json_to({"action": "subscribe", "period": "daily", "cohort": "mine"})
    assert await plain.receive_json_from() == {
        "type": "error",
        "code": "no_cohorts",
        "message": "This leaderboard has no cohorts.",
    }
    # Refused subscriptions watch nothing: the socket still takes its board.
    assert (await subscribe(ws, "1"))["cohort"] == "1"
