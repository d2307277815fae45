"""The delivery run: claim due deliveries from the queue, send each (sending.py), record the
attempt and its verdict in the database, then let go of the claim, due again when it is to be
retried. At least once: a run killed mid-request leaves its claims to run out
(WEBHOOK_VISIBILITY_SECS), and the next run's reaper makes them due again; the receiver may then
get one event twice, with one ``webhook-id``."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import random
from dataclasses import dataclass

import httpx
from asgiref.sync import sync_to_async
from django.conf import settings
from redis.asyncio.lock import Lock
from redis.exceptions import LockError

from core import clock, keys, metrics
from core.errors import REDIS_FAILURES
from core.redis import get_redis

from .. import scripts
from ..models import Attempt, Delivery, Endpoint
from ..scripts import ClaimedJob
from . import recording
from .recording import Verdict
from .sending import Answer, attempt_send

logger = logging.getLogger("webhooks")

# The Standard Webhooks schedule: after the n-th failed attempt, the next comes this long after
# (5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h): ten attempts over about three days.
RETRY_SCHEDULE_SECS = (5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400)
# Each wait is lengthened by up to this fraction, so that an endpoint's failures after an outage
# do not all come back in the same second. Never shortened: the schedule is a promise that a
# receiver down for three days still gets the event (its tenth attempt comes 75.6 h on or later).
RETRY_JITTER = 0.1
# A Retry-After longer than the schedule's wait is honoured up to this long.
RETRY_AFTER_MAX_SECS = 86400
# Requests one run has in flight at once (over all endpoints; each has its own limit too).
WEBHOOK_RUN_SLOTS = 64
# A run claims new work for this long, then finishes what it holds and ends (beat starts the next).
WEBHOOK_RUN_SECS = 25.0
# How often a run with requests in flight looks for more due deliveries.
WEBHOOK_POLL_SECS = 0.2
# Due deliveries one claim looks at (those of endpoints at their limit are parked, not claimed).
WEBHOOK_CLAIM_SCAN = 1000
# Claims past their deadline made due again per run (a run killed mid-way leaves at most its slots).
WEBHOOK_REAP_BATCH = 1000
# Beyond the request's timeout, the time to record its attempt before the claim runs out (a
# claim that runs out is sent again: at least once, never lost).
WEBHOOK_RECORD_MARGIN_SECS = 15
# The run's lock lasts this long unless renewed (each turn of its loop renews it): a run killed
# holds up the next one this long at most.
WEBHOOK_RUNNER_LEASE_SECS = 10


def visibility_secs() -> float:
    return settings.WEBHOOK_TIMEOUT_SECS + WEBHOOK_RECORD_MARGIN_SECS


def retry_wait_secs(*, attempts: int, retry_after: float | None, rand: random.Random | None = None) -> float | None:
    """How long after its ``attempts``-th failed attempt a delivery is sent again; None when the
    schedule is over. A receiver's Retry-After is honoured when longer (up to a day)."""
    if attempts > len(RETRY_SCHEDULE_SECS):
        return None
    wait = RETRY_SCHEDULE_SECS[attempts - 1] * (rand or random).uniform(1, 1 + RETRY_JITTER)
    if retry_after is not None:
        wait = max(wait, min(retry_after, RETRY_AFTER_MAX_SECS))
    return wait


def verdict_of(answer: Answer, *, attempts: int, now: dt.datetime) -> Verdict:
    """What an answer means for the delivery after its ``attempts``-th attempt."""
    code = answer.status_code
    if code is not None and 200 <= code < 300:
        return Verdict(Attempt.Outcome.DELIVERED)
    if code == 410:
        return Verdict(Attempt.Outcome.FAILED, disable="The endpoint answered 410 Gone.")
    if code is None or code == 429 or code >= 500:
        wait = retry_wait_secs(attempts=attempts, retry_after=answer.retry_after_secs)
        if wait is not None:
            return Verdict(Attempt.Outcome.RETRY, again_at=now + dt.timedelta(seconds=wait))
        return Verdict(Attempt.Outcome.FAILED, reason=f"Gave up after {attempts} attempts.")
    return Verdict(Attempt.Outcome.FAILED, reason=f"Answered {code}: not retried (only 429 and 5xx are).")


@dataclass
class RunResult:
    delivered: int = 0
    retried: int = 0
    failed: int = 0
    skipped: int = 0  # claimed, but gone, finished or of a disabled endpoint
    ran: bool = True  # False: another run held the lock


