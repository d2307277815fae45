"""A competing board's entry rules over the API (issue 22, its settings): stored, checked, shown
with the competing window's current period, and kept while that period has entrants."""

from __future__ import annotations

import datetime as dt
import json
import logging
from typing import Any

import pytest
from django.test import AsyncClient

from core import config, keys
from core.models import Leaderboard
from core.redis import get_redis
from games import periods
from tests import bad_inputs as catalogue
from tests.conftest import T0, auth

pytestmark = pytest.mark.django_db(transaction=True)

API = "/api/v1/games/rally/leaderboards"
# The pinned clock (T0) is Wednesday 2026-03-04 12:00 UTC, in ISO week 10 (Monday 2 to Monday 9).
WEEK = "2026-W10"
CUP = {
    "mode": "best",
    "order": "desc",
    "windows": ["weekly", "all-time"],
    "competition_window": "weekly",
    "entry": "join",
    "max_entrants": 50,
    "entry_window_secs": 86_400,
    "max_attempts": 3,
}
RULES = {key: CUP[key] for key in ("entry", "max_entrants", "entry_window_secs", "max_attempts")}
SEASON = {"starts_at": "2026-03-02T00:00:00Z", "ends_at": "2026-03-30T00:00:00Z"}
UNSET: dict[str, Any] = {
    "competition_window": "",
    "entry": "open",
    "max_entrants": None,
    "entry_window_secs": None,
    "max_attempts": None,
    "cohort_size": None,
    "cohort_fill": "first_come",
    "cohort_by": "none",
    "tiers": [],
    "start_tier": "",
    "min_scores": 0,
    "rewards": [],
    "claim_window_secs": 30 * 86_400,
    "settle_delay_secs": 0,
}
NO_LEAGUE = {
    "tiers": [],
    "start_tier": "",
    "min_scores": 0,
    "rewards": [],
    "claim_window_secs": 30 * 86_400,
    "settle_delay_secs": 0,
}
NO_COHORTS = {"cohort_size": None, "cohort_fill": "first_come", "cohort_by": "none", **NO_LEAGUE}


async def call(client: AsyncClient, method: str, path: str, key: str, body: Any = None) -> tuple[int, Any]:
    response = await getattr(client, method)(
        f"{API}{path}", json.dumps(body), content_type="application/json", headers=auth(key)
    )
    return response.status_code, response.json()


async def board_json(client: AsyncClient, slug: str) -> Any:
    response = await client.get(f"{API}/{slug}")
    assert response.status_code == 200, response.content
    return response.json()


async def put(client: AsyncClient, key: str, slug: str, settings: dict[str, Any]) -> Any:
    status, body = await call(client, "put", f"/{slug}", key, settings)
    assert status == 200, body
    return body


async def enter(slug: str, window: str, period_id: str, *players: str) -> None:
    """Players entered the period as the entry scripts record them (the set a join or a first score fills)."""
    ref = keys.board_ref("rally", slug)
    await get_redis().zadd(keys.entry_entrants(keys.board(ref, window, period_id)), {p: 1 for p in players})


# --------------------------------------------------------------------------- stored and shown


async def test_it_stores_the_entry_rules_and_shows_them_with_the_competing_windows_period(aclient, rally):
    manage, _ = rally
    created = await put(aclient, manage, "cup", CUP)

    assert {k: created[k] for k in UNSET} == {**UNSET, **{k: CUP[k] for k in UNSET if k in CUP}}
    assert created["competition"] == {
        "window": "weekly",
        **RULES,
        **NO_COHORTS,
        "period": {
            "id": WEEK,
            "starts_at": "2026-03-02T00:00:00.000Z",
            "entry_closes_at": "2026-03-03T00:00:00.000Z",
            "cohorts_at": None,
            "ends_at": "2026-03-09T00:00:00.000Z",
            "settles_at": "2026-03-09T00:00:00.000Z",
        },
    }
    assert await board_json(aclient, "cup") == created
    listed = (await aclient.get("/api/v1/games/rally")).json()["leaderboards"]
    assert listed == [created]


async def test_it_shows_no_competition_on_a_board_that_sets_none(aclient, rally):
    manage, _ = rally
    board = await put(aclient, manage, "points", {"mode": "increment", "order": "desc"})

    assert {k: board[k] for k in UNSET} == UNSET
    assert board["competition"] is None


