"""Typed wrappers of the delivery queue's scripts (webhooks/lua/webhook_*.lua): claim, ack,
reap and schedule. Each builds the queue's keys (one hash tag) from core/keys.py and its ARGV
from named arguments through the layouts bound to the script's header (core/lua.py), and
parses the reply; a reply of another shape raises ScriptReplyError."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from redis.asyncio import Redis

from core import keys
from core.lua import ScriptReplyError, load

WEBHOOK_CLAIM = load(__file__, "webhook_claim")
WEBHOOK_ACK = load(__file__, "webhook_ack")
WEBHOOK_REAP = load(__file__, "webhook_reap")
WEBHOOK_SCHEDULE = load(__file__, "webhook_schedule")
WEBHOOK_FORGET = load(__file__, "webhook_forget")


def job_name(*, endpoint_pk: int, delivery_pk: int) -> str:
    """A delivery's member in the queue: its endpoint (the claim counts slots by it), then the
    delivery zero-padded, so that ties of one endpoint sort in delivery order."""
    return f"{endpoint_pk}:{delivery_pk:012d}"


def job_parse(job: str) -> tuple[int, int]:
    """(endpoint pk, delivery pk) of a job :func:`job_name` made."""
    endpoint, _, delivery = job.partition(":")
    return int(endpoint), int(delivery)


def _count(raw: Any, script: str) -> int:
    if type(raw) is not int or raw < 0:
        raise ScriptReplyError(f"{script} replied {raw!r}")
    return raw


class _ClaimKeys(NamedTuple):
    due: str
    claims: str
    inflight: str
    parked: str


class _ClaimArgs(NamedTuple):
    now_ms: int
    visibility_ms: int
    limit: int
    concurrency: int
    scan: int


WEBHOOK_CLAIM.bind(keys=_ClaimKeys, args=_ClaimArgs)


@dataclass(frozen=True)
class ClaimedJob:
    job: str
    token: int  # the claim's visibility deadline (ms), which ack must present


async def webhook_claim(
    client: Redis, *, now_ms: int, visibility_ms: int, limit: int, concurrency: int, scan: int
) -> list[ClaimedJob]:
    """Claim up to ``limit`` due deliveries until ``now_ms + visibility_ms``, at most
    ``concurrency`` per endpoint; those of endpoints at their limit are parked meanwhile."""
    call = WEBHOOK_CLAIM.flatten(
        _ClaimKeys(keys.webhook_due(), keys.webhook_claims(), keys.webhook_inflight(), keys.webhook_parked()),
        _ClaimArgs(now_ms, visibility_ms, limit, concurrency, scan),
    )
    raw = await WEBHOOK_CLAIM(client, *call)
    if not isinstance(raw, list) or len(raw) % 2:
        raise ScriptReplyError(f"webhook_claim replied {raw!r}")
    return [ClaimedJob(str(raw[i]), _count(raw[i + 1], "webhook_claim")) for i in range(0, len(raw), 2)]


class _AckKeys(NamedTuple):
    claims: str
    inflight: str
    due: str
    parked: str


class _AckArgs(NamedTuple):
    job: str
    token: int
    again_ms: int
    now_ms: int


WEBHOOK_ACK.bind(keys=_AckKeys, args=_AckArgs)


async def webhook_ack(client: Redis, *, job: str, token: int, again_ms: int | None, now_ms: int) -> bool:
    """Let go of a claim (due again at ``again_ms`` if given), its endpoint's next parked
    delivery due at ``now_ms``; False if the claim was no longer ours."""
    call = WEBHOOK_ACK.flatten(
        _AckKeys(keys.webhook_claims(), keys.webhook_inflight(), keys.webhook_due(), keys.webhook_parked()),
        _AckArgs(job, token, again_ms or 0, now_ms),
    )
    raw = await WEBHOOK_ACK(client, *call)
    if raw not in (0, 1):
        raise ScriptReplyError(f"webhook_ack replied {raw!r}")
    return raw == 1


class _ReapKeys(NamedTuple):
    claims: str
    inflight: str
    due: str


class _ReapArgs(NamedTuple):
    now_ms: int
    limit: int


WEBHOOK_REAP.bind(keys=_ReapKeys, args=_ReapArgs)


async def webhook_reap(client: Redis, *, now_ms: int, limit: int) -> int:
    """Make claims past their deadline due again; how many."""
    call = WEBHOOK_REAP.flatten(
        _ReapKeys(keys.webhook_claims(), keys.webhook_inflight(), keys.webhook_due()), _ReapArgs(now_ms, limit)
    )
    return _count(await WEBHOOK_REAP(client, *call), "webhook_reap")


class _ScheduleKeys(NamedTuple):
    due: str
    claims: str
    parked: str


class _ScheduleArgs(NamedTuple):
    mode: str


class _ScheduleJob(NamedTuple):
    job: str
    due_ms: int


WEBHOOK_SCHEDULE.bind(keys=_ScheduleKeys, args=_ScheduleArgs, arg_groups=[_ScheduleJob])


async def webhook_schedule(
    client: Redis, *, jobs: Sequence[tuple[str, int]], mode: Literal["missing", "sooner"]
) -> int:
    """Add (job, due ms) pairs to the queue, as ``mode`` says; how many were added or moved."""
    if not jobs:
        return 0
    call = WEBHOOK_SCHEDULE.flatten(
        _ScheduleKeys(keys.webhook_due(), keys.webhook_claims(), keys.webhook_parked()),
        _ScheduleArgs(mode),
        arg_groups=[[_ScheduleJob(job, due_ms) for job, due_ms in jobs]],
    )
    return _count(await WEBHOOK_SCHEDULE(client, *call), "webhook_schedule")


class _ForgetKeys(NamedTuple):
    parked: str


class _ForgetArgs(NamedTuple):
    endpoint: int


WEBHOOK_FORGET.bind(keys=_ForgetKeys, args=_ForgetArgs)


async def webhook_forget(client: Redis, *, endpoint_pk: int) -> int:
    """Drop a deleted endpoint's parked deliveries; how many."""
    call = WEBHOOK_FORGET.flatten(_ForgetKeys(keys.webhook_parked()), _ForgetArgs(endpoint_pk))
    return _count(await WEBHOOK_FORGET(client, *call), "webhook_forget")