async def webhooks_run(*, budget_secs: float = WEBHOOK_RUN_SECS) -> RunResult:
    """One delivery run (one at a time: a Redis lock, renewed as the run goes, which a killed
    run holds up to WEBHOOK_RUNNER_LEASE_SECS). Returns what it did."""
    lock = get_redis().lock(keys.webhook_runner(), timeout=WEBHOOK_RUNNER_LEASE_SECS, blocking=False)
    if not await lock.acquire():
        return RunResult(ran=False)
    try:
        return await _run(budget_secs, lock)
    finally:
        try:
            await lock.release()
        except LockError:  # it ran out meanwhile: nothing to let go
            pass


async def _run(budget_secs: float, lock: Lock) -> RunResult:
    client = get_redis()
    result = RunResult()
    await scripts.webhook_reap(client, now_ms=clock.now_ms(), limit=WEBHOOK_REAP_BATCH)
    ends = clock.monotonic() + budget_secs
    running: set[asyncio.Task[str]] = set()
    limits = httpx.Limits(max_connections=WEBHOOK_RUN_SLOTS, max_keepalive_connections=WEBHOOK_RUN_SLOTS)
    async with httpx.AsyncClient(limits=limits, follow_redirects=False, trust_env=False) as http:
        while True:
            free = WEBHOOK_RUN_SLOTS - len(running)
            if free > 0 and clock.monotonic() < ends:
                for job in await _claim(free):
                    running.add(asyncio.create_task(_deliver(http, job)))
            if not running:
                break
            done, running = await asyncio.wait(running, timeout=WEBHOOK_POLL_SECS, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                outcome = task.result()
                setattr(result, outcome, getattr(result, outcome) + 1)
            try:
                await lock.reacquire()
            except LockError:  # stalled past its lease: another run may be on; finish, take no more
                ends = 0.0
    return result


async def _claim(limit: int) -> list[ClaimedJob]:
    return await scripts.webhook_claim(
        get_redis(),
        now_ms=clock.now_ms(),
        visibility_ms=int(visibility_secs() * 1000),
        limit=limit,
        concurrency=settings.WEBHOOK_ENDPOINT_CONCURRENCY,
        scan=WEBHOOK_CLAIM_SCAN,
    )


async def _deliver(http: httpx.AsyncClient, job: ClaimedJob) -> str:
    """Send one claimed delivery and record it; returns the RunResult field it counts in. A
    failure to record (the database down) keeps the claim: it runs out and is sent again."""
    try:
        outcome, again = await _attempt(http, job)
    except Exception:
        logger.exception("webhook job %s: not recorded; due again when its claim runs out", job.job)
        return "skipped"
    try:
        await scripts.webhook_ack(get_redis(), job=job.job, token=job.token, again_ms=again, now_ms=clock.now_ms())
    except REDIS_FAILURES as error:  # the claim runs out, and the delivery is sent again
        logger.warning("webhook job %s: could not let go (%s: %s)", job.job, type(error).__name__, error)
    return outcome


async def _attempt(http: httpx.AsyncClient, job: ClaimedJob) -> tuple[str, int | None]:
    _, delivery_pk = scripts.job_parse(job.job)
    delivery = await sync_to_async(recording.delivery_load)(delivery_pk)
    if delivery is None or delivery.status != Delivery.Status.PENDING:
        return "skipped", None
    endpoint: Endpoint = delivery.endpoint
    now = clock.now()
    if not endpoint.enabled:
        reason = f"The endpoint is disabled: {endpoint.disabled_reason or 'by the studio'}."
        await sync_to_async(recording.delivery_abandon)(delivery, reason=reason, now=now)
        return "skipped", None
    answer = await attempt_send(
        http,
        url=endpoint.url,
        msg_id=delivery.event_id,
        payload=delivery.payload,
        signing=recording.signing_secrets(endpoint, now),
        now=now,
    )
    verdict = verdict_of(answer, attempts=delivery.attempts + 1, now=now)
    await sync_to_async(recording.attempt_record)(delivery, answer, verdict, now=now)
    metrics.WEBHOOK_ATTEMPTS.labels(result=verdict.outcome).inc()
    metrics.WEBHOOK_ATTEMPT_SECONDS.observe(answer.duration_ms / 1000)
    if verdict.outcome == Attempt.Outcome.RETRY:
        assert verdict.again_at is not None
        return "retried", clock.to_ms(verdict.again_at)
    return ("delivered" if verdict.outcome == Attempt.Outcome.DELIVERED else "failed"), None
