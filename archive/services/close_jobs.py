"""The close-job queue: each finished period is archived exactly once, by a job.

The submit script schedules one close job per period board (``'<period>:<id>'`` in
the board's due ZSET, due at the period's end + ARCHIVE_GRACE_SECS). A beat task
(:func:`close_jobs_run`) returns expired claims, claims due jobs, archives each
period (period_archive.py) and acknowledges it; a failure is retried with
exponential backoff and, after CLOSE_JOB_MAX_ATTEMPTS, lands in the dead-letter
ZSET that admin shows with a retry action. :func:`close_jobs_catch_up` schedules
any period board that lacks a job (after a Redis restore, say). See docs/archive.md.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from django.conf import settings

from core import clock, errors, keys, metrics
from core.config import BoardConfig, GameConfig
from core.errors import ServiceError
from core.models import Leaderboard
from core.redis import get_redis, run_sync
from games import periods

from .. import scripts
from ..models import ArchivedPeriod
from .period_archive import ARCHIVED_PERIODS, CLOSE_JOB_VISIBILITY_SECS, period_archive

logger = logging.getLogger("archive.services")

# Attempts (failures and expired claims) before a job goes to the dead-letter ZSET.
CLOSE_JOB_MAX_ATTEMPTS = 5
# Backoff after the n-th failure: base * 2^(n-1), capped: 30 s, 1, 2, 4 min, then dead.
CLOSE_JOB_BACKOFF_BASE_SECS = 30
CLOSE_JOB_BACKOFF_CAP_SECS = 30 * 60
# A worker claims one job at a time (so no claim waits unextended behind another
# archive) and stops after this many per board and run: the next beat goes on.
CLOSE_JOBS_PER_BOARD_PER_RUN = 50
# The reaper returns at most this many expired claims per board and call (bounds the script).
CLOSE_JOBS_REAP_BATCH = 100
# A job's last error is kept (for admin) up to this many characters.
CLOSE_JOB_ERROR_MAX_CHARS = 500
# Keys per SCAN step of the catch-up pass over the keyspace.
CATCH_UP_SCAN_COUNT = 1000
# Admin lists at most this many dead jobs per board.
CLOSE_JOBS_DEAD_SHOWN = 1000


def close_job_name(*, period: str, period_id: str) -> str:
    """The member naming a period's close job (as submit_score.lua writes it)."""
    return f"{period}:{period_id}"


@dataclass(frozen=True)
class ClaimedJob:
    job: str
    attempts: int  # failed attempts before this claim
    token: int  # the claim's visibility deadline (ms), which ack / fail / extend must present


@dataclass(frozen=True)
class DeadJob:
    job: str
    died_at: dt.datetime
    attempts: int
    error: str


@dataclass(frozen=True)
class CloseQueue:
    """A board's close jobs, for admin."""

    due: int
    next_due: dt.datetime | None
    claimed: list[tuple[str, dt.datetime]]  # job, visibility deadline
    dead: list[DeadJob]


async def close_jobs_claim(*, ref: str, limit: int = 1) -> list[ClaimedJob]:
    """Claim up to ``limit`` due jobs of a board (one script call: no job goes to two workers)."""
    raw = await scripts.CLOSE_CLAIM(
        get_redis(),
        [keys.close_jobs(ref), keys.close_claims(ref), keys.close_attempts(ref)],
        [clock.now_ms(), CLOSE_JOB_VISIBILITY_SECS * 1000, limit],
    )
    return [ClaimedJob(raw[i], int(raw[i + 1]), int(raw[i + 2])) for i in range(0, len(raw), 3)]


async def close_jobs_reap(*, ref: str) -> list[tuple[str, str]]:
    """Return claims whose deadline passed to the due ZSET (or, out of attempts, to the dead one)."""
    raw = await scripts.CLOSE_REAP(
        get_redis(),
        [
            keys.close_jobs(ref),
            keys.close_claims(ref),
            keys.close_attempts(ref),
            keys.close_dead(ref),
            keys.close_errors(ref),
        ],
        [clock.now_ms(), CLOSE_JOB_MAX_ATTEMPTS, CLOSE_JOBS_REAP_BATCH, "its claim expired: the worker died or hung"],
    )
    return [(raw[i], raw[i + 1]) for i in range(0, len(raw), 2)]


