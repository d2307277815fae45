"""The API through the real ASGI application, whose /api/v1/ path has its own lean handler."""

from __future__ import annotations

import httpx
import pytest
from asgiref.sync import sync_to_async

from core import apikeys
from leaderboard_site.asgi import application

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
async def http():
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=application), base_url="http://127.0.0.1") as c:
        yield c


async def test_it_serves_the_api_through_the_lean_handler(http, make_game):
    game = await sync_to_async(make_game)("tetris")
    _, raw = await sync_to_async(apikeys.api_key_create)(game=game)
    posted = await http.post(
        "/api/v1/games/tetris/scores",
        json={"player_id": "a", "score": 3},
        headers={"Authorization": f"Bearer {raw}", "Idempotency-Key": "k1"},
    )
    assert posted.status_code == 200
    assert posted.json()["periods"]["daily"]["rank"] == 1
    assert posted.headers["RateLimit-Policy"] == '"api-key";q=6000;w=60'
    assert posted.headers["X-Content-Type-Options"] == "nosniff"
    again = await http.post(
        "/api/v1/games/tetris/scores",
        json={"player_id": "a", "score": 3},
        headers={"Authorization": f"Bearer {raw}", "Idempotency-Key": "k1"},
    )
    assert again.headers["Idempotent-Replayed"] == "true"
    board = await http.get("/api/v1/games/tetris/leaderboards/daily")
    assert board.json()["entries"][0]["player_id"] == "a"


@pytest.mark.parametrize(("method", "path", "status"), [("GET", "/api/v1/nope", 404), ("PUT", "/api/v1/games", 405)])
async def test_it_answers_unmatched_api_requests_with_json_errors(http, method, path, status):
    response = await http.request(method, path)
    assert response.status_code == status
    assert response.json()["error"]["code"] in {"not_found", "method_not_allowed"}


async def test_it_serves_pages_through_the_full_stack(http):
    response = await http.get("/")
    assert response.status_code == 200
    # Clickjacking protection comes from the full middleware stack only.
    assert response.headers["X-Frame-Options"] == "DENY"