async def test_it_lets_a_boards_only_window_compete_without_naming_it(aclient, rally):
    manage, _ = rally
    board = await put(
        aclient, manage, "daily", {"mode": "best", "order": "desc", "windows": ["daily"], "max_attempts": 5}
    )

    # Stored as sent; the competition names the window it implies.
    assert (board["competition_window"], board["max_attempts"]) == ("", 5)
    assert board["competition"] == {
        "window": "daily",
        "entry": "open",
        "max_entrants": None,
        "entry_window_secs": None,
        "max_attempts": 5,
        **NO_COHORTS,
        "period": {
            "id": "2026-03-04",
            "starts_at": "2026-03-04T00:00:00.000Z",
            "entry_closes_at": None,
            "cohorts_at": None,
            "ends_at": "2026-03-05T00:00:00.000Z",
            "settles_at": "2026-03-05T00:00:00.000Z",
        },
    }


async def test_it_closes_entry_at_the_periods_end_at_the_latest(aclient, rally):
    manage, _ = rally
    settings = {"mode": "best", "order": "desc", "windows": ["daily"], "entry_window_secs": 2 * 86_400}
    period = (await put(aclient, manage, "daily", settings))["competition"]["period"]

    assert period["entry_closes_at"] == period["ends_at"] == "2026-03-05T00:00:00.000Z"


def test_it_leaves_entry_open_until_a_never_ending_period_closes_it() -> None:
    starts = T0 - dt.timedelta(days=1)
    endless = periods.Period("all-time", "all-time", starts, None)
    assert periods.entry_closes_at(endless, 3600) == starts + dt.timedelta(hours=1)
    assert periods.entry_closes_at(endless, None) is None
    # No start to count from: no close to show.
    assert periods.entry_closes_at(periods.Period("all-time", "all-time", None, None), 3600) is None
    # Past the calendar's end, the period's own end closes it.
    late = periods.Period("custom", "season", dt.datetime(9999, 12, 1, tzinfo=dt.UTC), None)
    assert periods.entry_closes_at(late, 2**31 - 1) is None


async def test_it_lets_all_time_compete_only_in_a_season(aclient, rally):
    manage, _ = rally
    settings = {"mode": "best", "order": "desc", "windows": ["all-time"], "entry": "join", "entry_window_secs": 3600}
    status, body = await call(aclient, "put", "/season", manage, settings)
    assert (status, body["error"]["code"], body["error"]["field"]) == (422, "invalid", "competition_window")
    assert "only in a season" in body["error"]["message"]
    assert (await aclient.get(f"{API}/season")).status_code == 404

    competition = (await put(aclient, manage, "season", {**settings, **SEASON}))["competition"]
    assert (competition["window"], competition["entry"]) == ("all-time", "join")
    assert competition["period"] == {
        "id": "all-time",
        "starts_at": "2026-03-02T00:00:00.000Z",
        "entry_closes_at": "2026-03-02T01:00:00.000Z",
        "cohorts_at": None,
        "ends_at": "2026-03-30T00:00:00.000Z",
        "settles_at": "2026-03-30T00:00:00.000Z",
    }


async def test_it_changes_and_clears_the_rules_with_patch(aclient, rally):
    manage, _ = rally
    await put(aclient, manage, "cup", CUP)

    status, body = await call(aclient, "patch", "/cup", manage, {"max_entrants": None, "entry": "open"})
    assert status == 200, body
    assert (body["max_entrants"], body["entry"], body["max_attempts"]) == (None, "open", 3)
    assert (body["competition"]["max_entrants"], body["competition"]["entry"]) == (None, "open")

    status, body = await call(aclient, "patch", "/cup", manage, UNSET)
    assert status == 200, body
    assert body["competition"] is None
    assert {k: body[k] for k in UNSET} == UNSET


async def test_it_puts_back_the_defaults_of_the_rules_a_put_leaves_out(aclient, rally):
    manage, _ = rally
    await put(aclient, manage, "cup", CUP)

    board = await put(aclient, manage, "cup", {"mode": "best", "order": "desc", "windows": ["weekly", "all-time"]})
    assert {k: board[k] for k in UNSET} == UNSET
    assert board["competition"] is None


# --------------------------------------------------------------------------- refused


@pytest.mark.parametrize("method", ["put", "patch"])
@pytest.mark.parametrize("bad", catalogue.COMPETITIONS, ids=lambda bad: bad.name)
async def test_it_refuses_a_bad_rule_naming_its_field_and_changes_nothing(aclient, rally, method, bad):
    manage, _ = rally
    before = await put(aclient, manage, "cup", CUP)
    body = {**CUP, **bad.settings} if method == "put" else bad.settings

    status, answer = await call(aclient, method, "/cup", manage, body)

    assert (status, answer["error"]["code"], answer["error"]["field"]) == (422, "invalid", bad.field), answer
    assert await board_json(aclient, "cup") == before


