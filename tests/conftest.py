"""Shared fixtures. The suite talks to a real Redis and a real database.

``make test`` starts a throw-away Redis and sets TEST_REDIS_URL; the suite
flushes that Redis before every test, so it refuses to run without it.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.db import connections
from django.test import AsyncClient

from games import config, services
from games.models import Game
from leaderboard_site.redis import close_redis, get_redis, run_sync


def pytest_configure(config: pytest.Config) -> None:
    url = os.environ.get("TEST_REDIS_URL")
    if not url:
        pytest.exit(
            "Run the suite with `make test`, which starts a throw-away Redis, or set TEST_REDIS_URL "
            "to a Redis database the suite may flush.",
            returncode=4,
        )
    from django.conf import settings

    settings.REDIS_URL = url


@pytest.fixture(autouse=True)
def _clean_redis() -> Iterator[None]:
    run_sync(lambda: get_redis().flushdb())
    config.invalidate()
    yield
    config.invalidate()


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings: object) -> None:
    # Tests log users in often; the real hasher is slow on purpose.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # type: ignore[attr-defined]


@pytest.fixture(scope="session", autouse=True)
async def _close_session_client(django_db_setup: None, django_db_blocker: Any) -> AsyncIterator[None]:
    # Depends on django_db_setup so that this teardown runs before the test database is dropped.
    yield
    await close_redis()
    # Async ORM calls ran on asgiref's shared sync thread; close its connections so
    # the test database can be dropped (PostgreSQL refuses while one is open).
    with django_db_blocker.unblock():
        await sync_to_async(connections.close_all)()
        run_sync(sync_to_async(connections.close_all))


@pytest.fixture
def make_game(django_db_blocker: object) -> Callable[..., Game]:
    def make(slug: str = "tetris", **kwargs: object) -> Game:
        kwargs.setdefault("name", slug.title())
        return services.game_create(slug=slug, **kwargs)  # type: ignore[arg-type]

    return make


@pytest.fixture
def aclient() -> AsyncClient:
    return AsyncClient()


def auth(raw_key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {raw_key}"}
