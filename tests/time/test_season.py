"""A season's start and its end with every process running (the bug of issue 20: once a season
ended, the broadcaster spun at 100% of a core and no board got live updates again).

Before its start the board refuses scores (409 ``board_closed``); from its start it takes them
and they go out live; at its end it refuses them again and stays readable, its season periods
are archived once, every other board stays live, and every process is idle, a broadcaster
started after the end too.
"""

from __future__ import annotations

import asyncio
import datetime as dt

import httpx
import pytest

from tests.time.client import (
    ARCHIVE_TIMEOUT_SECS,
    Watcher,
    all_listed,
    api,
    assert_idle,
    eventually,
    move_to,
    page,
    post_score,
    put_board,
    until,
    watch,
)
from tests.time.stack import Game, Stack

pytestmark = [pytest.mark.time, pytest.mark.wall_clock]

LEAD = dt.timedelta(seconds=4)
SEASON = dt.timedelta(days=14)
# A broadcaster's start-up (Django, its first ticks) takes this long at most on a loaded machine.
BROADCASTER_START_SECS = 8.0


async def _closed(http: httpx.AsyncClient, game: Game) -> None:
    refused = await post_score(http, game, "cup", "late", 1)
    assert refused.status_code == 409, refused.text
    assert refused.json()["error"]["code"] == "board_closed"


async def _live(http: httpx.AsyncClient, bystander: Game, ws: Watcher, score: int) -> None:
    """A score on another game's board reaches its watcher."""
    assert (await post_score(http, bystander, "main", f"p{score}", score)).status_code == 200
    await ws.wait_for(lambda m: m["type"] == "standings" and any(e["score"] == score for e in m["entries"]))


async def test_it_opens_a_season_and_closes_it_with_every_other_board_live(stack: Stack) -> None:
    league = await asyncio.to_thread(stack.make_game, "league", timezone_name="Europe/Paris")
    bystander = await asyncio.to_thread(stack.make_game, "bystander")
    starts = (stack.now() + dt.timedelta(minutes=10)).replace(microsecond=0)
    ends = starts + SEASON
    async with api(stack) as http:  # the boards first: a socket knows its game's boards from when it opens
        await put_board(http, league, "cup", windows=["all-time", "custom", "daily"], season=(starts, ends))
        await put_board(http, bystander, "main", windows=["all-time"])
    async with api(stack) as http, watch(stack, "league") as ws, watch(stack, "bystander") as other:
        await ws.subscribe("cup", "all-time")
        await ws.subscribe("cup", "custom")
        await other.subscribe("main", "all-time")

        # Before the season: closed.
        await _closed(http, league)
        await move_to(stack, starts - LEAD)
        await until(stack, starts + dt.timedelta(seconds=1))
        # Open: scores go in and out live.
        for player, score in [("ann", 10), ("bob", 20)]:
            assert (await post_score(http, league, "cup", player, score)).status_code == 200
        await ws.wait_for(lambda m: m["type"] == "standings" and m["period"] == "custom" and m["total"] == 2)

        await move_to(stack, ends - LEAD)
        await until(stack, ends + dt.timedelta(seconds=1))
        # Over: closed again, still readable, and the broadcaster idle and serving everyone else.
        await _closed(http, league)
        await assert_idle(stack, "broadcaster")
        await _live(http, bystander, other, 101)
        final = await page(http, "league", "cup", "all-time")
        assert [(e["player_id"], e["score"]) for e in final["entries"]] == [("bob", 20), ("ann", 10)]
        season = {("all-time", "all-time"), ("custom", "season")}
        await eventually(lambda: all_listed(http, "league", "cup", season), ARCHIVE_TIMEOUT_SECS, "the archive")
        for window, period_id in sorted(season):
            archived = await page(http, "league", "cup", window, period_id)
            assert [(e["player_id"], e["score"]) for e in archived["entries"]] == [("bob", 20), ("ann", 10)]
        # A season's all-time and custom periods never roll over: no reset for them, ever.
        assert ws.of("reset", period="all-time") == ws.of("reset", period="custom") == []
        written = stack.archives("league", "cup")
        assert sorted((p, i, s, t) for p, i, s, t, _ in written if p != "daily") == [
            ("all-time", "all-time", "complete", 2),
            ("custom", "season", "complete", 2),
        ]
        await assert_idle(stack)

        # A broadcaster started after the season's end plans nothing for it either.
        await asyncio.to_thread(stack.restart, "broadcaster")
        await asyncio.sleep(BROADCASTER_START_SECS)
        await _live(http, bystander, other, 102)
        await assert_idle(stack)
        assert stack.archives("league", "cup") == written