async def _ack(ref: str, job: str, token: int) -> bool:
    keys_list = [keys.close_claims(ref), keys.close_attempts(ref), keys.close_errors(ref)]
    return bool(await scripts.CLOSE_ACK(get_redis(), keys_list, [job, token]))


async def _extend(ref: str, job: str, token: int, deadline: int) -> bool:
    return bool(await scripts.CLOSE_EXTEND(get_redis(), [keys.close_claims(ref)], [job, token, deadline]))


async def _fail(ref: str, job: str, token: int, now_ms: int, error: str) -> tuple[str, int, int]:
    outcome, attempts, when = await scripts.CLOSE_FAIL(
        get_redis(),
        [
            keys.close_jobs(ref),
            keys.close_claims(ref),
            keys.close_attempts(ref),
            keys.close_dead(ref),
            keys.close_errors(ref),
        ],
        [
            job,
            token,
            now_ms,
            CLOSE_JOB_BACKOFF_BASE_SECS * 1000,
            CLOSE_JOB_BACKOFF_CAP_SECS * 1000,
            CLOSE_JOB_MAX_ATTEMPTS,
            error[:CLOSE_JOB_ERROR_MAX_CHARS],
        ],
    )
    return outcome, int(attempts), int(when)


def _run_job(board: Leaderboard, claimed: ClaimedJob) -> bool:
    """Archive one claimed job's period, extending the claim after every chunk; then
    ack it, or record the failure (backoff or dead letter). Returns whether it succeeded."""
    token = claimed.token
    ref = keys.board_ref(board.game.slug, board.slug)

    def extend(done: int, total: int) -> None:
        nonlocal token
        deadline = clock.now_ms() + CLOSE_JOB_VISIBILITY_SECS * 1000
        if not run_sync(_extend, ref, claimed.job, token, deadline):
            raise errors.claim_lost()
        token = deadline

    period, _, period_id = claimed.job.partition(":")
    try:
        period_archive(board=board, period=period, period_id=period_id, progress=extend)
    except Exception as error:
        logger.exception("close job %s of %s failed (attempt %d)", claimed.job, ref, claimed.attempts + 1)
        message = error.message if isinstance(error, ServiceError) else f"{type(error).__name__}: {error}"
        outcome, attempts, _ = run_sync(_fail, ref, claimed.job, token, clock.now_ms(), message)
        metrics.CLOSE_JOBS_CLAIMED.labels(result="failed").inc()
        if outcome == "dead":
            logger.error("close job %s of %s is dead after %d attempts", claimed.job, ref, attempts)
        return False
    if not run_sync(_ack, ref, claimed.job, token):
        logger.warning("close job %s of %s: archived, but its claim had been handed back", claimed.job, ref)
    metrics.CLOSE_JOBS_CLAIMED.labels(result="archived").inc()
    return True


def close_jobs_run(*, worker: str | None = None) -> int:
    """Reap expired claims, then claim and archive every due close job of every board.

    Returns how many jobs succeeded. A failed job is retried later (backoff) or
    dead-lettered; it never stops the others.
    """
    done = 0
    for board in Leaderboard.objects.select_related("game"):
        ref = keys.board_ref(board.game.slug, board.slug)
        for job, outcome in run_sync(lambda ref=ref: close_jobs_reap(ref=ref)):
            logger.warning("close job %s of %s: claim expired; now %s", job, ref, outcome)
            metrics.CLOSE_JOBS_CLAIMED.labels(result="lost").inc()
        for _ in range(CLOSE_JOBS_PER_BOARD_PER_RUN):
            claimed = run_sync(lambda ref=ref: close_jobs_claim(ref=ref))
            if not claimed:
                break
            if _run_job(board, claimed[0]):
                logger.info("close job %s of %s done%s", claimed[0].job, ref, f" by {worker}" if worker else "")
                done += 1
    return done


