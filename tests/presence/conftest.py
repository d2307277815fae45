"""Fixtures of the presence tests: a game's config, an injected clock, Redis snapshots."""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from core.config import GameConfig
from core.models import Game
from core.redis import get_redis

T0 = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)


def at(secs: float) -> dt.datetime:
    """The injected clock: ``secs`` after T0 (ms precision)."""
    return T0 + dt.timedelta(milliseconds=round(secs * 1000))


@pytest.fixture
def presence_game(make_game: Callable[..., Game]) -> Callable[..., Awaitable[GameConfig]]:
    """Create a game (default timeout 60 s, no anti-spam limit) and return its config."""

    async def make(slug: str = "tetris", **kwargs: Any) -> GameConfig:
        kwargs.setdefault("max_submissions_per_minute", 0)
        game = await sync_to_async(make_game)(slug, **kwargs)
        return GameConfig.from_model(game, "0")

    return make


async def redis_state(pattern: str = "*") -> dict[str, Any]:
    """Every key's type and contents (rate-limit state excluded: an authorized request takes from it)."""
    client = get_redis()
    state: dict[str, Any] = {}
    async for key in client.scan_iter(match=pattern):
        if key.startswith("rl:"):
            continue
        kind = await client.type(key)
        if kind == "zset":
            value: Any = await client.zrange(key, 0, -1, withscores=True)
        elif kind == "hash":
            value = await client.hgetall(key)
        elif kind == "set":
            value = sorted(await client.smembers(key))
        elif kind == "list":
            value = await client.lrange(key, 0, -1)
        elif kind == "stream":
            value = await client.xrange(key)
        else:
            value = await client.get(key)
        state[key] = (kind, value)
    return state
