"""The close-job queue: each finished period is archived exactly once, by a job.

The submit script schedules one close job per period board (``'<period>:<id>'`` in
the board's due ZSET, due at the period's end + ARCHIVE_GRACE_SECS), and the submission
marks the board in the close index (``keys.work_close_due``, core/worksets.py) at that
time. A beat task (:func:`close_jobs_run`) visits only the boards the index says are due:
it returns their expired claims, claims due jobs, archives each period
(period_archive.py) and acknowledges it; a failure is retried with exponential backoff
and, after CLOSE_JOB_MAX_ATTEMPTS, lands in the dead-letter ZSET that admin shows with a
retry action. catch_up.py schedules any period board that lacks a job (after a Redis
restore, say) and repairs lost marks. See docs/archive.md.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from core import clock, errors, keys, metrics
from core.config import BoardConfig, GameConfig
from core.errors import ServiceError
from core.models import Leaderboard
from core.redis import get_redis, run_sync
from core.worksets import close_due, leaderboards_of, mark, settle, settle_close
from games import periods

from .. import scripts
from ..scripts import ClaimedJob
from .period_archive import CLOSE_JOB_VISIBILITY_SECS, period_archive

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
# Boards one run visits at most, earliest due first: a run stays a few seconds long however
# many periods end at once (a midnight for 10,000 boards); the rest are next run's.
CLOSE_BOARDS_PER_RUN = 1000
# Admin lists at most this many dead jobs per board.
CLOSE_JOBS_DEAD_SHOWN = 1000


def close_job_name(*, period: str, period_id: str) -> str:
    """The member naming a period's close job (as submit_score.lua writes it)."""
    return f"{period}:{period_id}"


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
    return await scripts.close_claim(
        get_redis(), ref=ref, now_ms=clock.now_ms(), visibility_ms=CLOSE_JOB_VISIBILITY_SECS * 1000, limit=limit
    )


async def close_jobs_reap(*, ref: str) -> list[scripts.Reaped]:
    """Return claims whose deadline passed to the due ZSET (or, out of attempts, to the dead one)."""
    return await scripts.close_reap(
        get_redis(),
        ref=ref,
        now_ms=clock.now_ms(),
        max_attempts=CLOSE_JOB_MAX_ATTEMPTS,
        limit=CLOSE_JOBS_REAP_BATCH,
        error="its claim expired: the worker died or hung",
    )


async def _ack(ref: str, job: str, token: int) -> bool:
    return await scripts.close_ack(get_redis(), ref=ref, job=job, token=token)


async def _defer(ref: str, job: str, token: int, due_ms: int) -> bool:
    return await scripts.close_defer(get_redis(), ref=ref, job=job, token=token, due_ms=due_ms)


def _settles_later(board: Leaderboard, period: str, period_id: str) -> int | None:
    """When a competing period whose review buffer is still running settles (ms); None when its
    job may run now. A board out of play settles at once: nobody will play it again."""
    config = BoardConfig.from_model(board, board.game)
    competition = config.competition
    if competition is None or period != competition.window or not competition.settle_delay_secs or not board.active:
        return None
    try:
        resolved = periods.window_parse(config, period, period_id)
    except periods.InvalidPeriod:
        return None  # the archive says what is wrong with it
    settles = periods.settles_at(resolved, competition)
    if settles is None or periods.superseded(config, resolved) or clock.now() >= settles:
        return None
    return clock.to_ms(settles)


async def _extend(ref: str, job: str, token: int, deadline: int) -> bool:
    return await scripts.close_extend(get_redis(), ref=ref, job=job, token=token, deadline_ms=deadline)


async def _fail(ref: str, job: str, token: int, now_ms: int, error: str) -> scripts.Failed:
    return await scripts.close_fail(
        get_redis(),
        ref=ref,
        job=job,
        token=token,
        now_ms=now_ms,
        backoff_ms=CLOSE_JOB_BACKOFF_BASE_SECS * 1000,
        backoff_cap_ms=CLOSE_JOB_BACKOFF_CAP_SECS * 1000,
        max_attempts=CLOSE_JOB_MAX_ATTEMPTS,
        error=error[:CLOSE_JOB_ERROR_MAX_CHARS],
    )


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
    later = _settles_later(board, period, period_id)
    if later is not None:
        # Not a failure: the period's review buffer runs until then (settle_delay_secs).
        run_sync(_defer, ref, claimed.job, token, later)
        metrics.CLOSE_JOBS_CLAIMED.labels(result="deferred").inc()
        return False
    try:
        period_archive(board=board, period=period, period_id=period_id, progress=extend)
    except Exception as error:
        logger.exception("close job %s of %s failed (attempt %d)", claimed.job, ref, claimed.attempts + 1)
        message = error.message if isinstance(error, ServiceError) else f"{type(error).__name__}: {error}"
        failed = run_sync(_fail, ref, claimed.job, token, clock.now_ms(), message)
        metrics.CLOSE_JOBS_CLAIMED.labels(result="failed").inc()
        if failed.outcome is scripts.FailOutcome.DEAD:
            logger.error("close job %s of %s is dead after %d attempts", claimed.job, ref, failed.attempts)
            run_sync(lambda: mark(dead=[ref], now_ms=clock.now_ms()))
        return False
    if not run_sync(_ack, ref, claimed.job, token):
        logger.warning("close job %s of %s: archived, but its claim had been handed back", claimed.job, ref)
    metrics.CLOSE_JOBS_CLAIMED.labels(result="archived").inc()
    return True


