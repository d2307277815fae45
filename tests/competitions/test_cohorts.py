"""Cohorts over the API (issue 22): first-come and balanced placement, rating bands, the cohort
reads (list, a cohort's page, a standing's cohort fields, around and friends within a cohort),
concurrency, an erasure, and what a board without cohorts answers."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from competitions.services import cohorts as cohort_services
from core import apikeys, keys
from core import services as core_services
from core.competition_rules import Competition
from core.models import ApiKey, Game
from core.redis import get_redis
from games import periods
from moderation import services as moderation
from tests.conftest import auth, clock_at

pytestmark = pytest.mark.django_db(transaction=True)

API = "/api/v1/games/cup/leaderboards/weekly"
# T0 is Wednesday 2026-03-04 12:00 UTC: the weekly period 2026-W10 runs from Monday 2 March.
WEEK = "2026-W10"
MONDAY = dt.datetime(2026, 3, 2, 0, 0, tzinfo=dt.UTC)
LEAGUE: dict[str, Any] = {"name": "Weekly", "mode": "best", "order": "desc", "windows": ["weekly", "all-time"]}


@pytest.fixture
async def cup() -> tuple[str, str]:
    game = await sync_to_async(core_services.game_create)(slug="cup", name="Cup", max_submissions_per_minute=0)
    _, manage = await sync_to_async(apikeys.api_key_create)(game=game, name="ops", scope=ApiKey.Scope.MANAGE)
    _, submit = await sync_to_async(apikeys.api_key_create)(game=game, name="server")
    return manage, submit


async def call(client: AsyncClient, method: str, path: str, key: str | None = None, body: Any = None) -> Any:
    response = await getattr(client, method)(
        f"{API}{path}",
        json.dumps(body) if body is not None else None,
        content_type="application/json",
        headers=auth(key) if key else {},
    )
    return response.status_code, response.json()


async def board(client: AsyncClient, manage: str, **settings: Any) -> dict[str, Any]:
    status, body = await call(client, "put", "", manage, {**LEAGUE, "competition_window": "weekly", **settings})
    assert status == 200, body
    return body


async def join(client: AsyncClient, key: str, player: str, **extra: Any) -> Any:
    status, body = await call(client, "post", "/entries", key, {"player_id": player, **extra})
    assert status in (200, 201), body
    return body


async def score(client: AsyncClient, key: str, player: str, value: int) -> None:
    status, body = await call(client, "post", "/scores", key, {"player_id": player, "score": value})
    assert status == 200, body


async def cohort_list(client: AsyncClient) -> tuple[list[tuple[str, int]], int]:
    status, body = await call(client, "get", "/weekly/cohorts")
    assert status == 200, body
    return [(c["cohort"], c["size"]) for c in body["cohorts"]], body["held"]


async def cohort_page(client: AsyncClient, cohort: str, path: str = "/weekly") -> list[tuple[int, str, int]]:
    status, body = await call(client, "get", f"{path}/cohorts/{cohort}")
    assert status == 200, body
    return [(e["rank"], e["player_id"], e["score"]) for e in body["entries"]]


async def split_now() -> int:
    """The beat's split task, as the worker runs it (its async part: this test owns the loop)."""
    return await cohort_services._split_due()


# --------------------------------------------------------------------------- first come


async def test_it_fills_cohorts_in_join_order_and_ranks_within_each(aclient, cup):
    manage, submit = cup
    await board(aclient, manage, entry="join", cohort_size=3)
    joined = [await join(aclient, submit, p) for p in ["a1", "a2", "a3", "b1", "b2", "b3", "c1"]]
    assert [j["cohort"] for j in joined] == ["1", "1", "1", "2", "2", "2", "3"]
    assert (await join(aclient, submit, "a2"))["cohort"] == "1"  # the same entry

    for player, value in [("a1", 10), ("a2", 30), ("a3", 30), ("b1", 5), ("b3", 50), ("c1", 1)]:
        await score(aclient, submit, player, value)
    assert await cohort_list(aclient) == ([("1", 3), ("2", 3), ("3", 1)], 0)
    # The board's order and tie rule (shared: equal scores share a rank), within the cohort.
    assert await cohort_page(aclient, "1") == [(1, "a2", 30), (1, "a3", 30), (3, "a1", 10)]
    assert await cohort_page(aclient, "2") == [(1, "b3", 50), (2, "b1", 5)]

    status, standing = await call(aclient, "get", "/weekly/players/b1")
    assert status == 200
    assert (standing["rank"], standing["total"]) == (5, 6)  # the whole board
    assert {k: standing[k] for k in ("cohort", "cohort_rank", "cohort_size", "tier")} == {
        "cohort": "2",
        "cohort_rank": 2,
        "cohort_size": 3,
        "tier": None,
    }
    # Another window of the board has no cohorts: its standing has no cohort fields.
    status, all_time = await call(aclient, "get", "/all-time/players/b1")
    assert status == 200 and "cohort" not in all_time


