"""The live broadcaster: coalescing, versions, resets and followed players, seen from a real websocket."""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing.websocket import WebsocketCommunicator

from core import keys
from core.clock import iso
from core.clock import now as clock_now
from core.config import GameConfig
from core.redis import get_redis
from games import periods, selectors, services
from live import broadcaster
from live import selectors as live_selectors
from live import services as live_services
from presence import selectors as presence_selectors
from tests.conftest import clock_at
from tests.live.entries import live_rows
from tests.live.live_helpers import QUIET_SECS, drain, make_config

pytestmark = pytest.mark.django_db(transaction=True)

# The concurrency tests run broadcasters for real: how fast they tick and for how long scores keep coming.
FAST_TICK_MS = 20
RACE_SECS = 1.5
# The race goes on until both: this many submissions made, and RACE_SECS passed (a loaded
# machine, as CI's parallel cluster run, made only 52 in 1.5 s).
RACE_SUBMISSIONS_MIN = 101
COALESCE_TICK_MS = 200
COALESCE_SUBMISSIONS = 1000
COALESCE_SPREAD_SECS = 1.0


async def subscribe(ws: WebsocketCommunicator, period: str, limit: int = 100) -> dict[str, Any]:
    await ws.send_json_to({"action": "subscribe", "period": period, "limit": limit})
    snapshot = await ws.receive_json_from()
    assert snapshot["type"] == "standings", snapshot
    return snapshot


async def follow(ws: WebsocketCommunicator, player_ids: list[str]) -> list[dict[str, Any]]:
    """Follow, and return the answers (one per followed player already on a subscribed board)."""
    await ws.send_json_to({"action": "follow", "player_ids": player_ids})
    # Messages are handled in order: the error answering the next one shows the follow was handled.
    await ws.send_json_to({"action": "barrier"})
    answers = []
    while (message := await ws.receive_json_from())["type"] != "error":
        answers.append(message)
    return answers


async def board_rows(game: GameConfig, period: str, limit: int = 100) -> tuple[int, list[dict[str, Any]]]:
    """The board's rows as live messages carry them: with whether each player is online."""
    board = await selectors.leaderboard_page(board=game.boards[0], period=period, limit=limit)
    online = await presence_selectors.online_among(game=game, player_ids=[e.player_id for e in board.entries])
    return board.total, live_rows(board, online)


def standings_of(messages: list[dict[str, Any]], period: str) -> list[dict[str, Any]]:
    return [m for m in messages if m["type"] == "standings" and m["period"] == period]


