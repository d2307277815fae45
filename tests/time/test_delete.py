"""A board taken out of play (``DELETE``) with every process running, then its period's end
passing: it refuses scores, its final standings are archived once and read from there, no
``reset`` goes out for it, and every process is idle afterwards."""

from __future__ import annotations

import asyncio
import datetime as dt
from zoneinfo import ZoneInfo

import pytest

from tests.time.client import (
    ARCHIVE_TIMEOUT_SECS,
    all_listed,
    api,
    assert_idle,
    bearer,
    eventually,
    move_to,
    page,
    post_score,
    put_board,
    until,
    watch,
)
from tests.time.stack import Stack

pytestmark = [pytest.mark.time, pytest.mark.wall_clock]

ZONE = "America/Sao_Paulo"
LEAD = dt.timedelta(seconds=4)
# After the period's end: its grace, then a close-job round (5 s), with room to spare.
AFTER_END_SECS = 10.0


async def test_it_archives_a_deleted_board_once_and_announces_nothing_for_it(stack: Stack) -> None:
    game = await asyncio.to_thread(stack.make_game, "retired", timezone_name=ZONE)
    today = stack.now().astimezone(ZoneInfo(ZONE)).date()
    midnight = dt.datetime.combine(today + dt.timedelta(days=1), dt.time(), tzinfo=ZoneInfo(ZONE)).astimezone(dt.UTC)
    async with api(stack) as http:  # the boards first: a socket knows its game's boards from when it opens
        await put_board(http, game, "main", windows=["daily", "all-time"])
        await put_board(http, game, "other", windows=["daily"])
    async with api(stack) as http, watch(stack, "retired") as ws:
        assert (await ws.subscribe("main", "daily"))["period_id"] == today.isoformat()
        await ws.subscribe("other", "daily")
        for player, score in [("ann", 10), ("bob", 20)]:
            assert (await post_score(http, game, "main", player, score)).status_code == 200
        await ws.wait_for(lambda m: m["type"] == "standings" and m.get("leaderboard") == "main" and m["total"] == 2)

        deleted = await http.delete("/games/retired/leaderboards/main", headers=bearer(game.manage_key))
        assert deleted.status_code == 200, deleted.text
        assert deleted.json()["active"] is False
        refused = await post_score(http, game, "main", "cat", 30)
        assert refused.status_code == 409
        assert refused.json()["error"]["code"] == "board_closed"

        # Its day is archived at once, as if it had ended, and read from there.
        today_id = {("daily", today.isoformat())}
        await eventually(lambda: all_listed(http, "retired", "main", today_id), ARCHIVE_TIMEOUT_SECS, "the archive")
        final = await page(http, "retired", "main", "daily")
        assert [(e["player_id"], e["score"]) for e in final["entries"]] == [("bob", 20), ("ann", 10)]
        written = stack.archives("retired", "main")
        assert [(p, i, s, t) for p, i, s, t, _ in written] == [("daily", today.isoformat(), "complete", 2)]

        # The day it was deleted ends: no reset for it, no second archive; the other board rolls over.
        await move_to(stack, midnight - LEAD)
        await until(stack, midnight)
        await ws.wait_for(lambda m: m["type"] == "reset" and m["leaderboard"] == "other")
        await asyncio.sleep(AFTER_END_SECS)
        assert ws.of("reset", leaderboard="main") == []
        assert stack.archives("retired", "main") == written
        again = await page(http, "retired", "main", "daily", today.isoformat())
        assert again["entries"] == final["entries"]
    await assert_idle(stack)
