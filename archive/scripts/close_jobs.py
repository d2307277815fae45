"""Typed wrappers of the close-job queue's scripts (archive/lua/close_*.lua): claim, extend,
ack, fail, reap, retry and schedule (archive/services/close_jobs.py), and the safety net's
look at one board, close_sweep (archive/services/catch_up.py). Each builds one board's keys
(one hash tag) from core/keys.py and its ARGV from named arguments through the layouts bound
to the script's header (core/lua.py), and parses the reply into a typed result; a reply of
another shape raises ScriptReplyError.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from redis.asyncio import Redis

from core import keys, lua
from core.lua import Call, ScriptReplyError, load

from ._reply import count, flag, flat

CLOSE_CLAIM = load(__file__, "close_claim")
CLOSE_ACK = load(__file__, "close_ack")
CLOSE_DEFER = load(__file__, "close_defer")
CLOSE_EXTEND = load(__file__, "close_extend")
CLOSE_FAIL = load(__file__, "close_fail")
CLOSE_REAP = load(__file__, "close_reap")
CLOSE_RETRY = load(__file__, "close_retry")
CLOSE_SCHEDULE = load(__file__, "close_schedule")
CLOSE_SWEEP = load(__file__, "close_sweep")


# --------------------------------------------------------------------------- close_claim


class _ClaimKeys(NamedTuple):
    due: str
    claims: str
    attempts: str


class _ClaimArgs(NamedTuple):
    now_ms: int
    visibility_ms: int
    limit: int


CLOSE_CLAIM.bind(keys=_ClaimKeys, args=_ClaimArgs)


@dataclass(frozen=True)
class ClaimedJob:
    job: str
    attempts: int  # failed attempts before this claim
    token: int  # the claim's visibility deadline (ms), which ack / fail / extend must present


async def close_claim(client: Redis, *, ref: str, now_ms: int, visibility_ms: int, limit: int) -> list[ClaimedJob]:
    """Claim up to ``limit`` due jobs of a board, oldest due first, until ``now_ms + visibility_ms``."""
    call = CLOSE_CLAIM.flatten(
        _ClaimKeys(keys.close_jobs(ref), keys.close_claims(ref), keys.close_attempts(ref)),
        _ClaimArgs(now_ms, visibility_ms, limit),
    )
    raw = flat(await CLOSE_CLAIM(client, *call), 3, "close_claim")
    return [
        ClaimedJob(str(raw[i]), count(raw[i + 1], raw, "close_claim"), count(raw[i + 2], raw, "close_claim"))
        for i in range(0, len(raw), 3)
    ]


# --------------------------------------------------------------------------- close_extend, close_ack


class _ExtendKeys(NamedTuple):
    claims: str


class _ExtendArgs(NamedTuple):
    job: str
    token: int
    deadline: int


CLOSE_EXTEND.bind(keys=_ExtendKeys, args=_ExtendArgs)


async def close_extend(client: Redis, *, ref: str, job: str, token: int, deadline_ms: int) -> bool:
    """Move a claim's deadline to ``deadline_ms`` (the new token); False if the claim is no
    longer this worker's."""
    call = CLOSE_EXTEND.flatten(_ExtendKeys(keys.close_claims(ref)), _ExtendArgs(job, token, deadline_ms))
    return flag(await CLOSE_EXTEND(client, *call), "close_extend")


class _AckKeys(NamedTuple):
    claims: str
    attempts: str
    errors: str


class _AckArgs(NamedTuple):
    job: str
    token: int


CLOSE_ACK.bind(keys=_AckKeys, args=_AckArgs)


async def close_ack(client: Redis, *, ref: str, job: str, token: int) -> bool:
    """Forget a job that succeeded; False if the claim was no longer this worker's."""
    call = CLOSE_ACK.flatten(
        _AckKeys(keys.close_claims(ref), keys.close_attempts(ref), keys.close_errors(ref)), _AckArgs(job, token)
    )
    return flag(await CLOSE_ACK(client, *call), "close_ack")


# --------------------------------------------------------------------------- close_defer


class _DeferKeys(NamedTuple):
    due: str
    claims: str


class _DeferArgs(NamedTuple):
    job: str
    token: int
    due_ms: int


CLOSE_DEFER.bind(keys=_DeferKeys, args=_DeferArgs)


