"""A competing board's entries in the ledger (issue 22): joins and grants are stored with the
scores, and a rebuild after Redis lost everything gives back who entered, how many attempts
each used and was granted, so the rules hold as before the loss. An erasure leaves no trace of
the player in the period's entry."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from archive import ledger
from archive.models import ScoreEvent
from core import apikeys, keys
from core import services as core_services
from core.models import ApiKey, Game
from core.redis import get_redis, run_sync
from moderation import services as moderation_services
from tests.conftest import auth

pytestmark = pytest.mark.django_db(transaction=True)

API = "/api/v1/games/cup/leaderboards/weekly"
BOARD = keys.board("cup.weekly", "weekly", "2026-W10")  # the pinned clock's week


@pytest.fixture
def cup() -> tuple[Game, str, str]:
    game = core_services.game_create(slug="cup", name="Cup", max_submissions_per_minute=0)
    _, manage = apikeys.api_key_create(game=game, name="ops", scope=ApiKey.Scope.MANAGE)
    _, submit = apikeys.api_key_create(game=game, name="server")
    settings = {"name": "W", "mode": "best", "order": "desc", "windows": ["weekly"], "entry": "join", "max_attempts": 1}
    assert put(manage, "", settings)[0] == 200
    return game, manage, submit


def put(key: str, path: str, body: dict[str, Any]) -> tuple[int, Any]:
    response = Client().put(f"{API}{path}", body, content_type="application/json", headers=auth(key))
    return response.status_code, response.json()


def post(key: str, path: str, body: dict[str, Any]) -> tuple[int, str]:
    response = Client().post(f"{API}{path}", body, content_type="application/json", headers=auth(key))
    answer = response.json()
    return response.status_code, answer["error"]["code"] if "error" in answer else ""


def entry_state() -> tuple[list[tuple[str, float]], dict[str, str], dict[str, str]]:
    async def read() -> Any:
        client = get_redis()
        return (
            await client.zrange(keys.entry_entrants(BOARD), 0, -1, withscores=True),
            await client.hgetall(keys.entry_tries(BOARD)),
            await client.hgetall(keys.entry_extra(BOARD)),
        )

    return run_sync(read)


def test_it_stores_joins_and_grants_and_rebuilds_the_entries_redis_lost(cup):
    game, manage, submit = cup
    assert post(submit, "/entries", {"player_id": "ada"})[0] == 201
    assert post(submit, "/entries", {"player_id": "bob"})[0] == 201
    assert post(submit, "/scores", {"player_id": "ada", "score": 10}) == (200, "")
    assert post(manage, "/players/ada/attempts", {"add": 1}) == (200, "")
    before = entry_state()

    ledger.ledger_drain()
    kinds = sorted(ScoreEvent.objects.filter(game=game).values_list("kind", "player_id"))
    assert kinds == [("attempts", "ada"), ("join", "ada"), ("join", "bob"), ("submit", "ada")]
    run_sync(lambda: get_redis().flushdb())
    ledger.leaderboards_rebuild(game=game)

    assert entry_state() == before
    assert post(submit, "/scores", {"player_id": "bob", "score": 5}) == (200, "")  # still entered
    assert post(submit, "/scores", {"player_id": "ada", "score": 20}) == (200, "")  # the granted one
    assert post(submit, "/scores", {"player_id": "ada", "score": 30}) == (409, "attempts_exhausted")
    assert post(submit, "/scores", {"player_id": "cy", "score": 1}) == (409, "not_entered")


def test_it_erases_a_player_from_the_periods_entry(cup):
    game, manage, submit = cup
    post(submit, "/entries", {"player_id": "ada"})
    post(submit, "/scores", {"player_id": "ada", "score": 10})
    post(manage, "/players/ada/attempts", {"add": 1})
    post(submit, "/entries", {"player_id": "bob"})

    moderation_services.player_erase(game=game, player_id="ada", reason="asked to be forgotten")

    entrants, tries, extra = entry_state()
    assert ([p for p, _ in entrants], tries, extra) == (["bob"], {}, {})


def cohort_state() -> tuple[list[tuple[str, float]], list[tuple[str, float]], dict[str, str], dict[str, str]]:
    async def read() -> Any:
        client = get_redis()
        return (
            await client.zrange(keys.entry_cohorts(BOARD), 0, -1, withscores=True),
            await client.zrange(keys.entry_cohort_sizes(BOARD), 0, -1, withscores=True),
            await client.hgetall(keys.entry_cohort_state(BOARD)),
            await client.hgetall(keys.entry_ratings(BOARD)),
        )

    return run_sync(read)


def test_it_stores_placements_and_rebuilds_the_cohorts_redis_lost(cup):
    game, manage, submit = cup
    assert put(manage, "", {"mode": "best", "order": "desc", "windows": ["weekly"], "cohort_size": 2})[0] == 200
    for player in ["ada", "bob", "cy"]:
        assert post(submit, "/scores", {"player_id": player, "score": 1}) == (200, "")  # open: enters
    before = cohort_state()
    assert [p for p, _ in before[0]] == ["ada", "bob", "cy"] and before[2]["n:0"] == "2"

    ledger.ledger_drain()
    placed = sorted(ScoreEvent.objects.filter(game=game, kind="cohort").values_list("player_id", "value"))
    assert placed == [("ada", 1), ("bob", 1), ("cy", 2)]
    run_sync(lambda: get_redis().flushdb())
    ledger.leaderboards_rebuild(game=game)

    assert cohort_state() == before
    assert post(submit, "/scores", {"player_id": "dee", "score": 1}) == (200, "")
    assert cohort_state()[1] == [("000000000001", 2.0), ("000000000002", 2.0)]  # dee filled cohort 2
