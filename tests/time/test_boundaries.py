"""Crossing a period boundary with every process running: a day, an ISO week and a month ending
together at a local midnight of a non-UTC zone, and a custom window's cron firing.

What a user sees: one ``reset`` per window on a live socket, the new period taking scores, the
finished periods archived exactly once and readable by id, and every process idle afterwards.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
from zoneinfo import ZoneInfo

import pytest

from core.clock import iso
from tests.time.client import (
    ARCHIVE_TIMEOUT_SECS,
    Message,
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
from tests.time.conftest import ZONE, month_start_on_a_monday
from tests.time.stack import Stack

pytestmark = [pytest.mark.time, pytest.mark.wall_clock]

# The clock is put this long before a boundary: enough for every process to read it first.
LEAD = dt.timedelta(seconds=4)
# After the resets, how long the socket must stay without another one.
NO_REPEAT_SECS = 2.0
# A close-job run falls due every 5 s: after this long another run has passed.
CLOSE_JOB_ROUND_SECS = 6.0


def ids_at(instant: dt.datetime) -> dict[str, str]:
    """The daily, weekly and monthly period ids at ``instant`` in ZONE."""
    day = instant.astimezone(ZoneInfo(ZONE)).date()
    year, week, _ = day.isocalendar()
    return {"daily": day.isoformat(), "weekly": f"{year}-W{week:02d}", "monthly": f"{day.year}-{day.month:02d}"}


def is_reset(message: Message, *, window: str) -> bool:
    return bool(message["type"] == "reset" and message["period"] == window)


def local_midnight(day: dt.date) -> dt.datetime:
    return dt.datetime.combine(day, dt.time(), tzinfo=ZoneInfo(ZONE)).astimezone(dt.UTC)


async def test_it_rolls_a_day_a_week_and_a_month_over_at_a_local_midnight(stack: Stack) -> None:
    game = await asyncio.to_thread(stack.make_game, "calendar", timezone_name=ZONE)
    boundary = month_start_on_a_monday(stack.now())
    old, new = ids_at(boundary - dt.timedelta(seconds=1)), ids_at(boundary)
    first = boundary.astimezone(ZoneInfo(ZONE)).date()
    new_ends = {
        "daily": local_midnight(first + dt.timedelta(days=1)),
        "weekly": local_midnight(first + dt.timedelta(days=7)),
        "monthly": local_midnight((first + dt.timedelta(days=32)).replace(day=1)),
    }
    async with api(stack) as http:  # the boards first: a socket knows its game's boards from when it opens
        await put_board(http, game, "main", windows=["daily", "weekly", "monthly", "all-time"])
    async with api(stack) as http, watch(stack, "calendar") as ws:
        for window in ("daily", "weekly", "monthly"):
            assert (await ws.subscribe("main", window))["period_id"] == old[window]
        for player, score in [("ann", 10), ("bob", 20)]:
            assert (await post_score(http, game, "main", player, score)).status_code == 200
        await ws.wait_for(lambda m: m["type"] == "standings" and m["period"] == "daily" and m["total"] == 2)

        await move_to(stack, boundary - LEAD)
        await until(stack, boundary)

        for window in ("daily", "weekly", "monthly"):
            reset = await ws.wait_for(functools.partial(is_reset, window=window))
            assert reset == {
                "type": "reset",
                "leaderboard": "main",
                "period": window,
                "period_id": new[window],
                "resets_at": iso(new_ends[window]),
            }
        # The new period takes scores, and they go out live under its id.
        assert (await post_score(http, game, "main", "cat", 5)).status_code == 200
        fresh = await ws.wait_for(lambda m: m["type"] == "standings" and m["period_id"] == new["daily"])
        assert [e["player_id"] for e in fresh["entries"]] == ["cat"]
        await asyncio.sleep(NO_REPEAT_SECS)
        assert len(ws.of("reset")) == 3, ws.of("reset")
        assert ws.of("reset", period="all-time") == []

        # The finished periods are archived, and read by id from there.
        done = {(w, old[w]) for w in ("daily", "weekly", "monthly")}
        await eventually(lambda: all_listed(http, "calendar", "main", done), ARCHIVE_TIMEOUT_SECS, "the archive")
        for window in ("daily", "weekly", "monthly"):
            past = await page(http, "calendar", "main", window, old[window])
            assert [(e["player_id"], e["score"]) for e in past["entries"]] == [("bob", 20), ("ann", 10)]
        current = await page(http, "calendar", "main", "daily")
        assert (current["period_id"], current["total"]) == (new["daily"], 1)

    written = stack.archives("calendar", "main")
    assert [(p, i, s, t) for p, i, s, t, _ in written] == [
        ("daily", old["daily"], "complete", 2),
        ("monthly", old["monthly"], "complete", 2),
        ("weekly", old["weekly"], "complete", 2),
    ]
    await assert_idle(stack)
    await asyncio.sleep(CLOSE_JOB_ROUND_SECS)
    assert stack.archives("calendar", "main") == written  # exactly once: no run wrote them again


async def test_it_resets_a_custom_window_when_its_cron_fires(stack: Stack) -> None:
    game = await asyncio.to_thread(stack.make_game, "hourly", timezone_name=ZONE)
    tz = ZoneInfo(ZONE)
    # Every hour on the hour in Kolkata: at half past in UTC; ids are the UTC start.
    now = stack.now().astimezone(tz)
    firing = (now.replace(minute=0, second=0, microsecond=0) + dt.timedelta(hours=1)).astimezone(dt.UTC)
    old_id = (firing - dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%MZ")
    new_id = firing.strftime("%Y-%m-%dT%H:%MZ")
    async with api(stack) as http:
        await put_board(http, game, "laps", windows=["custom", "all-time"], cron="0 * * * *")
    async with api(stack) as http, watch(stack, "hourly") as ws:
        assert (await ws.subscribe("laps", "custom"))["period_id"] == old_id
        assert (await post_score(http, game, "laps", "ann", 7)).status_code == 200
        await ws.wait_for(lambda m: m["type"] == "standings" and m["period"] == "custom" and m["total"] == 1)

        await move_to(stack, firing - LEAD)
        await until(stack, firing)

        reset = await ws.wait_for(lambda m: m["type"] == "reset")
        assert reset == {
            "type": "reset",
            "leaderboard": "laps",
            "period": "custom",
            "period_id": new_id,
            "resets_at": iso(firing + dt.timedelta(hours=1)),
        }
        assert (await post_score(http, game, "laps", "bob", 3)).status_code == 200
        fresh = await ws.wait_for(lambda m: m["type"] == "standings" and m["period_id"] == new_id)
        assert [e["player_id"] for e in fresh["entries"]] == ["bob"]
        await asyncio.sleep(NO_REPEAT_SECS)
        assert len(ws.of("reset")) == 1, ws.of("reset")

        wanted = {("custom", old_id)}
        await eventually(lambda: all_listed(http, "hourly", "laps", wanted), ARCHIVE_TIMEOUT_SECS, "the archive")
        past = await page(http, "hourly", "laps", "custom", old_id)
        assert [(e["player_id"], e["score"]) for e in past["entries"]] == [("ann", 7)]

    written = stack.archives("hourly", "laps")
    assert [(p, i, s, t) for p, i, s, t, _ in written] == [("custom", old_id, "complete", 1)]
    await assert_idle(stack)
    await asyncio.sleep(CLOSE_JOB_ROUND_SECS)
    assert stack.archives("hourly", "laps") == written