@pytest.mark.parametrize("field", ["competition_window", "entry"])
async def test_it_refuses_null_for_a_rule_that_has_a_value_always(aclient, rally, field):
    manage, _ = rally
    # One window: a null window would imply it, and only the schema stands between it and the column.
    before = await put(aclient, manage, "cup", {"mode": "best", "order": "desc", "windows": ["daily"], "entry": "join"})

    status, answer = await call(aclient, "patch", "/cup", manage, {field: None})

    assert (status, answer["error"]["code"], answer["error"]["field"]) == (422, "invalid", field), answer
    assert await board_json(aclient, "cup") == before


# --------------------------------------------------------------------------- a running competition


async def test_it_refuses_to_change_the_rules_while_the_period_has_entrants(aclient, rally, clock):
    manage, _ = rally
    before = await put(aclient, manage, "cup", CUP)
    await enter("cup", "weekly", WEEK, "ada", "bob")

    status, body = await call(aclient, "patch", "/cup", manage, {"max_entrants": 10, "max_attempts": 5})
    assert (status, body["error"]["code"], body["error"]["field"]) == (409, "competition_running", "max_attempts")
    assert WEEK in body["error"]["message"] and "(2)" in body["error"]["message"]
    status, body = await call(aclient, "put", "/cup", manage, {**CUP, "entry": "open"})
    assert (status, body["error"]["code"], body["error"]["field"]) == (409, "competition_running", "entry")
    status, body = await call(aclient, "patch", "/cup", manage, UNSET)
    assert (status, body["error"]["code"]) == (409, "competition_running")
    assert await board_json(aclient, "cup") == before

    # Other settings change as ever, and so do the rules again once that period has ended.
    status, body = await call(aclient, "patch", "/cup", manage, {"name": "The cup", "competition_window": "weekly"})
    assert (status, body["name"]) == (200, "The cup")
    clock.set(dt.datetime(2026, 3, 9, tzinfo=dt.UTC))
    status, body = await call(aclient, "patch", "/cup", manage, {"max_entrants": 10})
    assert (status, body["competition"]["max_entrants"], body["competition"]["period"]["id"]) == (200, 10, "2026-W11")


async def test_it_counts_entrants_of_the_competing_windows_current_period_only(aclient, rally):
    manage, _ = rally
    await put(aclient, manage, "cup", CUP)
    # Entrants of last week, and of another window: not this competition's now.
    await enter("cup", "weekly", "2026-W09", "ada")
    await enter("cup", "all-time", "all-time", "ada")

    status, body = await call(aclient, "patch", "/cup", manage, {"max_entrants": 10})
    assert (status, body["max_entrants"]) == (200, 10)


async def test_it_refuses_new_windows_that_move_an_implied_competition_with_entrants(aclient, rally):
    manage, _ = rally
    daily = {"mode": "best", "order": "desc", "windows": ["daily"], "entry": "join"}
    await put(aclient, manage, "daily", daily)
    await enter("daily", "daily", "2026-03-04", "ada")

    # Naming the window its only one implies changes no rule.
    status, body = await call(aclient, "patch", "/daily", manage, {"competition_window": "daily"})
    assert (status, body["competition"]["window"]) == (200, "daily")
    status, body = await call(aclient, "patch", "/daily", manage, {"windows": ["weekly"], "competition_window": ""})
    assert (status, body["error"]["code"], body["error"]["field"]) == (409, "competition_running", "competition_window")
    assert (await board_json(aclient, "daily"))["competition"]["window"] == "daily"


# --------------------------------------------------------------------------- saved around the model


async def test_it_loads_a_board_whose_saved_rules_no_longer_hold_as_not_competing(aclient, rally, caplog):
    manage, _ = rally
    await put(aclient, manage, "cup", CUP)
    # A row written around the model's checks: two windows, and none named to compete.
    await Leaderboard.objects.filter(slug="cup").aupdate(competition_window="")
    config.invalidate()

    with caplog.at_level(logging.ERROR, logger="core.config"):
        board = await board_json(aclient, "cup")

    assert (board["entry"], board["competition"]) == ("join", None)
    assert "rally.cup: competition settings refused (competition_window" in caplog.text
