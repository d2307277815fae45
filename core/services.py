"""Tenant writes: games, their leaderboards and their config (API keys live in apikeys.py), and the sliding-window
limit every per-client limit counts with."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence

from django.db import transaction

from . import board_rules, clock, config, keys, scripts
from .audit import Action, Actor, audit_record
from .models import DEFAULT_PRESENCE_TIMEOUT_SECS, PERIOD_KINDS, Game, Leaderboard
from .redis import get_redis, run_sync


def game_create(
    *,
    slug: str,
    name: str,
    timezone_name: str = "UTC",
    description: str = "",
    max_submissions_per_minute: int = 60,
    presence_timeout_secs: int = DEFAULT_PRESENCE_TIMEOUT_SECS,
) -> Game:
    """A new game, with no leaderboard yet (leaderboard_create adds them)."""
    game = Game(
        slug=slug,
        name=name,
        description=description,
        timezone=timezone_name,
        max_submissions_per_minute=max_submissions_per_minute,
        presence_timeout_secs=presence_timeout_secs,
    )
    game.full_clean()
    game.save()
    return game


def leaderboard_create(
    *,
    game: Game,
    slug: str,
    name: str = "",
    description: str = "",
    mode: str = Leaderboard.Mode.BEST,
    order: str = Leaderboard.Order.DESC,
    windows: Sequence[str] = PERIOD_KINDS,
    cron: str = "",
    timezone_name: str = "",
    starts_at: dt.datetime | None = None,
    ends_at: dt.datetime | None = None,
    ties: str = Leaderboard.Ties.SHARED,
    subscore_order: str = Leaderboard.Order.DESC,
    score_format: str = board_rules.INTEGER,
    min_score: int | None = None,
    max_score: int | None = None,
    by: Actor | None = None,
) -> Leaderboard:
    """A new board of ``game``; ValidationError names each setting that breaks a rule. Made by
    someone (``by``: a command, an admin), it is in the audit trail."""
    board = Leaderboard(
        game=game,
        slug=slug,
        name=name or slug.replace("-", " ").capitalize(),
        description=description,
        mode=mode,
        order=order,
        windows=list(windows),
        cron=cron,
        timezone=timezone_name,
        starts_at=starts_at,
        ends_at=ends_at,
        ties=ties,
        subscore_order=subscore_order,
        format=score_format,
        min_score=min_score,
        max_score=max_score,
    )
    board.full_clean()
    with transaction.atomic():
        board.save()
        if by is not None:
            audit_record(action=Action.CREATE_BOARD, game_slug=game.slug, by=by, detail={"board": board.slug})
    return board


def board_hidden_copy(*, game_slug: str, board_slug: str) -> int:
    """Give a new board the game's hidden players, so that its submit script refuses them
    (each board keeps a copy on its own hash tag; hiding writes them all)."""

    async def copy() -> int:
        client = get_redis()
        hidden = await client.smembers(keys.hidden(game_slug))
        if hidden:
            await client.sadd(keys.board_hidden(keys.board_ref(game_slug, board_slug)), *hidden)
        return len(hidden)

    return run_sync(copy)


def config_changed(*, slug: str, board: str = "") -> None:
    """Tell every process that a game's config or keys changed (after commit); ``board``: the
    slug of the one board that changed, if that is all (the game list reloads only that board)."""
    config.invalidate()

    async def bump() -> None:
        client = get_redis()
        await client.incr(keys.config_version(slug))
        # The epoch and its change-log entry in one transaction (one hash tag): a reader that
        # sees the epoch move by n finds exactly n entries after the last one it read.
        pipe = client.pipeline(transaction=True)
        pipe.incr(keys.config_epoch())
        pipe.xadd(
            keys.config_changes(),
            {"game": slug, "board": board},
            maxlen=config.CONFIG_CHANGES_KEPT,
            approximate=True,
        )
        await pipe.execute()

    run_sync(bump)


async def limit_take(*, key: str, window_secs: int, limit: int) -> int:
    """Record one event against a sliding-window limit (core/lua/sliding_window.lua).

    Returns 0 if it was recorded, else the ms until the window has room (nothing recorded).
    """
    return await scripts.sliding_window(
        get_redis(), key=key, now_ms=clock.now_ms(), window_ms=window_secs * 1000, limit=limit, member=uuid.uuid4().hex
    )