async def test_it_places_an_open_boards_players_at_their_first_score(aclient, cup):
    manage, submit = cup
    await board(aclient, manage, entry="open", cohort_size=2)
    for i, player in enumerate(["p1", "p2", "p3"]):
        await score(aclient, submit, player, 10 * i)
    await score(aclient, submit, "p1", 99)  # a second score does not move them
    assert await cohort_list(aclient) == ([("1", 2), ("2", 1)], 0)
    assert await cohort_page(aclient, "1") == [(1, "p1", 99), (2, "p2", 10)]


async def test_it_reads_around_a_player_and_friends_within_their_cohort(aclient, cup):
    manage, submit = cup
    await board(aclient, manage, entry="open", cohort_size=5, ties="earliest")
    for i in range(10):
        await score(aclient, submit, f"p{i}", 100 - i)  # p0..p4 in cohort 1, p5..p9 in 2

    status, around = await call(aclient, "get", "/weekly/players/p8/around?radius=1&scope=cohort")
    assert status == 200
    assert [(e["rank"], e["player_id"]) for e in around["entries"]] == [(3, "p7"), (4, "p8"), (5, "p9")]
    assert (around["cohort"], around["cohort_size"], around["total"]) == ("2", 5, 5)
    # Without scope: the whole board.
    status, whole = await call(aclient, "get", "/weekly/players/p8/around?radius=1")
    assert [e["rank"] for e in whole["entries"]] == [8, 9, 10] and "cohort" not in whole

    status, friends = await call(aclient, "get", "/weekly/players?ids=p9,p1,p5,nobody&scope=cohort")
    assert status == 200
    assert [(e["rank"], e["player_id"]) for e in friends["entries"]] == [(1, "p5"), (2, "p1"), (5, "p9")]
    assert friends["cohorts"] == {"p1": "1", "p5": "2", "p9": "2"} and friends["missing"] == ["nobody"]


# --------------------------------------------------------------------------- balanced


async def test_it_holds_entrants_until_entry_closes_then_splits_them_evenly(aclient, cup):
    manage, submit = cup
    with clock_at(MONDAY + dt.timedelta(minutes=5)):
        created = await board(
            aclient, manage, entry="join", cohort_size=50, cohort_fill="balanced", entry_window_secs=3600
        )
        assert created["competition"]["period"]["cohorts_at"] == "2026-03-02T01:00:00.000Z"
        for i in range(101):
            assert (await join(aclient, submit, f"p{i:03d}"))["cohort"] is None  # held
        await score(aclient, submit, "p100", 7)  # counts from the start
        assert await split_now() == 0  # not due yet
        assert await cohort_list(aclient) == ([], 101)
        _, standing = await call(aclient, "get", "/weekly/players/p100")
        assert standing["cohort"] is None and standing["rank"] == 1

    with clock_at(MONDAY + dt.timedelta(hours=1)):
        assert await split_now() == 1
        assert await split_now() == 0  # once
        # 101 with cohorts of 50: 34, 34, 33 (first come would leave a cohort of one).
        assert await cohort_list(aclient) == ([("1", 34), ("2", 34), ("3", 33)], 0)
        assert await cohort_page(aclient, "3") == [(1, "p100", 7)]
        assert (await join(aclient, submit, "p000"))["cohort"] == "1"


async def test_it_sends_a_later_joiner_to_the_smallest_cohort_with_room(aclient, cup):
    manage, submit = cup
    with clock_at(MONDAY + dt.timedelta(minutes=5)):
        # No entry window: the first hour holds the entrants, and joins stay open all week.
        created = await board(aclient, manage, entry="join", cohort_size=3, cohort_fill="balanced")
        assert created["competition"]["period"]["cohorts_at"] == "2026-03-02T01:00:00.000Z"
        for player in ["a", "b", "c", "d"]:
            await join(aclient, submit, player)
    with clock_at(MONDAY + dt.timedelta(hours=2)):
        assert await split_now() == 1
        assert await cohort_list(aclient) == ([("1", 2), ("2", 2)], 0)
        assert [(await join(aclient, submit, p))["cohort"] for p in ["e", "f", "g", "h"]] == ["1", "2", "3", "3"]
        assert await cohort_list(aclient) == ([("1", 3), ("2", 3), ("3", 2)], 0)


async def test_it_opens_cohorts_at_once_for_a_first_entrant_after_the_hold(aclient, cup):
    manage, submit = cup
    await board(aclient, manage, entry="join", cohort_size=2, cohort_fill="balanced")  # Wednesday: long past
    assert (await join(aclient, submit, "late"))["cohort"] == "1"
    assert await split_now() == 0