async def close_jobs_next(*, ref: str) -> int | None:
    """When the board's close jobs next need a visit (ms): its earliest due job or claim
    deadline (a claim past it is reaped then); None if it has neither."""
    pipe = get_redis().pipeline(transaction=False)
    pipe.zrange(keys.close_jobs(ref), 0, 0, withscores=True)
    pipe.zrange(keys.close_claims(ref), 0, 0, withscores=True)
    first = [int(score) for found in await pipe.execute() for _, score in found]
    return min(first, default=None)


def _run_board(board: Leaderboard, ref: str, worker: str | None) -> int:
    """Reap the board's expired claims, then claim and archive its due jobs; returns how many succeeded."""
    dead = []
    for job, outcome in run_sync(lambda: close_jobs_reap(ref=ref)):
        logger.warning("close job %s of %s: claim expired; now %s", job, ref, outcome)
        metrics.CLOSE_JOBS_CLAIMED.labels(result="lost").inc()
        if outcome is scripts.ReapOutcome.DEAD:
            dead.append(job)
    if dead:
        run_sync(lambda: mark(dead=[ref], now_ms=clock.now_ms()))
    done = 0
    for _ in range(CLOSE_JOBS_PER_BOARD_PER_RUN):
        claimed = run_sync(lambda: close_jobs_claim(ref=ref))
        if not claimed:
            break
        if _run_job(board, claimed[0]):
            logger.info("close job %s of %s done%s", claimed[0].job, ref, f" by {worker}" if worker else "")
            done += 1
    return done


def close_jobs_run(*, worker: str | None = None) -> int:
    """Visit the boards whose close jobs are due (the close index, earliest first): reap expired
    claims, then claim and archive every due job; then set each board's next time in the index.

    Returns how many jobs succeeded. A failed job is retried later (backoff) or
    dead-lettered; it never stops the others. Boards with nothing due are not visited.
    """
    refs = run_sync(lambda: close_due(now_ms=clock.now_ms(), limit=CLOSE_BOARDS_PER_RUN))
    if not refs:
        return 0
    boards = leaderboards_of(refs)
    done = 0
    for ref in refs:
        board = boards.get(ref)
        if board is None:
            # The board is gone (its game deleted with its keys): nothing left to close.
            run_sync(lambda ref=ref: get_redis().zrem(keys.work_close_due(), ref))
            continue
        done += _run_board(board, ref, worker)
        run_sync(lambda ref=ref: settle_close(ref, next_visit=lambda: close_jobs_next(ref=ref)))
    return done


async def close_jobs_schedule(*, ref: str, jobs: Sequence[tuple[str, int]], sooner: bool = False) -> int:
    """Add the board's missing jobs (or, ``sooner``, also bring due ones forward), then mark the
    board in the close index; returns how many jobs changed."""
    if not jobs:
        return 0
    changed = await scripts.close_schedule(get_redis(), ref=ref, mode="sooner" if sooner else "missing", jobs=jobs)
    if changed:
        await mark(close={ref: min(due for _, due in jobs)}, now_ms=clock.now_ms())
    return changed


async def _retry(ref: str, job: str, now_ms: int) -> bool:
    retried = await scripts.close_retry(get_redis(), ref=ref, job=job, now_ms=now_ms)
    if retried:
        await mark(close={ref: now_ms}, now_ms=now_ms)
        await close_jobs_dead_settle(ref=ref, now_ms=now_ms)
    return retried


async def close_jobs_dead_settle(*, ref: str, now_ms: int) -> bool:
    """Unmark the board in the dead set unless it still holds dead jobs; returns whether it does."""

    async def remaining() -> bool:
        return bool(await get_redis().zcard(keys.close_dead(ref)))

    return await settle(keys.work_close_dead(), ref, remaining=remaining, now_ms=now_ms)


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
    return int(run_sync(lambda: close_jobs_schedule(ref=ref, jobs=jobs, sooner=True)))


@dataclass(frozen=True)
class BoardBacklog:
    """What waits on one board: unstored ledger entries, due close jobs, dead ones."""

    ref: str
    ledger: int
    due: int
    dead: int


async def board_backlogs(*, games: Sequence[GameConfig]) -> list[BoardBacklog]:
    """The backlog of every board of these games that has one (the /metrics gauges). Read from
    the work sets: only marked boards can have one, so a scrape costs what waits, not what
    exists (a board whose mark a crash lost shows once the background's sweep marks it again)."""
    known = {keys.board_ref(game.slug, board.slug) for game in games for board in game.boards}
    now_ms = clock.now_ms()
    client = get_redis()
    pipe = client.pipeline(transaction=False)
    pipe.zrange(keys.work_ledger(), 0, -1)
    pipe.zrangebyscore(keys.work_close_due(), "-inf", now_ms)
    pipe.zrange(keys.work_close_dead(), 0, -1)
    marked = [[ref for ref in found if ref in known] for found in await pipe.execute()]
    pipe = client.pipeline(transaction=False)
    for ref in marked[0]:
        pipe.xlen(keys.ledger(ref))
    for ref in marked[1]:
        pipe.zcount(keys.close_jobs(ref), "-inf", now_ms)
    for ref in marked[2]:
        pipe.zcard(keys.close_dead(ref))
    counts = iter(await pipe.execute() if len(pipe) else [])
    found: dict[str, list[int]] = {}
    for kind, refs in enumerate(marked):
        for ref in refs:
            found.setdefault(ref, [0, 0, 0])[kind] = int(next(counts))
    return [BoardBacklog(ref, *values) for ref, values in found.items()]
