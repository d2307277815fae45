"""The background's safety net: close jobs that are missing, and work-set marks that are lost.

Writers mark a board in the work sets (core/worksets.py) after writing it, in a call of their
own; a process killed between the two leaves work unmarked, and a Redis restored from a backup
may lack close jobs. Two passes find both:

- :func:`work_sweep`, the beat task's pass: each run takes the next ``SWEEP_BOARDS_PER_RUN``
  boards after a cursor (by primary key, wrapping round) and one ``SCAN`` step of
  ``SWEEP_SCAN_COUNT`` keys per Redis node after its cursor, so a run's cost does not grow
  with the number of boards; a whole round takes boards / SWEEP_BOARDS_PER_RUN runs (and
  keys / SWEEP_SCAN_COUNT for the keyspace).
- :func:`close_jobs_catch_up`, the same over every board and the whole keyspace at once (by
  hand after a restore or a rebuild, so that every board's work is marked at once).

For each board: its unstored ledger entries, its next close job or claim, and its dead jobs
are marked again (marks only ever go in or down here, so a sweep can add a stale mark, a
visit that finds nothing, but never remove one); and every period board it holds (from its
boards index, and from the keyspace for boards the index lost) gets a close job unless its
archive is complete and it already carries its retention expiry. A complete archive whose
board never got its expiry (a crash between the two steps) gets a job that only sets it.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, cast

from django.conf import settings
from redis.asyncio.cluster import RedisCluster

from core import clock, keys
from core.config import BoardConfig
from core.models import Leaderboard
from core.redis import get_redis, run_sync
from core.worksets import leaderboards_of, mark, members
from games import periods

from .. import scripts
from ..models import ArchivedPeriod
from ..scripts import SweptBoard
from .close_jobs import close_job_name, close_jobs_dead_settle, close_jobs_schedule
from .period_archive import ARCHIVED_PERIODS

logger = logging.getLogger("archive.services")

# Boards one sweep run looks at: one read-only script call each (close_sweep.lua), all in one
# pipeline, and a database query or two for the lot: about 10 ms of CPU a run. At one run
# every WORK_SWEEP_INTERVAL_SECS (10 s, leaderboard_site/schedule.py), 10,000 boards are all
# seen within about 8 minutes, and a run costs the same with 200 boards or a million.
SWEEP_BOARDS_PER_RUN = 200
# Keys one sweep run's SCAN step examines per Redis node, for period boards their boards index
# lost (only a manual DEL of the index does that: the submit script writes both at once). About
# 5 ms a run; a round of a 100,000-key Redis takes 200 runs (about half an hour).
SWEEP_SCAN_COUNT = 500
# The cursor fields in keys.work_sweep(): the last board's primary key, and one SCAN cursor
# per node ("scan" on a single Redis, "scan:<host:port>" on a cluster).
_BOARD_CURSOR = "board"
_SCAN_CURSOR = "scan"

# board key -> whether it already has its retention expiry (the archive is then complete)
PeriodBoards = dict[str, bool]


@dataclass
class SweepReport:
    boards: int = 0  # boards looked at
    ledger: int = 0  # boards marked for the drain
    close: int = 0  # boards marked in the close index
    dead: int = 0  # boards marked as holding dead jobs
    scheduled: int = 0  # close jobs that were missing
    scanned: int = 0  # keys the SCAN step returned


# --------------------------------------------------------------------------- missing close jobs


def _candidates(found: PeriodBoards) -> list[tuple[str, str, bool]]:
    """(period, period id, retained) of these period boards (board key -> retained)."""
    candidates = []
    for board_key, retained in found.items():
        parsed = keys.parse_board(board_key)
        if parsed is not None:
            candidates.append((parsed[1], parsed[2], retained))
    return candidates


def _missing_jobs(
    candidates: dict[str, list[tuple[str, str, bool]]], pks: dict[str, int]
) -> dict[str, list[tuple[str, str]]]:
    """Of each board's candidate periods (period, id, retained), those that need a close job: all
    but those complete and retained. One database query for all."""
    retained = {
        (pks[ref], period_id) for ref, found in candidates.items() if ref in pks for _, period_id, kept in found if kept
    }
    complete: set[tuple[int, str, str]] = set()
    if retained:
        complete = set(
            ArchivedPeriod.objects.filter(
                leaderboard_id__in={pk for pk, _ in retained},
                status=ArchivedPeriod.Status.COMPLETE,
                period_id__in={period_id for _, period_id in retained},
            ).values_list("leaderboard_id", "period", "period_id")
        )
    missing: dict[str, list[tuple[str, str]]] = {}
    for ref, found in candidates.items():
        needed = [
            (p, i)
            for p, i, kept in found
            if ref in pks and p in ARCHIVED_PERIODS and not (kept and (pks[ref], p, i) in complete)
        ]
        if needed:
            missing[ref] = needed
    return missing


def _jobs(board: Leaderboard, needed: list[tuple[str, str]]) -> list[tuple[str, int]]:
    """The close jobs of these periods of the board, each due at its end + grace."""
    config = BoardConfig.from_model(board, board.game)
    jobs = []
    for kind, period_id in needed:
        try:
            period = periods.window_parse(config, kind, period_id)
        except periods.InvalidPeriod:
            continue
        if period.ends_at_ms is not None:
            due = period.ends_at_ms + settings.ARCHIVE_GRACE_SECS * 1000
            jobs.append((close_job_name(period=period.kind, period_id=period.id), due))
    return jobs


def _schedule_missing(missing: dict[str, list[tuple[str, str]]]) -> int:
    scheduled = 0
    boards = leaderboards_of(missing) if missing else {}
    for ref, needed in missing.items():
        if ref not in boards:
            continue
        jobs = _jobs(boards[ref], needed)
        added = run_sync(lambda ref=ref, jobs=jobs: close_jobs_schedule(ref=ref, jobs=jobs))
        if added:
            logger.warning("catch-up: scheduled %d missing close job(s) of %s", added, ref)
        scheduled += added
    return scheduled


async def _unindexed(board_keys: Iterable[str]) -> dict[str, PeriodBoards]:
    """Of these keys (from a SCAN), the period boards their board's index does not list, by
    board, with whether each has an expiry."""
    scanned: dict[str, list[str]] = defaultdict(list)
    for board_key in board_keys:
        parsed = keys.parse_board(board_key)
        if parsed is not None and parsed[1] in ARCHIVED_PERIODS:
            scanned[parsed[0]].append(board_key)
    if not scanned:
        return {}
    pipe = get_redis().pipeline(transaction=False)
    for ref, board_keys_of in scanned.items():
        pipe.zmscore(keys.boards_index(ref), board_keys_of)
    lost = [
        (ref, board_key)
        for (ref, board_keys_of), scores in zip(scanned.items(), await pipe.execute(), strict=True)
        for board_key, score in zip(board_keys_of, scores, strict=True)
        if score is None
    ]
    if not lost:
        return {}
    pipe = get_redis().pipeline(transaction=False)
    for _, board_key in lost:
        pipe.pttl(board_key)
    found: dict[str, PeriodBoards] = defaultdict(dict)
    for (ref, board_key), ttl in zip(lost, await pipe.execute(), strict=True):
        found[ref][board_key] = ttl > 0
    return dict(found)


def close_jobs_catch_up() -> int:
    """The sweep over every board and the whole keyspace at once: every board's work marked
    again, and a close job scheduled for every period board that has none; returns how many.

    A board needs one unless its archive is complete and it already has its
    retention expiry. Jobs already due, claimed or dead are left alone. Jobs are
    due at the period's end + grace, like those the submit script schedules. The beat's
    :func:`work_sweep` does the same a slice at a time.
    """
    report = SweepReport()
    pks = _pks_by_ref(Leaderboard.objects.all())
    refs = list(pks)
    candidates: dict[str, list[tuple[str, str, bool]]] = {}
    for i in range(0, len(refs), SWEEP_BOARDS_PER_RUN):
        candidates.update(_look_at(report, refs[i : i + SWEEP_BOARDS_PER_RUN], clock.now_ms()))
    _add_lost(candidates, pks, run_sync(_scan_all))
    _settle_dead(clock.now_ms())
    return _schedule_missing(_missing_jobs(candidates, pks))


def _pks_by_ref(boards: Any) -> dict[str, int]:
    """ref -> primary key of these boards (a queryset: two columns read, no model built)."""
    return {keys.board_ref(game, slug): pk for pk, game, slug in boards.values_list("pk", "game__slug", "slug")}


async def _scan_all() -> dict[str, PeriodBoards]:
    pattern = keys.every_board_pattern()
    return await _unindexed(
        [key async for key in get_redis().scan_iter(match=pattern, count=SWEEP_SCAN_COUNT, _type="zset")]
    )


# --------------------------------------------------------------------------- the sweep


def _next_slice(cursors: dict[str, str]) -> dict[str, int]:
    """ref -> primary key of the next SWEEP_BOARDS_PER_RUN boards after the cursor, in order."""
    after = int(cursors.get(_BOARD_CURSOR) or 0)
    boards = Leaderboard.objects.order_by("pk").values_list("pk", "game__slug", "slug")
    found = list(boards.filter(pk__gt=after)[:SWEEP_BOARDS_PER_RUN])
    if len(found) < SWEEP_BOARDS_PER_RUN and after:
        # Round again from the start.
        found += list(boards.filter(pk__lte=after)[: SWEEP_BOARDS_PER_RUN - len(found)])
    return {keys.board_ref(game, slug): pk for pk, game, slug in found}


async def _scan_step(cursors: dict[str, str]) -> tuple[list[str], dict[str, int]]:
    """One SCAN step per Redis node after its saved cursor: the keys, and the next cursors."""
    client = get_redis()
    pattern = keys.every_board_pattern()
    if not isinstance(client, RedisCluster):
        cursor, found = await client.scan(
            cursor=int(cursors.get(_SCAN_CURSOR) or 0), match=pattern, count=SWEEP_SCAN_COUNT, _type="zset"
        )
        return cast("list[str]", found), {_SCAN_CURSOR: int(cursor)}
    found, after = [], {}
    for node in client.get_primaries():
        field = f"{_SCAN_CURSOR}:{node.name}"
        reply: Any = await client.scan(
            cursor=int(cursors.get(field) or 0), match=pattern, count=SWEEP_SCAN_COUNT, _type="zset", target_nodes=node
        )
        next_cursor, node_keys = reply
        after[field] = int(next_cursor[node.name] if isinstance(next_cursor, dict) else next_cursor)
        found += node_keys
    return found, after


def _mark_found(report: SweepReport, refs: list[str], states: list[SweptBoard], now_ms: int) -> None:
    """Mark again what each board holds (marks only go in or down: at worst one idle visit)."""
    ledger = [ref for ref, state in zip(refs, states, strict=True) if state.ledger]
    close = {ref: state.next_at for ref, state in zip(refs, states, strict=True) if state.next_at is not None}
    dead = [ref for ref, state in zip(refs, states, strict=True) if state.dead]
    run_sync(lambda: mark(ledger=ledger, close=close, dead=dead, now_ms=now_ms))
    report.ledger, report.close, report.dead = len(ledger), len(close), len(dead)


def _settle_dead(now_ms: int) -> None:
    """Unmark boards whose dead jobs are all gone (retried, or the board deleted with its keys)."""
    for ref in run_sync(lambda: members(keys.work_close_dead())):
        run_sync(lambda ref=ref: close_jobs_dead_settle(ref=ref, now_ms=now_ms))


def _look_at(report: SweepReport, refs: list[str], now_ms: int) -> dict[str, list[tuple[str, str, bool]]]:
    """Mark again these boards' work; returns the period boards of each that have no job queued."""
    # One read-only script call a board, all in one round trip.
    states = run_sync(lambda: scripts.close_sweep(get_redis(), refs=refs, now_ms=now_ms))
    _mark_found(report, refs, states, now_ms)
    report.boards += len(refs)
    return {ref: state.unqueued for ref, state in zip(refs, states, strict=True) if state.unqueued}


