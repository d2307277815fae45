"""Closing finished periods: the close-job queue and the archive of final standings.

The submit script schedules one close job per period board (``'<period>:<id>'`` in
the game's due ZSET, due at the period's end + ARCHIVE_GRACE_SECS). A beat task
(:func:`close_jobs_run`) returns expired claims, claims due jobs, archives each
period into ArchivedPeriod / ArchivedStanding and acknowledges it; a failure is
retried with exponential backoff and, after CLOSE_JOB_MAX_ATTEMPTS, lands in the
dead-letter ZSET that admin shows with a retry action. :func:`close_jobs_catch_up`
schedules any period board that lacks a job (after a Redis restore, say).

The archive (:func:`period_archive`) streams the board by rank, one chunk at a
time, upserting rows marked with the run's id; rows of other runs are deleted at
the end, so a re-run after a crash ends with exactly the rows of the board. Only
then does the Redis board get its retention expiry. See docs/archive.md.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import uuid
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from django.conf import settings
from django.db import transaction
from redis.exceptions import RedisError

from core import clock, keys
from core.config import GameConfig
from core.errors import ServiceError
from core.models import Game
from core.redis import get_redis, run_sync
from games import periods
from games import scripts as board_scripts

from . import scripts
from .models import ArchivedPeriod, ArchivedStanding

logger = logging.getLogger(__name__)

# Standings read from Redis and written to the database per step: one board_window
# call (~10 ms of Redis time) and one bulk upsert. Memory holds one chunk at a time.
ARCHIVE_CHUNK_SIZE = 5000
# A claimed job is presumed lost (its worker died or hung) when its claim is not
# extended for this long. The worker extends it after every chunk, so this only
# has to outlast one chunk plus the start of an archive, with a wide margin.
CLOSE_JOB_VISIBILITY_SECS = 600
# The archive lock lives as long as a claim, for the same reason (extended per chunk).
ARCHIVE_LOCK_SECS = CLOSE_JOB_VISIBILITY_SECS
# Attempts (failures and expired claims) before a job goes to the dead-letter ZSET.
CLOSE_JOB_MAX_ATTEMPTS = 5
# Backoff after the n-th failure: base * 2^(n-1), capped: 30 s, 1, 2, 4 min, then dead.
CLOSE_JOB_BACKOFF_BASE_SECS = 30
CLOSE_JOB_BACKOFF_CAP_SECS = 30 * 60
# A worker claims one job at a time (so no claim waits unextended behind another
# archive) and stops after this many per game and run: the next beat goes on.
CLOSE_JOBS_PER_GAME_PER_RUN = 50
# The reaper returns at most this many expired claims per game and call (bounds the script).
CLOSE_JOBS_REAP_BATCH = 100
# A job's last error is kept (for admin) up to this many characters.
CLOSE_JOB_ERROR_MAX_CHARS = 500
# Keys per SCAN step of the catch-up pass over the keyspace.
CATCH_UP_SCAN_COUNT = 1000
# Admin lists at most this many dead jobs per game.
CLOSE_JOBS_DEAD_SHOWN = 1000

ARCHIVED_PERIODS: tuple[str, ...] = tuple(p for p in periods.PERIODS if p != periods.ALL_TIME)

Progress = Callable[[int, int], None]


def close_job_name(*, period: str, period_id: str) -> str:
    """The member naming a period's close job (as submit_score.lua writes it)."""
    return f"{period}:{period_id}"


# --------------------------------------------------------------------------- the archive


def _period(game: Game, period: str, period_id: str) -> periods.Period:
    if period == periods.ALL_TIME:
        raise ServiceError(
            422, "not_archived", "The all-time board never ends, so it is never archived.", field="period"
        )
    if period not in ARCHIVED_PERIODS:
        choices = ", ".join(ARCHIVED_PERIODS)
        raise ServiceError(422, "invalid", f"Unknown period {period!r}; use one of {choices}.", field="period")
    try:
        return periods.parse(period, period_id, game.timezone)
    except periods.InvalidPeriod as error:
        raise ServiceError(422, "invalid", f"{error}.", field="period_id") from None


async def _lock(lock_key: str, action: str, run: str) -> bool:
    return bool(await scripts.CLOSE_LOCK(get_redis(), [lock_key], [action, run, ARCHIVE_LOCK_SECS * 1000]))