async def _schedule(ref: str, jobs: list[tuple[str, int]], *, sooner: bool = False) -> int:
    """Add the missing jobs (or, ``sooner``, also bring due ones forward); returns how many changed."""
    if not jobs:
        return 0
    args: list[str | int] = ["sooner" if sooner else "missing", *(value for job in jobs for value in job)]
    return int(
        await scripts.CLOSE_SCHEDULE(
            get_redis(), [keys.close_jobs(ref), keys.close_claims(ref), keys.close_dead(ref)], args
        )
    )


async def _period_boards(refs: set[str], now_ms: int) -> dict[str, dict[str, bool]]:
    """Every period board of these leaderboards, from their boards indexes and a SCAN of the
    keyspace (the index may be gone too), each with whether it already has its
    retention expiry (which the archive sets only once it is complete)."""
    client = get_redis()
    found: dict[str, dict[str, bool]] = defaultdict(dict)
    for ref in refs:
        # Entries whose expiry passed name boards already gone (submit_score.lua trims them).
        indexed = await client.zrangebyscore(keys.boards_index(ref), now_ms, "+inf", withscores=True)
        for board_key, expiry in cast("list[tuple[str, float]]", indexed):
            found[ref][board_key] = expiry != float("inf")
    scanned: list[tuple[str, str]] = []
    async for board_key in client.scan_iter(match=keys.every_board_pattern(), count=CATCH_UP_SCAN_COUNT, _type="zset"):
        parsed = keys.parse_board(board_key)
        if parsed is not None and parsed[0] in refs and parsed[1] in ARCHIVED_PERIODS:
            scanned.append((parsed[0], board_key))
    if scanned:
        pipe = client.pipeline(transaction=False)
        for _, board_key in scanned:
            pipe.pttl(board_key)
        for (ref, board_key), ttl in zip(scanned, await pipe.execute(), strict=True):
            found[ref][board_key] = found[ref].get(board_key, False) or ttl > 0
    return found


def _missing_jobs(board: Leaderboard, found: dict[str, bool]) -> list[tuple[str, int]]:
    """The close jobs one board's period boards need: all but those complete and retained."""
    config = BoardConfig.from_model(board, board.game)
    candidates: dict[tuple[str, str], tuple[str, int, bool]] = {}
    for board_key, retained in found.items():
        parsed = keys.parse_board(board_key)
        if parsed is None or parsed[1] not in ARCHIVED_PERIODS:
            continue
        try:
            period = periods.window_parse(config, parsed[1], parsed[2])
        except periods.InvalidPeriod:
            continue
        if period.ends_at_ms is None:
            continue
        job = close_job_name(period=period.kind, period_id=period.id)
        candidates[(period.kind, period.id)] = (job, period.ends_at_ms + settings.ARCHIVE_GRACE_SECS * 1000, retained)
    complete = set(
        ArchivedPeriod.objects.filter(
            leaderboard=board,
            status=ArchivedPeriod.Status.COMPLETE,
            period_id__in={period_id for _, period_id in candidates},
        ).values_list("period", "period_id")
    )
    return [(job, due) for name, (job, due, retained) in candidates.items() if not (retained and name in complete)]


def close_jobs_catch_up() -> int:
    """Schedule a close job for every period board that has none; returns how many.

    A board needs one unless its archive is complete and it already has its
    retention expiry. Jobs already due, claimed or dead are left alone. Jobs are
    due at the period's end + grace, like those the submit script schedules.
    """
    boards = {keys.board_ref(b.game.slug, b.slug): b for b in Leaderboard.objects.select_related("game")}
    found = run_sync(_period_boards, set(boards), clock.now_ms())
    scheduled = 0
    for ref, period_boards in found.items():
        added = run_sync(_schedule, ref, _missing_jobs(boards[ref], period_boards))
        if added:
            logger.warning("catch-up: scheduled %d missing close job(s) of %s", added, ref)
        scheduled += added
    return scheduled


async def _retry(ref: str, job: str, now_ms: int) -> bool:
    return bool(
        await scripts.CLOSE_RETRY(
            get_redis(),
            [keys.close_dead(ref), keys.close_jobs(ref), keys.close_attempts(ref), keys.close_errors(ref)],
            [job, now_ms],
        )
    )


