"""A weekly league with three tiers run for three weeks with every process running (issue 22):
balanced cohorts of 30 formed by the beat an hour into each week, within each player's tier; a
player watching their own cohort live; each week settled once by its close job after the review
buffer, with its tier moves (top 5 up, bottom 5 down) and rewards for ranks 1-3; a reward
claimed once; and every process idle again afterwards.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

import httpx
import pytest

from tests.time.client import (
    ARCHIVE_TIMEOUT_SECS,
    Watcher,
    assert_idle,
    bearer,
    eventually,
    move_to,
    post_score,
    put_board,
    until,
    watch,
)
from tests.time.stack import Game, Stack

pytestmark = [pytest.mark.time, pytest.mark.wall_clock]

LEAD = dt.timedelta(seconds=4)
PLAYERS = [f"p{i:02d}" for i in range(12)]
# Longer than the close job's grace (ARCHIVE_GRACE_SECS, 120 s): the job falls due, and waits.
SETTLE_DELAY = dt.timedelta(minutes=10)
GRACE = dt.timedelta(seconds=120)
HOLD = dt.timedelta(hours=1)  # balanced cohorts without an entry window are split an hour in
# The beat's split runs every 5 s: a loaded machine may take a few more.
SPLIT_TIMEOUT_SECS = 30.0
LEAGUE: dict[str, Any] = {
    "entry": "join",
    "cohort_size": 30,
    "cohort_fill": "balanced",
    "cohort_by": "tier",
    "tiers": [
        {"slug": "bronze", "name": "Bronze", "promote": "5"},
        {"slug": "silver", "name": "Silver", "promote": "5", "demote": "5"},
        {"slug": "gold", "name": "Gold", "demote": "5"},
    ],
    "start_tier": "silver",
    "rewards": [{"from_rank": 1, "to_rank": 3, "reward": {"coins": 100}}],
    "settle_delay_secs": int(SETTLE_DELAY.total_seconds()),
}


def next_monday(after: dt.datetime) -> dt.datetime:
    day = after.date() + dt.timedelta(days=7 - after.weekday())
    return dt.datetime.combine(day, dt.time(), tzinfo=dt.UTC)


async def _json(response: httpx.Response) -> Any:
    assert response.status_code in (200, 201), response.text
    return response.json()


async def _cohorts(http: httpx.AsyncClient) -> dict[str, int] | None:
    listed = await _json(await http.get("/games/weekly/leaderboards/league/weekly/cohorts"))
    return {c["cohort"]: c["size"] for c in listed["cohorts"]} if listed["held"] == 0 and listed["cohorts"] else None


async def _settlement(http: httpx.AsyncClient, period_id: str) -> Any:
    response = await http.get(f"/games/weekly/leaderboards/league/weekly/{period_id}/settlement?limit=100")
    return response.json() if response.status_code == 200 else None


async def _week(stack: Stack, http: httpx.AsyncClient, game: Game, ws: Watcher, monday: dt.datetime) -> str:
    """One week: joins (held), the split, scores watched live, then the settlement; its period id."""
    if stack.now() < monday - LEAD:  # after a settlement the clock is in this week already
        await move_to(stack, monday - LEAD)
    await until(stack, monday + dt.timedelta(seconds=1))
    for player in PLAYERS:
        joined = await _json(
            await http.post(
                "/games/weekly/leaderboards/league/entries", json={"player_id": player}, headers=bearer(game.submit_key)
            )
        )
        assert joined["cohort"] is None  # held until the split
    period_id = joined["period_id"]
    await move_to(stack, monday + HOLD - LEAD)
    await until(stack, monday + HOLD + dt.timedelta(seconds=1))
    cohorts = await eventually(lambda: _cohorts(http), SPLIT_TIMEOUT_SECS, "the balanced split")
    assert sum(cohorts.values()) == len(PLAYERS)
    await ws.send({"action": "follow", "player_ids": ["p00"]})
    for i, player in enumerate(PLAYERS):
        assert (await post_score(http, game, "league", player, 100 - i)).status_code == 200
    mine = await ws.wait_for(
        lambda m: m["type"] == "standings" and m.get("cohort") is not None and m["total"] > 0, timeout=15
    )
    assert mine["cohort"] in cohorts and mine["entries"][0]["rank"] == 1

    ends = monday + dt.timedelta(days=7)
    await move_to(stack, ends + GRACE)
    await asyncio.sleep(LEAD.total_seconds())  # the close job falls due, and is deferred
    assert await _settlement(http, period_id) is None  # the buffer still runs
    await move_to(stack, ends + SETTLE_DELAY - LEAD)
    await until(stack, ends + SETTLE_DELAY + dt.timedelta(seconds=1))
    await eventually(lambda: _settlement(http, period_id), ARCHIVE_TIMEOUT_SECS, "the settlement")
    return str(period_id)


async def test_it_runs_a_weekly_league_for_three_weeks_settling_each_once(stack: Stack) -> None:
    game = await asyncio.to_thread(stack.make_game, "weekly")
    async with httpx.AsyncClient(base_url=f"{stack.web_url}/api/v1", timeout=10) as http:
        await put_board(http, game, "league", windows=["weekly"], **LEAGUE)
        monday = next_monday(stack.now())
        settled: list[Any] = []
        async with watch(stack, "weekly") as ws:
            await ws.subscribe("league", "weekly")
            await ws.send({"action": "subscribe", "leaderboard": "league", "period": "weekly", "cohort": "mine"})
            for week in range(3):
                period_id = await _week(stack, http, game, ws, monday + dt.timedelta(days=7 * week))
                settled.append(await _settlement(http, period_id))

        # Week 1: all twelve in silver-1; the top 5 up, the bottom 5 down, ranks 1-3 rewarded.
        first = settled[0]
        assert (first["cohorts"], first["promoted"], first["demoted"], first["granted"]) == (1, 5, 5, 3)
        # Week 2: cohorts within the tiers week 1 gave (gold 5, silver 2, bronze 5).
        assert sorted({e["cohort"] for e in settled[1]["entries"]}) == ["bronze-1", "gold-1", "silver-1"]
        tiers = await _json(await http.get("/games/weekly/leaderboards/league/players/p00/league"))
        assert tiers["tier"]["slug"] == "gold" and tiers["history_total"] == 3

        # Each week settled once, with as many grants as it rewarded (counted in the tables: the
        # outbox prunes delivered events after a day, and the clock jumped weeks).
        assert stack.rows("SELECT COUNT(*) FROM competitions_settlement") == [(3,)]
        assert stack.rows("SELECT COUNT(*) FROM competitions_grant") == [(sum(s["granted"] for s in settled),)]
        assert stack.rows("SELECT COUNT(*) FROM competitions_settledentry") == [(3 * len(PLAYERS),)]
        moves = sum(s["promoted"] + s["demoted"] for s in settled)
        assert stack.rows("SELECT COUNT(*) FROM competitions_settledentry WHERE move <> 0") == [(moves,)]

        # A reward claimed twice is claimed once.
        rewards = await _json(
            await http.get("/games/weekly/players/p00/rewards?status=pending", headers=bearer(game.submit_key))
        )
        grant = rewards["rewards"][0]["grant_id"]
        claims = [
            await _json(await http.post(f"/games/weekly/rewards/{grant}/claim", headers=bearer(game.submit_key)))
            for _ in range(2)
        ]
        assert claims[0] == claims[1] and claims[0]["status"] == "claimed"
    await assert_idle(stack)