async def close_defer(client: Redis, *, ref: str, job: str, token: int, due_ms: int) -> bool:
    """Hand a claimed job back, due at ``due_ms``, with no failure counted; False if the claim was
    no longer this worker's."""
    call = CLOSE_DEFER.flatten(_DeferKeys(keys.close_jobs(ref), keys.close_claims(ref)), _DeferArgs(job, token, due_ms))
    return flag(await CLOSE_DEFER(client, *call), "close_defer")


# --------------------------------------------------------------------------- close_fail, close_reap


class _FailureKeys(NamedTuple):
    due: str
    claims: str
    attempts: str
    dead: str
    errors: str


def _failure_keys(ref: str) -> _FailureKeys:
    return _FailureKeys(
        keys.close_jobs(ref),
        keys.close_claims(ref),
        keys.close_attempts(ref),
        keys.close_dead(ref),
        keys.close_errors(ref),
    )


class _FailArgs(NamedTuple):
    job: str
    token: int
    now_ms: int
    backoff_ms: int
    cap_ms: int
    max_attempts: int
    error: str


CLOSE_FAIL.bind(keys=_FailureKeys, args=_FailArgs)


class FailOutcome(enum.StrEnum):
    """What a failed attempt did to its job; anything else in a reply is a bug (ScriptReplyError)."""

    RETRY = "retry"  # due again after its backoff
    DEAD = "dead"  # out of attempts: in the dead-letter ZSET
    LOST = "lost"  # the claim was no longer this worker's: nothing changed


@dataclass(frozen=True)
class Failed:
    outcome: FailOutcome
    attempts: int  # failed attempts so far (LOST: 0)
    at_ms: int  # RETRY: when it is due again; DEAD: when it died; LOST: 0


async def close_fail(
    client: Redis,
    *,
    ref: str,
    job: str,
    token: int,
    now_ms: int,
    backoff_ms: int,
    backoff_cap_ms: int,
    max_attempts: int,
    error: str,
) -> Failed:
    """Record a failed attempt of a claimed job: due again after ``backoff_ms * 2^(attempts-1)``
    (at most ``backoff_cap_ms``), or dead at its ``max_attempts``-th failure."""
    call = CLOSE_FAIL.flatten(
        _failure_keys(ref), _FailArgs(job, token, now_ms, backoff_ms, backoff_cap_ms, max_attempts, error)
    )
    raw = await CLOSE_FAIL(client, *call)
    if not isinstance(raw, list) or len(raw) != 3:
        raise ScriptReplyError(f"close_fail replied {raw!r}")
    try:
        outcome = FailOutcome(raw[0])
    except ValueError:
        raise ScriptReplyError(f"close_fail replied an unknown outcome {raw!r}") from None
    return Failed(outcome, count(raw[1], raw, "close_fail"), count(raw[2], raw, "close_fail"))


class _ReapArgs(NamedTuple):
    now_ms: int
    max_attempts: int
    limit: int
    error: str


CLOSE_REAP.bind(keys=_FailureKeys, args=_ReapArgs)


class ReapOutcome(enum.StrEnum):
    """Where a reaped job went; anything else in a reply is a bug (ScriptReplyError)."""

    DUE = "due"  # due again at once
    DEAD = "dead"  # out of attempts: in the dead-letter ZSET


class Reaped(NamedTuple):
    job: str
    outcome: ReapOutcome


async def close_reap(
    client: Redis, *, ref: str, now_ms: int, max_attempts: int, limit: int, error: str
) -> list[Reaped]:
    """Return up to ``limit`` claims whose deadline passed to the due ZSET, each counted as a
    failed attempt with ``error`` (out of attempts: to the dead one)."""
    call = CLOSE_REAP.flatten(_failure_keys(ref), _ReapArgs(now_ms, max_attempts, limit, error))
    raw = flat(await CLOSE_REAP(client, *call), 2, "close_reap")
    try:
        return [Reaped(str(raw[i]), ReapOutcome(raw[i + 1])) for i in range(0, len(raw), 2)]
    except ValueError:
        raise ScriptReplyError(f"close_reap replied an unknown outcome {raw!r}") from None


# --------------------------------------------------------------------------- close_retry, close_schedule


class _RetryKeys(NamedTuple):
    dead: str
    due: str
    attempts: str
    errors: str


