"""Shared fixtures. The suite talks to a real Redis and a real database.

``make test`` starts a throw-away Redis and sets TEST_REDIS_URL; the suite
flushes that Redis before every test, so it refuses to run without it.
"""

from __future__ import annotations

import datetime as dt
import os
import socket
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.db import connections
from django.test import AsyncClient

from core import clock as core_clock
from core import config
from core import redis as core_redis
from core import services as core_services
from core.models import Game
from core.redis import close_redis, get_redis, run_sync


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


# Every test runs on a pinned clock starting here (a Wednesday at noon, mid-month:
# far from any period boundary), so no test reads the wall clock by accident and
# the suite passes on any date. Tests move it with clock.set() / clock.advance().
T0 = dt.datetime(2026, 3, 4, 12, 0, tzinfo=dt.UTC)
_pinned: list[core_clock.PinnedClock] = []


@pytest.fixture(autouse=True)
def clock(request: pytest.FixtureRequest) -> Iterator[core_clock.PinnedClock | None]:
    """The pinned clock (None under ``@pytest.mark.wall_clock``: tests of real processes,
    which cannot share a pinned clock, run wholly on the wall clock instead)."""
    if request.node.get_closest_marker("wall_clock"):
        yield None
        return
    with core_clock.pinned(T0) as pinned:
        _pinned.append(pinned)
        try:
            yield pinned
        finally:
            _pinned.pop()


@contextmanager
def clock_at(instant: dt.datetime | None) -> Iterator[None]:
    """Run a block at ``instant`` on the pinned clock, then put the clock back (None: as it is)."""
    if instant is None:
        yield
        return
    pinned = _pinned[-1]
    before = pinned.now()
    pinned.set(instant)
    try:
        yield
    finally:
        pinned.set(before)


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


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def forget_redis_clients() -> None:
    """Drop every loop's Redis client, so the next use connects to settings.REDIS_URL afresh."""
    core_redis._clients.clear()


@pytest.fixture
def redis_unreachable(settings: Any) -> Iterator[str]:
    """The product's Redis at an address where nothing listens: every connection is refused."""
    original = settings.REDIS_URL
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"
    forget_redis_clients()
    yield settings.REDIS_URL
    settings.REDIS_URL = original
    forget_redis_clients()


# make_game's keyword arguments that set the game; the others set its board.
_GAME_FIELDS = frozenset(
    {"name", "description", "timezone_name", "max_submissions_per_minute", "presence_timeout_secs"}
)


def game_with_board(slug: str = "tetris", *, board: str | None = "main", **kwargs: Any) -> Game:
    """A game and one board (``board``, unless None), set by the keyword arguments of both
    (``periods_kept`` is the board's windows)."""
    kwargs.setdefault("name", slug.title())
    game = core_services.game_create(slug=slug, **{k: v for k, v in kwargs.items() if k in _GAME_FIELDS})
    board_kwargs = {k: v for k, v in kwargs.items() if k not in _GAME_FIELDS}
    if "periods_kept" in board_kwargs:
        board_kwargs["windows"] = board_kwargs.pop("periods_kept")
    if board is not None:
        core_services.leaderboard_create(game=game, slug=board, name=kwargs["name"], **board_kwargs)
    # Prefetched, so that GameConfig.from_model(game) runs no query (also in async tests).
    return Game.objects.prefetch_related("leaderboards").get(pk=game.pk)


@pytest.fixture
def make_game(django_db_blocker: object) -> Callable[..., Game]:
    return game_with_board


@pytest.fixture
def aclient() -> AsyncClient:
    return AsyncClient()


def auth(raw_key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {raw_key}"}
