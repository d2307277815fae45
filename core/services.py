"""Tenant writes: games and their config. API keys live in apikeys.py."""

from __future__ import annotations

from collections.abc import Sequence

from . import config, keys
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