class _RetryArgs(NamedTuple):
    job: str
    now_ms: int


CLOSE_RETRY.bind(keys=_RetryKeys, args=_RetryArgs)


async def close_retry(client: Redis, *, ref: str, job: str, now_ms: int) -> bool:
    """Make a dead job due at ``now_ms`` with its attempts reset; False if it was not dead."""
    call = CLOSE_RETRY.flatten(
        _RetryKeys(keys.close_dead(ref), keys.close_jobs(ref), keys.close_attempts(ref), keys.close_errors(ref)),
        _RetryArgs(job, now_ms),
    )
    return flag(await CLOSE_RETRY(client, *call), "close_retry")


class _ScheduleKeys(NamedTuple):
    due: str
    claims: str
    dead: str


class _ScheduleArgs(NamedTuple):
    mode: str


class _ScheduleJob(NamedTuple):
    job: str
    due_ms: int


CLOSE_SCHEDULE.bind(keys=_ScheduleKeys, args=_ScheduleArgs, arg_groups=(_ScheduleJob,))


async def close_schedule(
    client: Redis, *, ref: str, mode: Literal["missing", "sooner"], jobs: Sequence[tuple[str, int]]
) -> int:
    """Add the (job, due ms) jobs not due yet ('sooner': also bring due ones forward), leaving
    claimed and dead ones alone; returns how many were added or moved."""
    call = CLOSE_SCHEDULE.flatten(
        _ScheduleKeys(keys.close_jobs(ref), keys.close_claims(ref), keys.close_dead(ref)),
        _ScheduleArgs(mode),
        arg_groups=([_ScheduleJob(job, due_ms) for job, due_ms in jobs],),
    )
    raw = await CLOSE_SCHEDULE(client, *call)
    return count(raw, raw, "close_schedule")


# --------------------------------------------------------------------------- close_sweep


class _SweepKeys(NamedTuple):
    ledger: str
    due: str
    claims: str
    dead: str
    boards_index: str


class _SweepArgs(NamedTuple):
    now_ms: int
    prefix: str


CLOSE_SWEEP.bind(keys=_SweepKeys, args=_SweepArgs)


@dataclass(frozen=True)
class SweptBoard:
    """One board as the sweep reads it."""

    ledger: int  # ledger entries not stored
    next_at: int | None  # its earliest due job or claim deadline (ms)
    dead: int  # dead jobs
    unqueued: list[tuple[str, str, bool]]  # (period, period id, retained) of indexed boards with no job


def _sweep_call(ref: str, now_ms: int) -> Call:
    # What precedes a period board's "<period>:<id>" in its key: the script reads jobs off keys.
    prefix = keys.board_pattern(ref)[:-1]
    return Call(
        *CLOSE_SWEEP.flatten(
            _SweepKeys(
                keys.ledger(ref),
                keys.close_jobs(ref),
                keys.close_claims(ref),
                keys.close_dead(ref),
                keys.boards_index(ref),
            ),
            _SweepArgs(now_ms, prefix),
        )
    )


def _swept(raw: Any) -> SweptBoard:
    if not isinstance(raw, list) or len(raw) < 3 or (len(raw) - 3) % 2:
        raise ScriptReplyError(f"close_sweep replied {raw!r}")
    unqueued = []
    for i in range(3, len(raw), 2):
        period, _, period_id = str(raw[i]).partition(":")
        unqueued.append((period, period_id, flag(raw[i + 1], "close_sweep")))
    try:
        # A ZSET score, as Lua read it: text that may print as a float.
        next_at = int(float(raw[1])) if raw[1] != "" else None
    except (TypeError, ValueError):
        raise ScriptReplyError(f"close_sweep replied {raw!r}") from None
    return SweptBoard(count(raw[0], raw, "close_sweep"), next_at, count(raw[2], raw, "close_sweep"), unqueued)


async def close_sweep(client: Redis, *, refs: Sequence[str], now_ms: int) -> list[SweptBoard]:
    """Each board's state, one read-only script call a board, all in one round trip."""
    if not refs:
        return []
    replies = await lua.pipelined(client, [(CLOSE_SWEEP, _sweep_call(ref, now_ms)) for ref in refs])
    return [_swept(raw) for raw in replies]
