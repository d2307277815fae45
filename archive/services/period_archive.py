"""The archive of one finished period: its board copied into ArchivedPeriod /
ArchivedStanding, then the Redis board given its retention expiry.

The board is streamed by rank, one chunk at a time, upserting rows marked with
the run's id; rows of other runs are deleted at the end, so a re-run after a
crash ends with exactly the rows of the board. Only then does the Redis board
get its expiry: a board never expires unarchived. See docs/archive.md.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import datetime as dt
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from django.conf import settings
from django.db import transaction

from competitions.services import settlement
from core import bulk, clock, errors, keys, metrics
from core.config import BoardConfig
from core.errors import REDIS_FAILURES, ServiceError
from core.models import Leaderboard
from core.redis import get_redis, run_soon, run_sync
from games import periods
from games import selectors as board_reads

from .. import scripts
from ..models import ArchivedPeriod, ArchivedStanding
from .period_events import ends_season, period_archived_emit, season_ended_emit, season_lock

# Standings read from Redis and written to the database per step: one board_window
# call (~10 ms of Redis time) and one bulk upsert. Memory holds one chunk at a time.
ARCHIVE_CHUNK_SIZE = 5000
# A claimed close job is presumed lost when its claim is not extended for this long
# (close_jobs.py). The worker extends it after every chunk, so this only has to
# outlast one chunk plus the start of an archive, with a wide margin.
CLOSE_JOB_VISIBILITY_SECS = 600
# The archive lock lives as long as a claim, for the same reason (extended per chunk).
ARCHIVE_LOCK_SECS = CLOSE_JOB_VISIBILITY_SECS

ARCHIVED_PERIODS: tuple[str, ...] = tuple(p for p in periods.WINDOWS if p != periods.ALL_TIME)

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class _Run:
    """One archive run of one period: what every step needs."""

    board: Leaderboard
    config: BoardConfig
    period: periods.Period
    finished: bool
    run: str
    chunk_size: int
    progress: Progress | None
    after_chunk: Callable[[int], None] | None

    @property
    def board_key(self) -> str:
        return keys.board(self.config.ref, self.period.kind, self.period.id)

    @property
    def ref(self) -> str:
        return self.config.ref


def _period(board: BoardConfig, period: str, period_id: str) -> periods.Period:
    if period not in periods.WINDOWS:
        choices = ", ".join(periods.WINDOWS)
        raise errors.invalid("period", f"Unknown window {period!r}; use one of {choices}.")
    try:
        resolved = periods.window_parse(board, period, period_id)
    except periods.InvalidPeriod as error:
        raise errors.invalid("period_id", f"{error}.") from None
    if resolved.ends_at is None or resolved.starts_at is None:
        raise errors.not_archived()
    return resolved


async def _lock(run: _Run, op: Literal["take", "extend", "release"]) -> bool:
    return await scripts.close_lock(
        get_redis(),
        ref=run.ref,
        period=run.period.kind,
        period_id=run.period.id,
        op=op,
        token=run.run,
        lifetime_ms=ARCHIVE_LOCK_SECS * 1000,
    )


async def _board_state(ref: str, board_key: str) -> tuple[bool, bool]:
    """Whether the board exists, and whether it is known to have existed (an empty
    board vanishes from Redis: its last players were hidden into the stash)."""
    pipe = get_redis().pipeline(transaction=False)
    pipe.exists(board_key)
    pipe.zscore(keys.boards_index(ref), board_key)
    pipe.exists(keys.hidden_stash(board_key))
    exists, indexed, stashed = await pipe.execute()
    # '+inf' in the index: written and not yet archived (a retained board's entry is finite).
    return bool(exists), indexed == float("inf") or bool(stashed)


def _still_to_archive(ref: str, period: periods.Period) -> bool:
    """Whether a period's board holds or held scores, so that a close job will archive it."""
    return any(run_sync(_board_state, ref, keys.board(ref, period.kind, period.id)))