async def _board_state(slug: str, board_key: str) -> tuple[bool, bool]:
    """Whether the board exists, and whether it is known to have existed (an empty
    board vanishes from Redis: its last players were hidden into the stash)."""
    pipe = get_redis().pipeline(transaction=False)
    pipe.exists(board_key)
    pipe.zscore(keys.boards_index(slug), board_key)
    pipe.exists(keys.hidden_stash(slug, board_key))
    exists, indexed, stashed = await pipe.execute()
    # '+inf' in the index: written and not yet archived (a retained board's entry is finite).
    return bool(exists), indexed == float("inf") or bool(stashed)


async def _window(board_key: str, names_key: str, offset: int, limit: int) -> list:
    return await board_scripts.BOARD_WINDOW(get_redis(), [board_key, names_key], ["page", offset, limit])


async def _retain(slug: str, board_key: str, now_ms: int) -> None:
    retention_ms = settings.PERIOD_RETENTION_SECS * 1000
    await scripts.CLOSE_RETAIN(
        get_redis(),
        [board_key, keys.boards_index(slug), keys.hidden_stash(slug, board_key), keys.board_version(board_key)],
        [retention_ms, now_ms + retention_ms],
    )


def _board_changed(period: periods.Period) -> ServiceError:
    return ServiceError(
        409,
        "board_changed",
        f"The {period.kind} board {period.id} changed while it was being archived (a player hidden or "
        "restored); the next attempt archives it again.",
    )


def period_archive(
    *,
    game: Game,
    period: str,
    period_id: str,
    force: bool = False,
    chunk_size: int = ARCHIVE_CHUNK_SIZE,
    progress: Progress | None = None,
    after_chunk: Callable[[int], None] | None = None,
) -> ArchivedPeriod:
    """Copy a finished period's board into the database; then give the board its retention expiry.

    Idempotent: a complete archive is returned as it is (only the retention expiry
    is applied if a crash skipped it); an unfinished one (a crash, a snapshot) is
    archived again, ending with exactly the rows of the board. ``force`` snapshots a
    period still open (status snapshot; its close job later archives it over).

    ``progress(done, total)`` is called after each chunk; ``after_chunk(index)`` is a
    test hook (raise in it to simulate a crash). Raises ServiceError: 422 for
    all-time or a bad period, 409 for an open period without ``force``, a run
    already in progress, or a board that changed meanwhile; 404 when the board is
    not in Redis and was never known to exist there (nothing to archive).
    """
    now = clock.now()
    resolved = _period(game, period, period_id)
    assert resolved.ends_at is not None and resolved.starts_at is not None
    finished = now >= resolved.ends_at
    if not finished and not force:
        raise ServiceError(
            409,
            "period_open",
            f"The {period} period {period_id} is still open (it ends at {resolved.ends_at.isoformat()}); "
            "force a snapshot to archive it now.",
        )
    if chunk_size < 1:
        raise ServiceError(422, "invalid", "The chunk size must be at least 1.", field="chunk_size")
    config = GameConfig.from_model(game, "0")
    slug = game.slug
    board_key = keys.board(slug, period, period_id)
    names_key = keys.names(slug)
    lock_key = keys.archive_lock(slug, period, period_id)
    run = uuid.uuid4().hex
    if not run_sync(_lock, lock_key, "take", run):
        raise ServiceError(
            409,
            "archive_busy",
            f"The {period} period {period_id} is being archived by another run right now; try again in a few minutes.",
        )
    try:
        existing = ArchivedPeriod.objects.filter(game=game, period=period, period_id=period_id).first()
        if existing is not None and existing.status == ArchivedPeriod.Status.COMPLETE:
            run_sync(_retain, slug, board_key, clock.now_ms())
            return existing
        exists, known = run_sync(_board_state, slug, board_key)
        if not exists and not known:
            raise ServiceError(
                404,
                "board_missing",
                f"No {period} board {period_id} is in Redis and it was never archived: nothing to archive. "
                "If Redis lost its data, run rebuild_leaderboards first.",
            )
        archived, _ = ArchivedPeriod.objects.update_or_create(
            game=game,
            period=period,
            period_id=period_id,
            defaults={
                "starts_at": resolved.starts_at,
                "ends_at": resolved.ends_at,
                "status": ArchivedPeriod.Status.ARCHIVING if finished else ArchivedPeriod.Status.SNAPSHOT,
                "run": run,
            },
        )

        # Chunks by rank; each after the first re-reads the previous chunk's last player,
        # so a board that shifted under the read (a player hidden or restored) is noticed.
        written = 0
        previous: str | None = None
        index = 0
        while True:
            overlap = 1 if previous is not None else 0
            raw = run_sync(_window, board_key, names_key, written - overlap, chunk_size + overlap)
            on_board = int(raw[0])
            rows = raw[4:]
            if overlap:
                if rows and rows[0] == previous:
                    rows = rows[4:]
                elif finished:
                    raise _board_changed(resolved)
            if not rows:
                break
            standings = [
                ArchivedStanding(
                    archived_period=archived,
                    rank=int(rows[i + 2]),
                    player_id=rows[i],
                    display_name=rows[i + 3][:64],
                    score=config.score_from_sort_key(rows[i + 1]),
                    run=run,
                )
                for i in range(0, len(rows), 4)
            ]
            with transaction.atomic():
                ArchivedStanding.objects.bulk_create(
                    standings,
                    update_conflicts=True,
                    unique_fields=["archived_period", "player_id"],
                    update_fields=["rank", "display_name", "score", "run"],
                )
            written += len(standings)
            previous = standings[-1].player_id
            if progress is not None:
                progress(written, max(on_board, written))
            if not run_sync(_lock, lock_key, "extend", run):
                raise ServiceError(409, "archive_busy", "This archive run lost its lock to another run; it stopped.")
            if after_chunk is not None:
                after_chunk(index)
            index += 1
            if written >= on_board:
                break

        with transaction.atomic():
            # Rows of earlier runs whose players are no longer on the board (a snapshot
            # overwritten by the final state, or a crashed run's rows): one DELETE.
            ArchivedStanding.objects.filter(archived_period=archived).exclude(run=run).delete()
            total = ArchivedStanding.objects.filter(archived_period=archived).count()
            if finished and total != run_sync(lambda: get_redis().zcard(board_key)):
                raise _board_changed(resolved)
            archived.total = total
            archived.status = ArchivedPeriod.Status.COMPLETE if finished else ArchivedPeriod.Status.SNAPSHOT
            archived.archived_at = now
            archived.save(update_fields=["total", "status", "archived_at"])
        if finished:
            # Only now: a board never expires before its archive is complete.
            run_sync(_retain, slug, board_key, clock.now_ms())
        return archived
    finally:
        # The lock expires by itself: never let a failed release hide the run's own error.
        with contextlib.suppress(RedisError, OSError):
            run_sync(_lock, lock_key, "release", run)