def _add_lost(
    candidates: dict[str, list[tuple[str, str, bool]]], pks: dict[str, int], lost: dict[str, PeriodBoards]
) -> None:
    """Add the period boards a SCAN found outside their index (the schedule script then checks
    whether their jobs are queued), and the keys of their boards."""
    missing = [ref for ref in lost if ref not in pks]
    if missing:
        pks.update({ref: board.pk for ref, board in leaderboards_of(missing).items()})
    for ref, period_boards in lost.items():
        candidates[ref] = candidates.get(ref, []) + _candidates(period_boards)


def work_sweep() -> SweepReport:
    """One run of the safety net: the next slice of boards and of the keyspace (see the module)."""
    report = SweepReport()
    now_ms = clock.now_ms()
    cursors = cast("dict[str, str]", run_sync(lambda: get_redis().hgetall(keys.work_sweep())))
    pks = _next_slice(cursors)
    refs = list(pks)
    candidates = _look_at(report, refs, now_ms)
    scanned, scan_cursors = run_sync(_scan_step, cursors)
    report.scanned = len(scanned)
    _add_lost(candidates, pks, run_sync(_unindexed, scanned))
    report.scheduled = _schedule_missing(_missing_jobs(candidates, pks))
    _settle_dead(now_ms)
    new_cursors: dict[Any, Any] = {**scan_cursors}  # redis-py's mapping type refuses dict[str, int]
    if refs:
        new_cursors[_BOARD_CURSOR] = pks[refs[-1]]
    run_sync(lambda: get_redis().hset(keys.work_sweep(), mapping=new_cursors))
    return report
