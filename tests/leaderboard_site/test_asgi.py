"""The API through the real ASGI application, whose /api/v1/ path has its own lean handler."""

from __future__ import annotations

import re

import httpx
import pytest
from asgiref.sync import sync_to_async

from core import apikeys
from core.redis import get_redis
from games import services as game_services
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
        "/api/v1/games/tetris/leaderboards/main/scores",
        json={"player_id": "a", "score": 3},
        headers={"Authorization": f"Bearer {raw}", "Idempotency-Key": "k1"},
    )
    assert posted.status_code == 200
    assert posted.json()["periods"]["daily"]["rank"] == 1
    assert posted.headers["RateLimit-Policy"] == '"api-key";q=6000;w=60, "items";q=60000;w=60'
    assert posted.headers["X-Content-Type-Options"] == "nosniff"
    again = await http.post(
        "/api/v1/games/tetris/leaderboards/main/scores",
        json={"player_id": "a", "score": 3},
        headers={"Authorization": f"Bearer {raw}", "Idempotency-Key": "k1"},
    )
    assert again.headers["Idempotent-Replayed"] == "true"
    board = await http.get("/api/v1/games/tetris/leaderboards/main/daily")
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


async def test_it_hands_a_page_its_body_once_read_and_bounded(http):
    """Pages' bodies are read (and bounded) before Django's handler runs: it gets them whole."""
    page = await http.get("/account/login/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert token is not None
    posted = await http.post(
        "/account/login/", data={"csrfmiddlewaretoken": token[1], "username": "ada-at-the-door", "password": "x"}
    )
    # Past the CSRF check (it reads the body's token) to the view, which read the rest.
    assert posted.status_code == 422
    assert "ada-at-the-door" in posted.text


@pytest.fixture
async def key(make_game) -> str:
    game = await sync_to_async(make_game)("tetris")
    _, raw = await sync_to_async(apikeys.api_key_create)(game=game)
    return raw


async def test_it_refuses_a_link_code_for_a_foreign_host_and_stores_nothing(http, key):
    """Once a 400 came after the code was made and counted (3 such requests locked the player out)."""
    for _ in range(4):
        response = await http.post(
            "/api/v1/games/tetris/players/ada/link-code",
            headers={"Authorization": f"Bearer {key}", "Host": "evil.example"},
        )
        assert response.status_code == 400
        assert response.json()["error"]["code"] == "bad_host"
    assert [k async for k in get_redis().scan_iter(match="link:*")] == []
    assert [k async for k in get_redis().scan_iter(match="rl:*")] == []  # not even the rate limit ran

    issued = await http.post("/api/v1/games/tetris/players/ada/link-code", headers={"Authorization": f"Bearer {key}"})
    assert issued.status_code == 200


async def test_it_answers_head_on_the_production_path(http, key):
    get = await http.get("/api/v1/games/tetris/leaderboards/main/daily")
    head = await http.head("/api/v1/games/tetris/leaderboards/main/daily")
    assert head.status_code == 200 and head.content == b""
    assert head.headers["content-length"] == str(len(get.content))
    refused = await http.head("/api/v1/games/tetris/leaderboards/main/scores")
    assert refused.status_code == 405 and refused.content == b""


async def test_it_answers_a_bug_with_a_json_500_and_no_traceback_even_in_debug(http, key, settings, monkeypatch):
    settings.DEBUG = True

    async def broken(**kwargs: object) -> object:
        raise RuntimeError("a bug with a secret detail")

    monkeypatch.setattr(game_services, "score_submit", broken)
    response = await http.post(
        "/api/v1/games/tetris/leaderboards/main/scores",
        json={"player_id": "a", "score": 1},
        headers={"Authorization": f"Bearer {key}"},
    )

    assert response.status_code == 500
    assert response.json() == {
        "error": {
            "code": "internal_error",
            "message": "Something went wrong on our side; it has been logged.",
            "field": None,
        }
    }
    assert "secret detail" not in response.text and "Traceback" not in response.text


async def test_it_answers_503_on_the_production_path_while_redis_is_unreachable(http, key, redis_unreachable):
    response = await http.get("/api/v1/games/tetris/leaderboards/main/daily")
    assert response.status_code == 503
    assert response.headers["retry-after"] == "5"
    page = await http.get("/games/tetris/")
    assert page.status_code == 503 and "Back in a moment" in page.text
