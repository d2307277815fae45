"""Entry to a competing board over the API (issue 22): join-only and open boards, a field's size,
an entry window, attempts and grants, as a game server and a studio meet them. Every refusal
changes nothing; the next period starts afresh."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from core import apikeys, keys
from core import services as core_services
from core.models import ApiKey
from core.redis import get_redis
from tests.conftest import T0, auth, clock_at

pytestmark = pytest.mark.django_db(transaction=True)

API = "/api/v1/games/cup"
# T0 is Wednesday 2026-03-04 12:00 UTC: the weekly period 2026-W10 runs from Monday 2 March.
WEEK = "2026-W10"
NEXT_WEEK = dt.datetime(2026, 3, 9, 0, 0, 1, tzinfo=dt.UTC)
TOURNAMENT: dict[str, Any] = {
    "name": "Cup",
    "mode": "best",
    "order": "desc",
    "windows": ["weekly"],
    "entry": "join",
    "max_entrants": 3,
    "max_attempts": 2,
}


@pytest.fixture
async def cup() -> tuple[str, str]:
    """A game 'cup' with no board yet, and a (manage, submit) key pair."""
    game = await sync_to_async(core_services.game_create)(slug="cup", name="Cup", max_submissions_per_minute=0)
    _, manage = await sync_to_async(apikeys.api_key_create)(game=game, name="ops", scope=ApiKey.Scope.MANAGE)
    _, submit = await sync_to_async(apikeys.api_key_create)(game=game, name="server")
    return manage, submit


async def call(client: AsyncClient, method: str, path: str, key: str, body: Any = None) -> tuple[int, Any]:
    send = getattr(client, method)
    response = await send(
        f"{API}{path}",
        json.dumps(body) if body is not None else None,
        content_type="application/json",
        headers=auth(key),
    )
    return response.status_code, response.json()


async def board(client: AsyncClient, manage: str, **settings: Any) -> None:
    status, body = await call(client, "put", "/leaderboards/weekly", manage, {**TOURNAMENT, **settings})
    assert status == 200, body


async def join(client: AsyncClient, key: str, player: str, **extra: Any) -> tuple[int, Any]:
    return await call(client, "post", "/leaderboards/weekly/entries", key, {"player_id": player, **extra})


async def score(client: AsyncClient, key: str, player: str, value: int) -> tuple[int, Any]:
    return await call(client, "post", "/leaderboards/weekly/scores", key, {"player_id": player, "score": value})


async def standings(client: AsyncClient) -> list[tuple[str, int]]:
    response = await client.get(f"{API}/leaderboards/weekly/weekly")
    assert response.status_code == 200
    return [(e["player_id"], e["score"]) for e in response.json()["entries"]]


def code(answer: tuple[int, Any]) -> tuple[int, str]:
    status, body = answer
    return status, body["error"]["code"]


async def test_it_refuses_the_score_of_a_player_who_has_not_joined_then_takes_it_after_the_join(aclient, cup):
    manage, submit = cup
    await board(aclient, manage)

    refused = await score(aclient, submit, "ada", 100)
    assert code(refused) == (409, "not_entered") and WEEK in refused[1]["error"]["message"]
    assert await standings(aclient) == []

    status, entry = await join(aclient, submit, "ada", display_name="Ada")
    assert status == 201
    assert entry == {
        "leaderboard": "weekly",
        "player_id": "ada",
        "window": "weekly",
        "period_id": WEEK,
        "entered_at": "2026-03-04T12:00:00.000Z",
        "entrants": 1,
        "max_entrants": 3,
        "attempts_used": 0,
        "attempts_left": 2,
        "cohort": None,
        "tier": None,
    }
    assert (await join(aclient, submit, "ada"))[0] == 200  # the same entry again
    assert (await score(aclient, submit, "ada", 100))[0] == 200
    assert await standings(aclient) == [("ada", 100)]


async def test_it_fills_the_field_first_come_and_refuses_the_join_past_it(aclient, cup):
    manage, submit = cup
    await board(aclient, manage)
    for player in ("ada", "bob", "cy"):
        assert (await join(aclient, submit, player))[0] == 201

    refused = await join(aclient, submit, "dee")
    assert code(refused) == (409, "board_full") and "3 entrants" in refused[1]["error"]["message"]
    assert code(await score(aclient, submit, "dee", 5)) == (409, "not_entered")
    assert (await join(aclient, submit, "bob"))[0] == 200  # an entrant's join still answers


async def test_it_never_overfills_a_field_under_200_concurrent_joins(aclient, cup):
    manage, submit = cup
    await board(aclient, manage, max_entrants=150)

    answers = await asyncio.gather(*(join(AsyncClient(), submit, f"p{i:03d}") for i in range(200)))

    statuses = sorted(status for status, _ in answers)
    assert statuses.count(201) == 150 and statuses.count(409) == 50
    entrants = await get_redis().zcard(keys.entry_entrants(keys.board("cup.weekly", "weekly", WEEK)))
    assert entrants == 150


async def test_it_counts_attempts_refuses_the_one_past_them_and_takes_a_grant(aclient, cup):
    manage, submit = cup
    await board(aclient, manage)
    await join(aclient, submit, "ada")
    assert (await score(aclient, submit, "ada", 10))[0] == 200
    assert (await score(aclient, submit, "ada", 30))[0] == 200

    refused = await score(aclient, submit, "ada", 50)
    assert code(refused) == (409, "attempts_exhausted") and "used 2 of 2" in refused[1]["error"]["message"]
    assert await standings(aclient) == [("ada", 30)]

    assert code(await call(aclient, "post", "/leaderboards/weekly/players/ada/attempts", submit, {"add": 1})) == (
        403,
        "scope",
    )
    status, granted = await call(aclient, "post", "/leaderboards/weekly/players/ada/attempts", manage, {"add": 1})
    assert (status, granted) == (
        200,
        {"leaderboard": "weekly", "player_id": "ada", "period_id": WEEK, "extra": 1, "used": 2, "left": 1},
    )
    assert (await score(aclient, submit, "ada", 50))[0] == 200
    assert code(await score(aclient, submit, "ada", 70)) == (409, "attempts_exhausted")
    assert await standings(aclient) == [("ada", 50)]


async def test_it_does_not_count_a_replayed_submission_as_an_attempt(aclient, cup):
    manage, submit = cup
    await board(aclient, manage, max_attempts=1)
    await join(aclient, submit, "ada")
    headers = {**auth(submit), "Idempotency-Key": "match-1"}
    body = json.dumps({"player_id": "ada", "score": 10})
    first = await aclient.post(
        f"{API}/leaderboards/weekly/scores", body, content_type="application/json", headers=headers
    )
    again = await aclient.post(
        f"{API}/leaderboards/weekly/scores", body, content_type="application/json", headers=headers
    )
    assert (first.status_code, again.status_code) == (200, 200)
    assert again.headers["Idempotent-Replayed"] == "true"


async def test_it_grants_attempts_under_concurrency_and_counts_each_once(aclient, cup):
    manage, submit = cup
    await board(aclient, manage, max_attempts=1)
    await join(aclient, submit, "ada")
    path = "/leaderboards/weekly/players/ada/attempts"
    grants = await asyncio.gather(*(call(AsyncClient(), "post", path, manage, {"add": 1}) for _ in range(20)))
    assert sorted(status for status, _ in grants) == [200] * 20
    assert max(body["extra"] for _, body in grants) == 20

    scores = await asyncio.gather(*(score(AsyncClient(), submit, "ada", i) for i in range(30)))
    assert sorted(status for status, _ in scores).count(200) == 21


async def test_it_enters_an_open_boards_player_with_their_first_score_within_the_field_and_window(aclient, cup):
    manage, submit = cup
    # Entry closes Thursday 00:00, 3 days into the week; T0 is Wednesday noon.
    await board(aclient, manage, entry="open", max_entrants=2, max_attempts=None, entry_window_secs=3 * 86400)
    assert (await score(aclient, submit, "ada", 10))[0] == 200
    assert (await score(aclient, submit, "bob", 20))[0] == 200
    assert code(await score(aclient, submit, "cy", 30)) == (409, "board_full")
    assert (await score(aclient, submit, "ada", 40))[0] == 200  # an entrant goes on

    with clock_at(T0 + dt.timedelta(hours=13)):
        refused = await score(aclient, submit, "cy", 30)
        assert code(refused) == (409, "entry_closed") and "2026-03-05T00:00:00.000Z" in refused[1]["error"]["message"]
        assert code(await join(aclient, submit, "cy")) == (409, "entry_closed")
        assert (await score(aclient, submit, "bob", 50))[0] == 200
    assert await standings(aclient) == [("bob", 50), ("ada", 40)]


async def test_it_starts_the_next_period_with_no_entrants_and_every_attempt_back(aclient, cup):
    manage, submit = cup
    await board(aclient, manage, max_attempts=1)
    await join(aclient, submit, "ada")
    await score(aclient, submit, "ada", 10)
    assert code(await score(aclient, submit, "ada", 20)) == (409, "attempts_exhausted")

    with clock_at(NEXT_WEEK):
        assert code(await score(aclient, submit, "ada", 20)) == (409, "not_entered")
        status, entry = await join(aclient, submit, "ada")
        assert (status, entry["period_id"], entry["entrants"], entry["attempts_left"]) == (201, "2026-W11", 1, 1)
        assert (await score(aclient, submit, "ada", 20))[0] == 200


async def test_it_refuses_a_join_on_a_board_without_a_competition_or_out_of_play(aclient, cup):
    manage, submit = cup
    status, _ = await call(
        aclient, "put", "/leaderboards/plain", manage, {"name": "Plain", "mode": "best", "order": "desc"}
    )
    assert status == 200
    refused = await call(aclient, "post", "/leaderboards/plain/entries", submit, {"player_id": "ada"})
    assert code(refused) == (409, "not_competing")
    grant = await call(aclient, "post", "/leaderboards/plain/players/ada/attempts", manage, {"add": 1})
    assert code(grant) == (409, "not_competing")

    await board(aclient, manage)
    assert (await call(aclient, "delete", "/leaderboards/weekly", manage))[0] == 200
    assert code(await join(aclient, submit, "ada")) == (409, "board_closed")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"player_id": "bad id!"}, "player_id"),
        ({"player_id": "ada", "display_name": "x\u0000"}, "display_name"),
        ({"player_id": "ada", "rank": 1}, "rank"),
        ({}, "player_id"),
    ],
)
async def test_it_refuses_a_bad_join_by_field_and_enters_nobody(aclient, cup, body, field):
    manage, submit = cup
    await board(aclient, manage)
    status, answer = await call(aclient, "post", "/leaderboards/weekly/entries", submit, body)
    assert (status, answer["error"]["code"], answer["error"]["field"]) == (422, "invalid", field)
    assert await get_redis().zcard(keys.entry_entrants(keys.board("cup.weekly", "weekly", WEEK))) == 0


@pytest.mark.parametrize("add", [0, -1, 1001, True, "1", 1.5])
async def test_it_refuses_a_grant_out_of_range(aclient, cup, add):
    manage, _ = cup
    await board(aclient, manage)
    status, answer = await call(aclient, "post", "/leaderboards/weekly/players/ada/attempts", manage, {"add": add})
    assert (status, answer["error"]["code"], answer["error"]["field"]) == (422, "invalid", "add")


async def test_it_refuses_a_batch_item_of_a_player_not_entered_alone(aclient, cup):
    manage, submit = cup
    await board(aclient, manage)
    await join(aclient, submit, "ada")
    items = [
        {"leaderboard": "weekly", "player_id": "ada", "score": 10},
        {"leaderboard": "weekly", "player_id": "bob", "score": 20},
        {"leaderboard": "weekly", "player_id": "ada", "score": 30},
        {"leaderboard": "weekly", "player_id": "ada", "score": 40},
    ]
    response = await aclient.post(
        f"{API}/scores/batch", json.dumps({"scores": items}), content_type="application/json", headers=auth(submit)
    )
    results = response.json()["results"]

    assert response.status_code == 200
    assert [r.get("error", {}).get("code", "ok") for r in results] == ["ok", "not_entered", "ok", "attempts_exhausted"]
    assert [r["error"]["field"] for r in results if "error" in r] == ["scores[1].player_id", "scores[3].player_id"]
    assert await standings(aclient) == [("ada", 30)]
