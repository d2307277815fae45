"""While Redis is unreachable every endpoint and page answers 503 + Retry-After, never 500,
and everything works again as soon as Redis is back (no restart of the web process).

Redis here really is unreachable: the product is pointed at a port where nothing
listens (the redis_unreachable fixture), so connections are refused.
"""

from __future__ import annotations

import pytest
from django.test import Client

from core import apikeys
from core.errors import UNAVAILABLE_RETRY_AFTER_SECS
from tests.conftest import auth, forget_redis_clients

pytestmark = pytest.mark.django_db(transaction=True)

API_READS = [
    "/api/v1/games/tetris/leaderboards/main/daily",
    "/api/v1/games/tetris/leaderboards/main/daily/players/ada",
    "/api/v1/games/tetris/leaderboards/main/daily/players/ada/around",
    "/api/v1/games/tetris/leaderboards/main/daily/players?ids=ada,bob",
    "/api/v1/games/tetris/leaderboards/main/daily/2026-03-01",
    "/api/v1/games/tetris/recent",
    "/api/v1/games/tetris/presence",
    "/api/v1/games/tetris/presence/ada",
]
PAGES = ["/", "/games/tetris/", "/games/tetris/players/ada/", "/games/tetris/history/"]


@pytest.fixture
def key(make_game) -> str:
    _, raw = apikeys.api_key_create(game=make_game("tetris"), name="server")
    return raw


def assert_unavailable_json(response) -> None:
    assert response.status_code == 503, response.content
    assert response["Retry-After"] == str(UNAVAILABLE_RETRY_AFTER_SECS)
    assert response.json()["error"]["code"] == "unavailable"


async def test_it_answers_writes_with_503_json_and_retry_after(aclient, key, redis_unreachable):
    score = await aclient.post(
        "/api/v1/games/tetris/leaderboards/main/scores",
        {"player_id": "ada", "score": 5},
        content_type="application/json",
        headers=auth(key),
    )
    batch = await aclient.post(
        "/api/v1/games/tetris/scores/batch",
        {"scores": [{"leaderboard": "main", "player_id": "ada", "score": 5}]},
        content_type="application/json",
        headers=auth(key),
    )
    presence = await aclient.post(
        "/api/v1/games/tetris/presence", {"online": ["ada"]}, content_type="application/json", headers=auth(key)
    )
    link = await aclient.post("/api/v1/games/tetris/players/ada/link-code", headers=auth(key))

    for response in (score, batch, presence, link):
        assert_unavailable_json(response)


@pytest.mark.parametrize("path", API_READS)
async def test_it_answers_reads_with_503_json_and_retry_after(aclient, key, redis_unreachable, path):
    assert_unavailable_json(await aclient.get(path))


@pytest.mark.parametrize("path", PAGES)
def test_it_answers_pages_with_a_503_page_that_retries_by_itself(key, redis_unreachable, path):
    response = Client().get(path)

    assert response.status_code == 503
    assert response["Retry-After"] == str(UNAVAILABLE_RETRY_AFTER_SECS)
    page = response.content.decode()
    assert "Back in a moment" in page and f'http-equiv="refresh" content="{UNAVAILABLE_RETRY_AFTER_SECS}"' in page


async def test_it_recovers_by_itself_when_redis_is_back(aclient, key, settings):
    original = settings.REDIS_URL
    body = {"player_id": "ada", "score": 5}
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    forget_redis_clients()
    down = await aclient.post(
        "/api/v1/games/tetris/leaderboards/main/scores", body, content_type="application/json", headers=auth(key)
    )
    settings.REDIS_URL = original
    forget_redis_clients()

    up = await aclient.post(
        "/api/v1/games/tetris/leaderboards/main/scores", body, content_type="application/json", headers=auth(key)
    )

    assert (down.status_code, up.status_code) == (503, 200)


def test_it_shows_admin_pages_with_a_message_instead_of_failing(admin_client, make_game, redis_unreachable):
    game = make_game("chess")

    page = admin_client.get(f"/admin/core/game/{game.pk}/change/")

    assert page.status_code == 200
    assert "Redis is unavailable: the boards cannot be read now." in page.content.decode()


async def test_it_lists_games_without_redis(aclient, key, redis_unreachable):
    """The game list and a game's periods come from the database and the clock alone."""
    response = await aclient.get("/api/v1/games")

    assert response.status_code == 200
    assert [g["slug"] for g in response.json()] == ["tetris"]