def kinds(messages: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    return [(m["type"], m.get("period") or m.get("player_id")) for m in messages]


# --------------------------------------------------------------------------- coalescing and versions


async def test_it_sends_one_standings_per_board_per_tick_however_many_submissions(make_game, sockets):
    game = await make_config(make_game, periods_kept=["daily", "all-time"])
    both, daily_only = await sockets.open(), await sockets.open()
    await subscribe(both, "daily")
    await subscribe(both, "all-time")
    await subscribe(daily_only, "daily")
    for i in range(50):
        await services.score_submit(game=game, board=game.boards[0], player_id=f"p{i:02}", score=(i * 37) % 101)

    report = await broadcaster.tick(state=broadcaster.BroadcasterState(), games=[game])

    assert report.standings == 2
    received = await drain(both)
    assert sorted(kinds(received)) == [("standings", "all-time"), ("standings", "daily")]
    for message in received:
        assert message["version"] == 1
        assert (message["total"], message["entries"]) == await board_rows(game, message["period"])
    assert kinds(await drain(daily_only)) == [("standings", "daily")]


async def test_it_sends_nothing_on_a_tick_without_submissions(make_game, sockets):
    game = await make_config(make_game, periods_kept=["daily", "all-time"])
    ws = await sockets.open()
    await subscribe(ws, "daily")
    state = broadcaster.BroadcasterState()
    await services.score_submit(game=game, board=game.boards[0], player_id="a", score=1)
    await broadcaster.tick(state=state, games=[game])
    assert len(await drain(ws)) == 1

    report = await broadcaster.tick(state=state, games=[game])

    assert report == broadcaster.TickReport()
    assert await ws.receive_nothing(timeout=QUIET_SECS)


async def test_it_numbers_each_boards_standings_consecutively(make_game, sockets):
    game = await make_config(make_game, periods_kept=["daily", "all-time"])
    ws = await sockets.open()
    await subscribe(ws, "daily")
    await subscribe(ws, "all-time")
    state = broadcaster.BroadcasterState()
    seen: dict[str, list[int]] = {"daily": [], "all-time": []}

    for round_ in range(6):
        if round_ != 3:  # a quiet tick takes no version
            await services.score_submit(game=game, board=game.boards[0], player_id=f"p{round_}", score=round_)
        await broadcaster.tick(state=state, games=[game])
        for message in await drain(ws):
            seen[message["period"]].append(message["version"])

    assert seen == {"daily": [1, 2, 3, 4, 5], "all-time": [1, 2, 3, 4, 5]}


async def test_it_never_repeats_a_version_with_two_broadcasters_racing(make_game, sockets):
    game = await make_config(make_game, periods_kept=["daily", "all-time"])
    ws = await sockets.open()
    await subscribe(ws, "all-time", limit=10)
    await subscribe(ws, "daily", limit=10)
    loop = asyncio.get_running_loop()
    stops = [asyncio.Event(), asyncio.Event()]
    # run() keeps its own BroadcasterState: two processes' worth of broadcasters.
    runners = [asyncio.create_task(broadcaster.run(tick_ms=FAST_TICK_MS, stop=stop)) for stop in stops]
    try:
        deadline = loop.time() + RACE_SECS
        submitted = 0
        while loop.time() < deadline or submitted < RACE_SUBMISSIONS_MIN:
            # Scores only rise ("best" mode), so every submission changes the board.
            await services.score_submit(
                game=game, board=game.boards[0], player_id=f"p{submitted % 40}", score=submitted
            )
            submitted += 1
            await asyncio.sleep(0.002)
        received = await drain(ws)

        for period in ("daily", "all-time"):
            versions = [m["version"] for m in standings_of(received, period)]
            assert len(versions) > 10, versions
            assert all(a < b for a, b in itertools.pairwise(versions)), versions
            final = standings_of(received, period)[-1]
            assert (final["total"], final["entries"]) == await board_rows(game, period, limit=10)

        stops[0].set()
        await runners[0]
        await services.score_submit(game=game, board=game.boards[0], player_id="late", score=10**6)
        late = await ws.receive_json_from(timeout=2)
        assert late["type"] == "standings"
        assert late["entries"][0]["player_id"] == "late"
        assert late["version"] > max(m["version"] for m in standings_of(received, late["period"]))
    finally:
        for stop in stops:
            stop.set()
        await asyncio.gather(*runners)


async def test_it_bounds_the_messages_of_a_burst_by_the_tick_rate(make_game, sockets):
    game = await make_config(make_game, periods_kept=["all-time"])
    ws = await sockets.open()
    await subscribe(ws, "all-time")
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    runner = asyncio.create_task(broadcaster.run(tick_ms=COALESCE_TICK_MS, stop=stop))
    try:
        started = loop.time()
        for i in range(COALESCE_SUBMISSIONS):
            await services.score_submit(game=game, board=game.boards[0], player_id=f"p{i:04}", score=i)
            ahead = started + COALESCE_SPREAD_SECS * (i + 1) / COALESCE_SUBMISSIONS - loop.time()
            if ahead > 0:
                await asyncio.sleep(ahead)
        duration = loop.time() - started
        received = [await ws.receive_json_from(timeout=2)]
        while received[-1]["total"] < COALESCE_SUBMISSIONS:
            received.append(await ws.receive_json_from(timeout=2))
        assert await ws.receive_nothing(timeout=2 * COALESCE_TICK_MS / 1000)
    finally:
        stop.set()
        await runner

    # A tick can see the burst's marks at most once per tick interval, plus the ticks at either end.
    assert 2 <= len(received) <= duration / (COALESCE_TICK_MS / 1000) + 2, (len(received), duration)
    versions = [m["version"] for m in received]
    assert all(a < b for a, b in itertools.pairwise(versions)), versions
    assert (received[-1]["total"], received[-1]["entries"]) == await board_rows(game, "all-time")


# --------------------------------------------------------------------------- resets


async def test_it_announces_a_period_rollover_once(make_game, sockets):
    zone = "Asia/Kolkata"  # local midnight is 18:30 UTC, so the daily boundary is not the UTC one
    game = await make_config(make_game, periods_kept=["daily", "all-time"], timezone_name=zone)
    ws = await sockets.open()
    await subscribe(ws, "daily")
    boundary = periods.current("daily", zone, clock_now()).ends_at
    assert boundary is not None
    before, after = boundary - dt.timedelta(minutes=30), boundary + dt.timedelta(minutes=30)
    assert before.date() == after.date()
    new_period = periods.current("daily", zone, after)
    assert new_period.ends_at is not None
    first, second = broadcaster.BroadcasterState(), broadcaster.BroadcasterState()

    # Before the boundary no rollover is due.
    with clock_at(before):
        assert (await broadcaster.tick(state=first, games=[game])).resets == 0
    with clock_at(before):
        assert (await broadcaster.tick(state=first, games=[game])).resets == 0
    assert await ws.receive_nothing(timeout=QUIET_SECS)

    with clock_at(after):
        assert (await broadcaster.tick(state=first, games=[game])).resets == 1
    assert await ws.receive_json_from(timeout=2) == {
        "type": "reset",
        "leaderboard": "main",
        "period": "daily",
        "period_id": new_period.id,
        "resets_at": iso(new_period.ends_at),
    }
    # Another broadcaster reaching the same moment finds the rollover claimed.
    with clock_at(after):
        assert (await broadcaster.tick(state=second, games=[game])).resets == 0
    assert await ws.receive_nothing(timeout=QUIET_SECS)

    # The new period's board counts versions from 1, and the socket takes them.
    with clock_at(after):
        await services.score_submit(game=game, board=game.boards[0], player_id="a", score=5)
    with clock_at(after):
        assert (await broadcaster.tick(state=second, games=[game])).standings == 2
    standings = await ws.receive_json_from(timeout=2)
    assert (standings["period_id"], standings["version"], standings["total"]) == (new_period.id, 1, 1)


# --------------------------------------------------------------------------- followed players


async def test_it_sends_a_followed_player_only_when_their_score_or_rank_changed(make_game, sockets):
    game = await make_config(make_game, periods_kept=["all-time"])
    ws = await sockets.open()
    await subscribe(ws, "all-time")
    assert await follow(ws, ["a"]) == []  # not on the board yet
    state = broadcaster.BroadcasterState()

    async def after(*scores: tuple[str, int]) -> tuple[broadcaster.TickReport, list[dict[str, Any]]]:
        for player_id, score in scores:
            await services.score_submit(game=game, board=game.boards[0], player_id=player_id, score=score)
        report = await broadcaster.tick(state=state, games=[game])
        return report, await drain(ws)

    report, received = await after(("a", 10))
    assert (report.standings, report.players) == (1, 1)
    assert kinds(received) == [("standings", "all-time"), ("player", "a")]
    assert received[1]["periods"]["all-time"] == {
        "period_id": "all-time",
        "score": 10,
        "shown": "10",
        "rank": 1,
        "total": 1,
        "percentile": 0.0,
    }

    # Someone joins below a: a's score and rank stay, so no player message.
    report, received = await after(("b", 5))
    assert report.players == 0
    assert kinds(received) == [("standings", "all-time")]

    # A worse score in "best" mode changes nothing for a.
    report, received = await after(("a", 3))
    assert (report.standings, report.players) == (1, 0)
    # The board kept its rows and total, so the socket is not even sent the standings.
    assert received == []

    report, received = await after(("c", 20))
    assert report.players == 1
    assert received[1]["periods"]["all-time"] == {
        "period_id": "all-time",
        "score": 10,
        "shown": "10",
        "rank": 2,
        "total": 3,
        "percentile": 33.33,
    }

    report, received = await after(("a", 30))
    assert report.players == 1
    assert received[1]["periods"]["all-time"] == {
        "period_id": "all-time",
        "score": 30,
        "shown": "30",
        "rank": 1,
        "total": 3,
        "percentile": 66.67,
    }


async def test_it_drops_follows_that_lapsed(make_game, sockets):
    game = await make_config(make_game, periods_kept=["all-time"])
    ws = await sockets.open()
    await subscribe(ws, "all-time")
    await follow(ws, ["a"])
    await services.score_submit(game=game, board=game.boards[0], player_id="a", score=1)
    now = clock_now()
    with clock_at(now):
        assert await live_selectors.followed_players(game=game) == ["a"]

    lapsed = now + dt.timedelta(milliseconds=live_services.FOLLOW_TTL_MS + 1000)
    with clock_at(lapsed):
        report = await broadcaster.tick(state=broadcaster.BroadcasterState(), games=[game])

    assert (report.standings, report.players) == (1, 0)
    assert kinds(await drain(ws)) == [("standings", "all-time")]
    # Dropped, not merely skipped: even at the present moment nobody follows a any more.
    with clock_at(now):
        assert await live_selectors.followed_players(game=game) == []


async def test_it_keeps_a_follow_until_it_lapses(make_game):
    game = await make_config(make_game, periods_kept=["all-time"])
    now = clock_now()
    with clock_at(now):
        await live_services.live_follow(game=game, player_ids=["a", "b"])

    almost = now + dt.timedelta(milliseconds=live_services.FOLLOW_TTL_MS - 1000)
    with clock_at(almost):
        assert sorted(await live_selectors.followed_players(game=game)) == ["a", "b"]
    with clock_at(almost):
        await live_services.live_follow(game=game, player_ids=["b"])
    lapsed = now + dt.timedelta(milliseconds=live_services.FOLLOW_TTL_MS + 1000)
    with clock_at(lapsed):
        assert await live_selectors.followed_players(game=game) == ["b"]


# --------------------------------------------------------------------------- past periods


async def test_it_consumes_dirty_marks_of_past_periods_without_sending(make_game, sockets):
    game_model = await sync_to_async(make_game)("tetris", periods_kept=["daily"], max_submissions_per_minute=0)
    game = GameConfig.from_model(game_model, "0")
    ws = await sockets.open()
    await subscribe(ws, "daily")
    now = clock_now()
    yesterday = now - dt.timedelta(days=1)
    state = broadcaster.BroadcasterState()
    client = get_redis()

    # A late write to yesterday's board, then hiding its player (which touches every kept board).
    with clock_at(yesterday):
        await services.score_submit(game=game, board=game.boards[0], player_id="a", score=5)
    assert await client.zcard(keys.dirty(keys.board_ref(game.slug, "main"))) == 1
    with clock_at(now):
        assert (await broadcaster.tick(state=state, games=[game])).standings == 0
    with clock_at(now):
        await sync_to_async(services.player_set_hidden)(game=game_model, player_id="a", hidden=True)
    assert await client.zcard(keys.dirty(keys.board_ref(game.slug, "main"))) == 1
    with clock_at(now):
        assert (await broadcaster.tick(state=state, games=[game])).standings == 0

    assert await client.zcard(keys.dirty(keys.board_ref(game.slug, "main"))) == 0
    assert await ws.receive_nothing(timeout=QUIET_SECS)
    # Today's board still goes out.
    with clock_at(now):
        await services.score_submit(game=game, board=game.boards[0], player_id="b", score=1)
    with clock_at(now):
        assert (await broadcaster.tick(state=state, games=[game])).standings == 1
    assert [e["player_id"] for e in (await ws.receive_json_from(timeout=2))["entries"]] == ["b"]