def close_job_retry(*, board: Leaderboard, job: str) -> None:
    """Give a dead job another full set of attempts, due at once (admin's retry action)."""
    ref = keys.board_ref(board.game.slug, board.slug)
    if not run_sync(_retry, ref, job, clock.now_ms()):
        raise errors.not_found(f"No dead close job {job} in {ref}: nothing to retry.")


# Reads of the queue, for admin. (They live here rather than in selectors.py, which
# the archived-period reads own.)


async def _queue(ref: str) -> list:
    pipe = get_redis().pipeline(transaction=False)
    pipe.zcard(keys.close_jobs(ref))
    pipe.zrange(keys.close_jobs(ref), 0, 0, withscores=True)
    pipe.zrange(keys.close_claims(ref), 0, -1, withscores=True)
    pipe.zrange(keys.close_dead(ref), 0, CLOSE_JOBS_DEAD_SHOWN - 1, withscores=True)
    pipe.hgetall(keys.close_attempts(ref))
    pipe.hgetall(keys.close_errors(ref))
    return await pipe.execute()


def close_jobs_queue(*, board: Leaderboard) -> CloseQueue:
    due, first, claimed, dead, attempts, errors = run_sync(_queue, keys.board_ref(board.game.slug, board.slug))
    return CloseQueue(
        due=int(due),
        next_due=clock.from_ms(first[0][1]) if first else None,
        claimed=[(job, clock.from_ms(deadline)) for job, deadline in claimed],
        dead=[
            DeadJob(job=job, died_at=clock.from_ms(when), attempts=int(attempts.get(job, 0)), error=errors.get(job, ""))
            for job, when in dead
        ],
    )


def close_jobs_dead(*, board: Leaderboard) -> list[DeadJob]:
    """The board's dead close jobs, oldest first."""
    return close_jobs_queue(board=board).dead


def close_jobs_due_now(*, board: Leaderboard) -> int:
    """Make every unarchived period of the board that has an end due at once (a board taken
    out of play archives its windows as if they had ended); returns the jobs made due."""
    ref = keys.board_ref(board.game.slug, board.slug)
    config = BoardConfig.from_model(board, board.game)
    now_ms = clock.now_ms()

    async def unarchived() -> list[str]:
        # '+inf' in the index: written and not archived yet (an archived board's entry is its expiry).
        return cast("list[str]", await get_redis().zrangebyscore(keys.boards_index(ref), "+inf", "+inf"))

    jobs: list[tuple[str, int]] = []
    for board_key in run_sync(unarchived):
        parsed = keys.parse_board(board_key)
        if parsed is None:
            continue
        try:
            period = periods.window_parse(config, parsed[1], parsed[2])
        except periods.InvalidPeriod:
            continue
        if period.ends_at is not None:
            jobs.append((close_job_name(period=period.kind, period_id=period.id), now_ms))
    return int(run_sync(lambda: _schedule(ref, jobs, sooner=True)))


@dataclass(frozen=True)
class BoardBacklog:
    """What waits on one board: unstored ledger entries, due close jobs, dead ones."""

    ref: str
    ledger: int
    due: int
    dead: int


async def board_backlogs(*, games: Sequence[GameConfig]) -> list[BoardBacklog]:
    """Every board's backlog now (the /metrics gauges): three reads a board, pipelined."""
    refs = [keys.board_ref(game.slug, board.slug) for game in games for board in game.boards]
    if not refs:
        return []
    now_ms = clock.now_ms()
    pipe = get_redis().pipeline(transaction=False)
    for ref in refs:
        pipe.xlen(keys.ledger(ref))
        pipe.zcount(keys.close_jobs(ref), "-inf", now_ms)
        pipe.zcard(keys.close_dead(ref))
    found = await pipe.execute()
    return [
        BoardBacklog(ref, int(found[3 * i]), int(found[3 * i + 1]), int(found[3 * i + 2])) for i, ref in enumerate(refs)
    ]
