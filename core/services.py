"""Tenant writes: games and their config (API keys live in apikeys.py), and the sliding-window
limit every per-client limit counts with."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from . import clock, config, keys, scripts
from .models import DEFAULT_PERIODS, DEFAULT_PRESENCE_TIMEOUT_SECS, Game
from .redis import get_redis, run_sync


def game_create(
    *,
    slug: str,
    name: str,
    mode: str = Game.Mode.BEST,
    order: str = Game.Order.DESC,
    periods_kept: Sequence[str] = DEFAULT_PERIODS,
    timezone_name: str = "UTC",
    description: str = "",
    min_score: int | None = None,
    max_score: int | None = None,
    max_submissions_per_minute: int = 60,
    presence_timeout_secs: int = DEFAULT_PRESENCE_TIMEOUT_SECS,
) -> Game:
    game = Game(
        slug=slug,
        name=name,
        description=description,
        mode=mode,
        order=order,
        periods=list(periods_kept),
        timezone=timezone_name,
        min_score=min_score,
        max_score=max_score,
        max_submissions_per_minute=max_submissions_per_minute,
        presence_timeout_secs=presence_timeout_secs,
    )
    game.full_clean()
    game.save()
    return game


def config_changed(*, slug: str) -> None:
    """Tell every process that a game's config or keys changed (after commit)."""
    config.invalidate()
    run_sync(lambda: get_redis().incr(keys.config_version(slug)))


async def limit_take(*, key: str, window_secs: int, limit: int) -> int:
    """Record one event against a sliding-window limit (core/lua/sliding_window.lua).

    Returns 0 if it was recorded, else the ms until the window has room (nothing recorded).
    """
    wait = await scripts.SLIDING_WINDOW(
        get_redis(), [key], [clock.now_ms(), window_secs * 1000, limit, uuid.uuid4().hex]
    )
    return int(wait)