async def test_it_draws_contiguous_bands_of_the_rating_given_at_join(aclient, cup):
    manage, submit = cup
    rules = {"entry": "join", "cohort_size": 3, "cohort_fill": "balanced", "cohort_by": "rating"}
    with clock_at(MONDAY + dt.timedelta(minutes=5)):
        await board(aclient, manage, **rules, entry_window_secs=600)
        ratings = {"a": 1500, "b": 900, "c": 2100, "d": 1200, "e": 1800, "f": 300, "g": 1000}
        for player, rating in ratings.items():
            await join(aclient, submit, player, rating=rating)
        status, body = await call(aclient, "post", "/entries", submit, {"player_id": "h"})
        assert (status, body["error"]["field"]) == (422, "rating")
    with clock_at(MONDAY + dt.timedelta(minutes=11)):
        await split_now()
        cohorts = {p: (await join(aclient, submit, p))["cohort"] for p in ratings}
    # 7 in cohorts of 3 at most: 3, 2, 2, highest rated first.
    assert cohorts == {"c": "1", "e": "1", "a": "1", "d": "2", "g": "2", "b": "3", "f": "3"}


# --------------------------------------------------------------------------- at scale and over time


async def test_it_never_overfills_a_cohort_under_concurrent_joins(aclient, cup):
    manage, submit = cup
    await board(aclient, manage, entry="join", cohort_size=7, max_entrants=150)

    async def one(i: int) -> tuple[int, Any]:
        return await call(AsyncClient(), "post", "/entries", submit, {"player_id": f"p{i}"})

    answers = await asyncio.gather(*(one(i) for i in range(200)))
    assert sorted(status for status, _ in answers).count(201) == 150
    listed, _ = await cohort_list(aclient)
    # 150 in cohorts of 7, first come: 21 full ones and one of 3.
    assert [size for _, size in listed] == [7] * 21 + [3]
    placed = await get_redis().zcard(keys.entry_cohorts(keys.board("cup.weekly", "weekly", WEEK)))
    assert placed == 150


async def test_it_starts_each_period_with_no_cohorts(aclient, cup):
    manage, submit = cup
    await board(aclient, manage, entry="open", cohort_size=2)
    await score(aclient, submit, "ada", 1)
    with clock_at(MONDAY + dt.timedelta(days=7, hours=1)):
        assert await cohort_list(aclient) == ([], 0)
        await score(aclient, submit, "bob", 1)
        assert await cohort_list(aclient) == ([("1", 1)], 0)
        # The past week's cohorts stay readable while Redis keeps its board.
        assert await cohort_page(aclient, "1", path=f"/weekly/{WEEK}") == [(1, "ada", 1)]


async def test_it_takes_an_erased_player_out_of_their_cohort(aclient, cup):
    manage, submit = cup
    await board(aclient, manage, entry="open", cohort_size=3)
    for player in ["ada", "bob", "cy"]:
        await score(aclient, submit, player, 5)
    game = await Game.objects.aget(slug="cup")
    await sync_to_async(moderation.player_erase)(game=game, player_id="bob", reason="asked")
    assert await cohort_list(aclient) == ([("1", 2)], 0)
    assert await cohort_page(aclient, "1") == [(1, "ada", 5), (1, "cy", 5)]


# --------------------------------------------------------------------------- what is refused


async def test_it_answers_cohort_reads_of_boards_and_windows_without_cohorts(aclient, cup):
    manage, submit = cup
    await board(aclient, manage, entry="open", cohort_size=2)
    await score(aclient, submit, "ada", 1)

    for path in [
        "/all-time/cohorts",
        "/all-time/players/ada/around?scope=cohort",
        "/all-time/players?ids=ada&scope=cohort",
    ]:
        status, body = await call(aclient, "get", path)
        assert (status, body["error"]["code"]) == (409, "no_cohorts"), path
    for cohort in ["2", "0", "x", "1-1", "99999999999"]:
        status, body = await call(aclient, "get", f"/weekly/cohorts/{cohort}")
        assert (status, body["error"]["code"]) == (404, "cohort_not_found"), cohort
    status, body = await call(aclient, "get", "/weekly/players/ada/around?scope=everyone")
    assert (status, body["error"]["code"]) == (422, "invalid")
    status, body = await call(aclient, "get", "/weekly/players/zed/around?scope=cohort")
    assert (status, body["error"]["code"]) == (404, "not_found")
    status, body = await call(aclient, "post", "/entries", submit, {"player_id": "ada", "rating": 5})
    assert (status, body["error"]["field"]) == (422, "rating")


async def test_it_keeps_a_player_whose_id_is_cohorts_readable(aclient, cup):
    manage, submit = cup
    await board(aclient, manage, entry="open", cohort_size=2)
    await score(aclient, submit, "cohorts", 3)
    status, body = await call(aclient, "get", "/weekly/players/cohorts")
    assert (status, body["player_id"], body["cohort"]) == (200, "cohorts", "1")
    status, body = await call(aclient, "get", "/weekly/players/cohorts/around?scope=cohort")
    assert (status, body["cohort"]) == (200, "1")


def test_it_holds_a_short_periods_entrants_a_quarter_of_it() -> None:
    period = periods.Period("custom", "x", MONDAY, MONDAY + dt.timedelta(minutes=20))
    balanced = Competition(window="custom", cohort_size=5, cohort_fill="balanced")
    assert periods.cohorts_formed_at(period, balanced) == MONDAY + dt.timedelta(minutes=5)
