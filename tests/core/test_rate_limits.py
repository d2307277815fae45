"""Both limits: GCRA per API key and the exact sliding minute per player."""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING

import pytest
from asgiref.sync import sync_to_async

from core import apikeys, config, keys
from core.config import GameConfig
from core.errors import ServiceError
from core.redis import get_redis
from games import services
from tests.conftest import auth, clock_at

if TYPE_CHECKING:
    # What django-stubs says AsyncClient's requests return (the response with .json()).
    from django.test.client import _MonkeyPatchedASGIResponse as AsyncResponse

pytestmark = pytest.mark.django_db(transaction=True)

T0 = dt.datetime(2027, 1, 1, tzinfo=dt.UTC)


def later(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


@pytest.fixture
async def game(make_game):
    return await sync_to_async(make_game)("tetris", mode="increment", max_submissions_per_minute=3)


async def test_it_limits_an_api_key_per_minute_with_headers(aclient, game):
    _, raw = await sync_to_async(apikeys.api_key_create)(game=game, requests_per_minute=3)
    responses = [
        await aclient.post(
            "/api/v1/games/tetris/leaderboards/main/scores",
            json.dumps({"player_id": f"p{i}", "score": 1}),
            content_type="application/json",
            headers=auth(raw),
        )
        for i in range(4)
    ]
    assert [r.status_code for r in responses] == [200, 200, 200, 429]
    assert responses[0]["RateLimit-Policy"] == '"api-key";q=3;w=60, "items";q=60000;w=60'
    assert [r["RateLimit"].split(";")[1] for r in responses] == ["r=2", "r=1", "r=0", "r=0"]
    limited = responses[3]
    assert limited.json()["error"]["code"] == "rate_limited"
    assert 1 <= int(limited["Retry-After"]) <= 20
    board = (await aclient.get("/api/v1/games/tetris/leaderboards/main/daily")).json()
    assert board["total"] == 3


async def test_it_refills_an_api_key_at_an_even_pace(game):
    api_key, raw = await sync_to_async(apikeys.api_key_create)(game=game, requests_per_minute=60)
    for i in range(60):
        with clock_at(later(i / 1000)):
            await apikeys.request_authorize(raw_key=raw, game_slug="tetris")
    with pytest.raises(ServiceError) as error, clock_at(later(0.5)):
        await apikeys.request_authorize(raw_key=raw, game_slug="tetris")
    assert error.value.status == 429
    assert error.value.headers["Retry-After"] == "1"
    # One request's worth (one second at 60/min) comes back after a second, not after a minute.
    with clock_at(later(1.1)):
        await apikeys.request_authorize(raw_key=raw, game_slug="tetris")
    with pytest.raises(ServiceError), clock_at(later(1.2)):
        await apikeys.request_authorize(raw_key=raw, game_slug="tetris")
    # O(1) memory: one small string per key, which expires when the bucket is full again.
    state = keys.api_rate("tetris", api_key.prefix)
    assert await get_redis().type(state) == "string"


async def test_it_forgives_what_a_key_used_before_the_clock_stepped_back(game):
    # A clock stepped back (a VM restored, a host's time corrected) once left a key's budget
    # "used" until the old time came round again: CI's +40d run refused a key for 60 hours.
    _, raw = await sync_to_async(apikeys.api_key_create)(game=game, requests_per_minute=60)
    with clock_at(later(86_400)):
        await apikeys.request_authorize(raw_key=raw, game_slug="tetris")

    with clock_at(later(0)):
        taken = await apikeys.request_authorize(raw_key=raw, game_slug="tetris")

    assert taken.rate_headers["RateLimit"].startswith('"api-key";r=59;')


async def test_it_counts_the_api_key_limit_by_request_not_by_batch_item(aclient, game):
    _, raw = await sync_to_async(apikeys.api_key_create)(game=game, requests_per_minute=2)
    body = {"scores": [{"leaderboard": "main", "player_id": f"p{i}", "score": 1} for i in range(50)]}
    response = await aclient.post(
        "/api/v1/games/tetris/scores/batch", json.dumps(body), content_type="application/json", headers=auth(raw)
    )
    assert response.status_code == 200
    assert response["RateLimit"].startswith('"api-key";r=1;')


async def test_it_limits_a_player_over_a_sliding_minute(game):
    config = GameConfig.from_model(game, "0")
    for second in (0, 20, 40):
        with clock_at(later(second)):
            await services.score_submit(game=config, board=config.boards[0], player_id="a", score=1)
    with pytest.raises(ServiceError) as error, clock_at(later(59)):
        await services.score_submit(game=config, board=config.boards[0], player_id="a", score=1)
    assert (error.value.status, error.value.code, error.value.headers["Retry-After"]) == (
        429,
        "player_rate_limited",
        "1",
    )
    # Another player is not affected.
    with clock_at(later(59)):
        await services.score_submit(game=config, board=config.boards[0], player_id="b", score=1)
    # The window slides: the first submission leaves it at 60 s, the second at 80 s.
    with clock_at(later(60.001)):
        await services.score_submit(game=config, board=config.boards[0], player_id="a", score=1)
    with pytest.raises(ServiceError), clock_at(later(79)):
        await services.score_submit(game=config, board=config.boards[0], player_id="a", score=1)
    with clock_at(later(80.001)):
        result = await services.score_submit(game=config, board=config.boards[0], player_id="a", score=1)
    assert result.periods["all-time"].score == 5


async def test_it_does_not_count_refused_submissions_against_a_player(game):
    config = GameConfig.from_model(game, "0")
    for _ in range(3):
        with clock_at(later(0)):
            await services.score_submit(game=config, board=config.boards[0], player_id="a", score=1)
    for second in range(1, 30):
        with pytest.raises(ServiceError), clock_at(later(second)):
            await services.score_submit(game=config, board=config.boards[0], player_id="a", score=1)
    assert await get_redis().zcard(keys.player_spam("tetris.main", "a")) == 3
    with clock_at(later(60.001)):
        await services.score_submit(game=config, board=config.boards[0], player_id="a", score=1)


async def test_it_counts_each_item_of_a_batch_against_the_keys_item_budget(aclient, make_game):
    """A 1,000-item batch once counted as one request: one key could pin about 1.9 GB of
    idempotency records a minute. Items now have a budget of their own."""
    game = await sync_to_async(make_game)("chess", max_submissions_per_minute=0)
    _, raw = await sync_to_async(apikeys.api_key_create)(game=game, items_per_minute=2000)
    headers = {**auth(raw), "Idempotency-Key": "batch"}

    async def batch(tag: str) -> AsyncResponse:
        body = {"scores": [{"leaderboard": "main", "player_id": f"{tag}{i}", "score": i} for i in range(1000)]}
        return await aclient.post(
            "/api/v1/games/chess/scores/batch",
            json.dumps(body),
            content_type="application/json",
            headers={**headers, "Idempotency-Key": tag},
        )

    first, second, third = await batch("a"), await batch("b"), await batch("c")

    assert [r.status_code for r in (first, second, third)] == [200, 200, 429]
    assert third.json()["error"]["message"].startswith(
        "This API key may send 2000 items (scores, player ids) per minute"
    )
    assert '"items";q=2000;w=60' in third["RateLimit-Policy"]
    assert '"items";r=0' in third["RateLimit"]
    assert 1 <= int(third["Retry-After"]) <= 31
    # The refused batch left nothing behind: not a score, not an idempotency record.
    assert (await aclient.get("/api/v1/games/chess/leaderboards/main/daily")).json()["total"] == 2000
    assert len([k async for k in get_redis().scan_iter(match="idem:{chess.main}:*:*:*")]) == 2000


async def test_it_counts_the_ids_of_a_presence_report_as_items(aclient, make_game):
    game = await sync_to_async(make_game)("chess")
    _, raw = await sync_to_async(apikeys.api_key_create)(game=game, items_per_minute=1000)

    async def report(ids: list[str]) -> AsyncResponse:
        return await aclient.post(
            "/api/v1/games/chess/presence",
            json.dumps({"online": ids}),
            content_type="application/json",
            headers=auth(raw),
        )

    assert (await report([f"p{i}" for i in range(999)])).status_code == 200
    assert (await report(["late", "later"])).status_code == 429


async def test_it_bounds_what_it_remembers_of_unknown_key_prefixes(aclient, game, monkeypatch):
    """Unknown prefixes are cached (a flood costs no database query each time), but no
    longer without bound: 20,000 random ones once grew a process by 6 MB."""
    monkeypatch.setattr(config, "CONFIG_CACHE_MAX_ENTRIES", 50)
    config.invalidate()
    for i in range(200):
        response = await aclient.post(
            "/api/v1/games/tetris/leaderboards/main/scores",
            json.dumps({"player_id": "p", "score": 1}),
            content_type="application/json",
            headers={"Authorization": f"Bearer lbk_{i:08x}_secret"},
        )
        assert response.status_code == 401
    assert len(config._caches.keys) <= 50