# --------------------------------------------------------------------------- the close-job queue


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
    """A game's close jobs, for admin."""

    due: int
    next_due: dt.datetime | None
    claimed: list[tuple[str, dt.datetime]]  # job, visibility deadline
    dead: list[DeadJob]


async def close_jobs_claim(*, slug: str, limit: int = 1) -> list[ClaimedJob]:
    """Claim up to ``limit`` due jobs of a game (one script call: no job goes to two workers)."""
    raw = await scripts.CLOSE_CLAIM(
        get_redis(),
        [keys.close_jobs(slug), keys.close_claims(slug), keys.close_attempts(slug)],
        [clock.now_ms(), CLOSE_JOB_VISIBILITY_SECS * 1000, limit],
    )
    return [ClaimedJob(raw[i], int(raw[i + 1]), int(raw[i + 2])) for i in range(0, len(raw), 3)]


async def close_jobs_reap(*, slug: str) -> list[tuple[str, str]]:
    """Return claims whose deadline passed to the due ZSET (or, out of attempts, to the dead one)."""
    raw = await scripts.CLOSE_REAP(
        get_redis(),
        [
            keys.close_jobs(slug),
            keys.close_claims(slug),
            keys.close_attempts(slug),
            keys.close_dead(slug),
            keys.close_errors(slug),
        ],
        [clock.now_ms(), CLOSE_JOB_MAX_ATTEMPTS, CLOSE_JOBS_REAP_BATCH, "its claim expired: the worker died or hung"],
    )
    return [(raw[i], raw[i + 1]) for i in range(0, len(raw), 2)]