async def _retain(run: _Run, now_ms: int) -> None:
    retention_ms = settings.PERIOD_RETENTION_SECS * 1000
    await scripts.close_retain(
        get_redis(),
        ref=run.ref,
        period=run.period.kind,
        period_id=run.period.id,
        retention_ms=retention_ms,
        expires_ms=now_ms + retention_ms,
    )


def _board_changed(period: periods.Period) -> ServiceError:
    return errors.board_changed(window=period.kind, period_id=period.id)


def period_archive(
    *,
    board: Leaderboard,
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
    test hook (raise in it to simulate a crash). A deactivated board's periods count as
    finished (it takes no more scores), as do those a new generation took over. Raises
    ServiceError: 422 for an all-time window without a season or a bad period, 409 for an
    open period without ``force``, a run already in progress, or a board that changed
    meanwhile; 404 when the board is not in Redis and was never known to exist there
    (nothing to archive).
    """
    config = BoardConfig.from_model(board, board.game)
    resolved = _period(config, period, period_id)
    assert resolved.ends_at is not None and resolved.starts_at is not None
    # A period the board came back from as a new generation takes no more scores either.
    finished = clock.now() >= resolved.ends_at or not board.active or periods.superseded(config, resolved)
    if not finished and not force:
        raise errors.period_open(window=period, period_id=period_id, ends_at=resolved.ends_at)
    if chunk_size < 1:
        raise errors.invalid("chunk_size", "The chunk size must be at least 1.")
    run = _Run(
        board=board,
        config=config,
        period=resolved,
        finished=finished,
        run=uuid.uuid4().hex,
        chunk_size=chunk_size,
        progress=progress,
        after_chunk=after_chunk,
    )
    if not run_sync(_lock, run, "take"):
        raise errors.archive_busy(window=period, period_id=period_id)
    try:
        return _archive_locked(run)
    finally:
        # The lock expires by itself: never let a failed release hide the run's own error.
        with contextlib.suppress(*REDIS_FAILURES):
            run_sync(_lock, run, "release")


def _archive_locked(run: _Run) -> ArchivedPeriod:
    period = run.period
    existing = ArchivedPeriod.objects.filter(leaderboard=run.board, period=period.kind, period_id=period.id).first()
    if existing is not None and existing.status == ArchivedPeriod.Status.COMPLETE:
        run_sync(_retain, run, clock.now_ms())
        return existing
    exists, known = run_sync(_board_state, run.ref, run.board_key)
    if not exists and not known:
        raise errors.board_missing(window=period.kind, period_id=period.id)
    assert period.starts_at is not None and period.ends_at is not None  # never all-time (see _period)
    archived, _ = ArchivedPeriod.objects.update_or_create(
        leaderboard=run.board,
        period=period.kind,
        period_id=period.id,
        defaults={
            "game_id": run.board.game_id,
            "starts_at": period.starts_at,
            "ends_at": period.ends_at,
            "status": ArchivedPeriod.Status.ARCHIVING if run.finished else ArchivedPeriod.Status.SNAPSHOT,
            "run": run.run,
        },
    )
    _copy_board(run, archived)
    return _complete(run, archived)


def _copy_board(run: _Run, archived: ArchivedPeriod) -> None:
    """Upsert the board's entries in chunks by rank.

    Each chunk after the first re-reads the previous chunk's last player, so a board
    that shifted under the read (a player hidden or restored) is noticed. The next
    chunk is read from Redis while this one is written to the database.
    """
    written = 0
    previous: str | None = None
    index = 0
    fresh = not ArchivedStanding.objects.filter(archived_period=archived).exists()
    ahead = _read_chunk(run, 0, run.chunk_size)
    while True:
        board = ahead.result()
        entries = board.entries
        if previous is not None:
            if entries and entries[0].player_id == previous:
                entries = entries[1:]
            elif run.finished:
                raise _board_changed(run.period)
        if not entries:
            return
        done = written + len(entries)
        if done < board.total:
            ahead = _read_chunk(run, done - 1, run.chunk_size + 1)
        _store_chunk(run, archived, entries, fresh=fresh)
        written = done
        previous = entries[-1].player_id
        if run.progress is not None:
            run.progress(written, max(board.total, written))
        if not run_sync(_lock, run, "extend"):
            raise errors.archive_busy()
        if run.after_chunk is not None:
            run.after_chunk(index)
        index += 1
        if written >= board.total:
            return


def _read_chunk(run: _Run, offset: int, limit: int) -> concurrent.futures.Future[board_reads.Board]:
    return run_soon(lambda: board_reads.board_page(board=run.config, period=run.period, offset=offset, limit=limit))


_STANDING_COLUMNS = bulk.columns_of(
    ArchivedStanding, ["archived_period", "rank", "player_id", "display_name", "score", "subscore", "metadata", "run"]
)
_STANDING_KEY = bulk.columns_of(ArchivedStanding, ["player_id", "archived_period"])
_STANDING_UPDATED = bulk.columns_of(ArchivedStanding, ["rank", "display_name", "score", "subscore", "metadata", "run"])


def _store_chunk(run: _Run, archived: ArchivedPeriod, entries: list[board_reads.Entry], *, fresh: bool) -> None:
    """Upsert one chunk's rows; ``fresh``: the period had no rows when this run began
    (its first archive), so a plain COPY suffices on PostgreSQL."""
    rows = [
        (
            archived.pk,
            e.rank,
            e.player_id,
            e.display_name[:64],
            e.score,
            e.subscore,
            None if e.metadata is None else json.dumps(e.metadata),
            run.run,
        )
        for e in entries
    ]
    with transaction.atomic():
        bulk.insert_rows(
            model=ArchivedStanding,
            columns=_STANDING_COLUMNS,
            rows=rows,
            conflict=_STANDING_KEY,
            update=_STANDING_UPDATED,
            fresh=fresh,
        )
    metrics.ARCHIVE_ROWS.inc(len(rows))


def _complete(run: _Run, archived: ArchivedPeriod) -> ArchivedPeriod:
    """Drop rows of earlier runs, count, mark complete (or a snapshot) with its events; then the
    board's retention."""
    now: dt.datetime = clock.now()
    # A board taken out of play before its season's end does not end the season (docs/events.md).
    ends_at = run.config.ends_at
    season_end = run.finished and ends_at is not None and now >= ends_at and ends_season(run.config, run.period)
    with transaction.atomic():
        if season_end:
            season_lock(run.board)
        # Rows of earlier runs whose players are no longer on the board (a snapshot
        # overwritten by the final state, or a crashed run's rows): one DELETE.
        ArchivedStanding.objects.filter(archived_period=archived).exclude(run=run.run).delete()
        total = ArchivedStanding.objects.filter(archived_period=archived).count()
        if run.finished and total != run_sync(lambda: get_redis().zcard(run.board_key)):
            raise _board_changed(run.period)
        archived.total = total
        archived.status = ArchivedPeriod.Status.COMPLETE if run.finished else ArchivedPeriod.Status.SNAPSHOT
        archived.archived_at = now
        archived.save(update_fields=["total", "status", "archived_at"])
        if run.finished:  # the one transition to complete: announced once, with it
            period_archived_emit(config=run.config, period=run.period, archived=archived, now=now)
            # A competing period settles in the same transaction: exactly once, with its archive.
            settlement.period_settle(board=run.board, config=run.config, period=run.period, now=now)
        if season_end:
            season_ended_emit(
                board=run.board, config=run.config, still_to_archive=lambda p: _still_to_archive(run.ref, p)
            )
    if run.finished:
        # Only now: a board never expires before its archive is complete.
        run_sync(_retain, run, clock.to_ms(now))
    return archived
