"""Typed wrappers of the scripts of one period's archive (archive/services/period_archive.py):
its lock (close_lock) and its board's retention expiry once complete (close_retain). Each
builds its keys from core/keys.py (the board's hash tag) and its ARGV from named arguments
through the layouts bound to the script's header (core/lua.py); a reply of another shape
raises ScriptReplyError.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

from redis.asyncio import Redis

from core import keys
from core.lua import load

from ._reply import flag

CLOSE_LOCK = load(__file__, "close_lock")
CLOSE_RETAIN = load(__file__, "close_retain")


# --------------------------------------------------------------------------- close_lock


class _LockKeys(NamedTuple):
    lock: str


class _LockArgs(NamedTuple):
    op: str
    token: str
    lifetime_ms: int


CLOSE_LOCK.bind(keys=_LockKeys, args=_LockArgs)


async def close_lock(
    client: Redis,
    *,
    ref: str,
    period: str,
    period_id: str,
    op: Literal["take", "extend", "release"],
    token: str,
    lifetime_ms: int,
) -> bool:
    """Take the period's archive lock for the run ``token`` (for ``lifetime_ms``), extend it, or
    release it; False if another run holds it ('take') or this one no longer does."""
    call = CLOSE_LOCK.flatten(_LockKeys(keys.archive_lock(ref, period, period_id)), _LockArgs(op, token, lifetime_ms))
    return flag(await CLOSE_LOCK(client, *call), "close_lock")


# --------------------------------------------------------------------------- close_retain


class _RetainKeys(NamedTuple):
    board: str
    boards_index: str
    stash: str
    version: str
    meta: str
    members: str
    entrants: str
    tries: str
    extra: str
    cohorts: str
    sizes: str
    state: str
    ratings: str


class _RetainArgs(NamedTuple):
    retention_ms: int
    expires_ms: int


CLOSE_RETAIN.bind(keys=_RetainKeys, args=_RetainArgs)


async def close_retain(
    client: Redis, *, ref: str, period: str, period_id: str, retention_ms: int, expires_ms: int
) -> bool:
    """Give an archived period's board, and what goes with it, its retention expiry (keys that
    have one keep it) and its index entry ``expires_ms``; returns whether the board existed."""
    board = keys.board(ref, period, period_id)
    call = CLOSE_RETAIN.flatten(
        _RetainKeys(
            board,
            keys.boards_index(ref),
            keys.hidden_stash(board),
            keys.board_version(board),
            keys.entry_meta(board),
            keys.entry_members(board),
            keys.entry_entrants(board),
            keys.entry_tries(board),
            keys.entry_extra(board),
            keys.entry_cohorts(board),
            keys.entry_cohort_sizes(board),
            keys.entry_cohort_state(board),
            keys.entry_ratings(board),
        ),
        _RetainArgs(retention_ms, expires_ms),
    )
    return flag(await CLOSE_RETAIN(client, *call), "close_retain")