async def _ack(slug: str, job: str, token: int) -> bool:
    keys_list = [keys.close_claims(slug), keys.close_attempts(slug), keys.close_errors(slug)]
    return bool(await scripts.CLOSE_ACK(get_redis(), keys_list, [job, token]))


async def _extend(slug: str, job: str, token: int, deadline: int) -> bool:
    return bool(await scripts.CLOSE_EXTEND(get_redis(), [keys.close_claims(slug)], [job, token, deadline]))


async def _fail(slug: str, job: str, token: int, now_ms: int, error: str) -> tuple[str, int, int]:
    outcome, attempts, when = await scripts.CLOSE_FAIL(
        get_redis(),
        [
            keys.close_jobs(slug),
            keys.close_claims(slug),
            keys.close_attempts(slug),
            keys.close_dead(slug),
            keys.close_errors(slug),
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


def _run_job(game: Game, claimed: ClaimedJob) -> bool:
    """Archive one claimed job's period, extending the claim after every chunk; then
    ack it, or record the failure (backoff or dead letter). Returns whether it succeeded."""
    token = claimed.token

    def extend(done: int, total: int) -> None:
        nonlocal token
        deadline = clock.now_ms() + CLOSE_JOB_VISIBILITY_SECS * 1000
        if not run_sync(_extend, game.slug, claimed.job, token, deadline):
            raise ServiceError(409, "claim_lost", "The job's claim expired and was handed back; this run stopped.")
        token = deadline

    period, _, period_id = claimed.job.partition(":")
    try:
        period_archive(game=game, period=period, period_id=period_id, progress=extend)
    except Exception as error:
        logger.exception("close job %s of %s failed (attempt %d)", claimed.job, game.slug, claimed.attempts + 1)
        message = error.message if isinstance(error, ServiceError) else f"{type(error).__name__}: {error}"
        outcome, attempts, _ = run_sync(_fail, game.slug, claimed.job, token, clock.now_ms(), message)
        if outcome == "dead":
            logger.error("close job %s of %s is dead after %d attempts", claimed.job, game.slug, attempts)
        return False
    if not run_sync(_ack, game.slug, claimed.job, token):
        logger.warning("close job %s of %s: archived, but its claim had been handed back", claimed.job, game.slug)
    return True


def close_jobs_run(*, worker: str | None = None) -> int:
    """Reap expired claims, then claim and archive every due close job of every game.

    Returns how many jobs succeeded. A failed job is retried later (backoff) or
    dead-lettered; it never stops the others.
    """
    done = 0
    for game in Game.objects.all():
        for job, outcome in run_sync(lambda slug=game.slug: close_jobs_reap(slug=slug)):
            logger.warning("close job %s of %s: claim expired; now %s", job, game.slug, outcome)
        for _ in range(CLOSE_JOBS_PER_GAME_PER_RUN):
            claimed = run_sync(lambda slug=game.slug: close_jobs_claim(slug=slug))
            if not claimed:
                break
            if _run_job(game, claimed[0]):
                logger.info("close job %s of %s done%s", claimed[0].job, game.slug, f" by {worker}" if worker else "")
                done += 1
    return done


async def _schedule(slug: str, jobs: list[tuple[str, int]]) -> int:
    if not jobs:
        return 0
    args: list[str | int] = [value for job in jobs for value in job]
    return int(
        await scripts.CLOSE_SCHEDULE(
            get_redis(), [keys.close_jobs(slug), keys.close_claims(slug), keys.close_dead(slug)], args
        )
    )


async def _period_boards(slugs: set[str], now_ms: int) -> dict[str, dict[str, bool]]:
    """Every period board of these games, from their boards indexes and a SCAN of the
    keyspace (the index may be gone too), each with whether it already has its
    retention expiry (which the archive sets only once it is complete)."""
    client = get_redis()
    found: dict[str, dict[str, bool]] = defaultdict(dict)
    for slug in slugs:
        # Entries whose expiry passed name boards already gone (submit_score.lua trims them).
        indexed = await client.zrangebyscore(keys.boards_index(slug), now_ms, "+inf", withscores=True)
        for board_key, expiry in cast("list[tuple[str, float]]", indexed):
            found[slug][board_key] = expiry != float("inf")
    scanned: list[tuple[str, str]] = []
    async for board_key in client.scan_iter(match=keys.every_game_pattern(), count=CATCH_UP_SCAN_COUNT, _type="zset"):
        parsed = keys.parse_board(board_key)
        if parsed is not None and parsed[0] in slugs and parsed[1] in ARCHIVED_PERIODS:
            scanned.append((parsed[0], board_key))
    if scanned:
        pipe = client.pipeline(transaction=False)
        for _, board_key in scanned:
            pipe.pttl(board_key)
        for (slug, board_key), ttl in zip(scanned, await pipe.execute(), strict=True):
            found[slug][board_key] = found[slug].get(board_key, False) or ttl > 0
    return found


def close_jobs_catch_up() -> int:
    """Schedule a close job for every period board that has none; returns how many.

    A board needs one unless its archive is complete and it already has its
    retention expiry. Jobs already due, claimed or dead are left alone. Jobs are
    due at the period's end + grace, like those the submit script schedules.
    """
    games = {game.slug: game for game in Game.objects.all()}
    boards = run_sync(_period_boards, set(games), clock.now_ms())
    scheduled = 0
    for slug, found in boards.items():
        game = games[slug]
        candidates: dict[tuple[str, str], tuple[str, int, bool]] = {}
        for board_key, retained in found.items():
            parsed = keys.parse_board(board_key)
            if parsed is None or parsed[1] not in ARCHIVED_PERIODS:
                continue
            try:
                period = periods.parse(parsed[1], parsed[2], game.timezone)
            except periods.InvalidPeriod:
                continue
            assert period.ends_at_ms is not None
            job = close_job_name(period=period.kind, period_id=period.id)
            candidates[(period.kind, period.id)] = (
                job,
                period.ends_at_ms + settings.ARCHIVE_GRACE_SECS * 1000,
                retained,
            )
        complete = set(
            ArchivedPeriod.objects.filter(
                game=game,
                status=ArchivedPeriod.Status.COMPLETE,
                period_id__in={period_id for _, period_id in candidates},
            ).values_list("period", "period_id")
        )
        jobs = [(job, due) for name, (job, due, retained) in candidates.items() if not (retained and name in complete)]
        added = run_sync(_schedule, slug, jobs)
        if added:
            logger.warning("catch-up: scheduled %d missing close job(s) of %s", added, slug)
        scheduled += added
    return scheduled


async def _retry(slug: str, job: str, now_ms: int) -> bool:
    return bool(
        await scripts.CLOSE_RETRY(
            get_redis(),
            [keys.close_dead(slug), keys.close_jobs(slug), keys.close_attempts(slug), keys.close_errors(slug)],
            [job, now_ms],
        )
    )


def close_job_retry(*, game: Game, job: str) -> None:
    """Give a dead job another full set of attempts, due at once (admin's retry action)."""
    if not run_sync(_retry, game.slug, job, clock.now_ms()):
        raise ServiceError(404, "not_found", f"No dead close job {job} in {game.slug}: nothing to retry.")


# Reads of the queue, for admin. (They live here rather than in selectors.py, which
# the archived-period reads own.)


async def _queue(slug: str) -> list:
    pipe = get_redis().pipeline(transaction=False)
    pipe.zcard(keys.close_jobs(slug))
    pipe.zrange(keys.close_jobs(slug), 0, 0, withscores=True)
    pipe.zrange(keys.close_claims(slug), 0, -1, withscores=True)
    pipe.zrange(keys.close_dead(slug), 0, CLOSE_JOBS_DEAD_SHOWN - 1, withscores=True)
    pipe.hgetall(keys.close_attempts(slug))
    pipe.hgetall(keys.close_errors(slug))
    return await pipe.execute()


def close_jobs_queue(*, game: Game) -> CloseQueue:
    due, first, claimed, dead, attempts, errors = run_sync(_queue, game.slug)
    return CloseQueue(
        due=int(due),
        next_due=clock.from_ms(first[0][1]) if first else None,
        claimed=[(job, clock.from_ms(deadline)) for job, deadline in claimed],
        dead=[
            DeadJob(job=job, died_at=clock.from_ms(when), attempts=int(attempts.get(job, 0)), error=errors.get(job, ""))
            for job, when in dead
        ],
    )


def close_jobs_dead(*, game: Game) -> list[DeadJob]:
    """The game's dead close jobs, oldest first."""
    return close_jobs_queue(game=game).dead
