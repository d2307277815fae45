"""Idempotency-Key: a retry replays the stored response and changes nothing."""

from __future__ import annotations

import asyncio
import json

import pytest
from asgiref.sync import sync_to_async

from core import apikeys
from tests.conftest import auth

pytestmark = pytest.mark.django_db(transaction=True)

URL = "/api/v1/games/tetris/leaderboards/main/scores"


@pytest.fixture
async def keys_(make_game):
    game = await sync_to_async(make_game)("tetris", mode="increment", max_submissions_per_minute=0)
    _, first = await sync_to_async(apikeys.api_key_create)(game=game, name="one")
    _, second = await sync_to_async(apikeys.api_key_create)(game=game, name="two")
    return first, second


async def post(aclient, raw_key, body, idem, url=URL):
    headers = {**auth(raw_key), "Idempotency-Key": idem} if idem is not None else auth(raw_key)
    return await aclient.post(url, json.dumps(body), content_type="application/json", headers=headers)


async def total(aclient, player="a"):
    response = await aclient.get(f"/api/v1/games/tetris/leaderboards/main/all-time/players/{player}")
    return response.json()["score"] if response.status_code == 200 else None


async def test_it_replays_a_repeat_and_changes_nothing(aclient, keys_):
    first = await post(aclient, keys_[0], {"player_id": "a", "score": 5}, "order-1")
    await post(aclient, keys_[0], {"player_id": "b", "score": 9}, None)
    again = await post(aclient, keys_[0], {"player_id": "a", "score": 5}, "order-1")
    assert first.status_code == again.status_code == 200
    assert again.json() == first.json()
    assert again.headers["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first.headers
    assert await total(aclient) == 5


async def test_it_refuses_the_same_key_with_another_body(aclient, keys_):
    await post(aclient, keys_[0], {"player_id": "a", "score": 5}, "order-1")
    response = await post(aclient, keys_[0], {"player_id": "a", "score": 6}, "order-1")
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "idempotency_mismatch"
    assert response.json()["error"]["field"] == "Idempotency-Key"
    assert await total(aclient) == 5


async def test_it_scopes_keys_to_the_api_key(aclient, keys_):
    await post(aclient, keys_[0], {"player_id": "a", "score": 5}, "same")
    response = await post(aclient, keys_[1], {"player_id": "a", "score": 5}, "same")
    assert "Idempotent-Replayed" not in response.headers
    assert await total(aclient) == 10


async def test_it_applies_concurrent_duplicates_exactly_once(aclient, keys_):
    responses = await asyncio.gather(
        *(post(aclient, keys_[0], {"player_id": "a", "score": 7}, "burst") for _ in range(25))
    )
    assert {r.status_code for r in responses} == {200}
    assert sum("Idempotent-Replayed" not in r.headers for r in responses) == 1
    assert {json.dumps(r.json(), sort_keys=True) for r in responses} == {
        json.dumps(responses[0].json(), sort_keys=True)
    }
    assert await total(aclient) == 7


@pytest.mark.parametrize("idem", ["", "x" * 256, "tab\there", "é"])
async def test_it_rejects_a_malformed_idempotency_key(aclient, keys_, idem):
    response = await post(aclient, keys_[0], {"player_id": "a", "score": 5}, idem)
    assert response.status_code == 422
    assert response.json()["error"]["field"] == "Idempotency-Key"
    assert await total(aclient) is None


async def test_it_replays_a_batch_item_by_item(aclient, keys_):
    body = {
        "scores": [
            {"leaderboard": "main", "player_id": "a", "score": 1},
            {"leaderboard": "main", "player_id": "b", "score": 2.5},
            {"leaderboard": "main", "player_id": "c", "score": 3},
        ]
    }
    first = await post(
        aclient, keys_[0], body, "batch-1", url=URL.replace("/leaderboards/main/scores", "/scores/batch")
    )
    again = await post(
        aclient, keys_[0], body, "batch-1", url=URL.replace("/leaderboards/main/scores", "/scores/batch")
    )
    assert first.status_code == again.status_code == 200
    assert again.json() == first.json()
    assert again.headers["Idempotent-Replayed"] == "true"
    assert first.json()["results"][1]["error"]["field"] == "scores[1].score"
    assert (await total(aclient, "a"), await total(aclient, "c")) == (1, 3)


async def test_it_completes_on_a_replay_what_a_crash_left_undone(aclient, keys_):
    """A worker that died between the board script and the game script left the score applied
    and its idempotency record stored, but no name and no player-sync mark: the
    state below. The client's retry with the same Idempotency-Key completes it."""
    from core import keys
    from core.models import Player
    from core.redis import get_redis
    from games import tasks

    body = {"player_id": "ann", "score": 5, "display_name": "Ann"}
    first = await post(aclient, keys_[0], body, "order-9")
    assert first.json()["display_name"] == "Ann"
    redis = get_redis()
    for key in (
        keys.names("tetris"),
        keys.pending_players("tetris"),
        keys.name_keys("tetris"),
        keys.name_index("tetris"),
    ):
        await redis.delete(key)
    await redis.delete(keys.work_players(), keys.recent("tetris"))

    again = await post(aclient, keys_[0], body, "order-9")
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    assert await total(aclient, "ann") == 5  # applied once
    assert await redis.hget(keys.names("tetris"), "ann") == "Ann"
    assert await sync_to_async(tasks.sync_players)() == 1
    assert await sync_to_async(lambda: Player.objects.get(player_id="ann").display_name)() == "Ann"
    found = await aclient.get("/api/v1/games/tetris/players?q=an")
    assert [p["player_id"] for p in found.json()["players"]] == ["ann"]
    # A replay is no new activity: no recent entry (it would show twice), no heartbeat.
    assert await redis.llen(keys.recent("tetris")) == 0
