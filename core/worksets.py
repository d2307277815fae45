"""Work sets: which boards the background runs must visit, so that an idle board costs them nothing.

Three global ZSETs on the hash tag of the broadcaster's change set (``{changes}``: a
submission marks them in the same pipeline, so on a cluster they add no node to it):

- ``keys.work_ledger()``: boards whose ledger stream may hold entries not stored yet; the
  drain visits these only (archive/ledger/drain.py).
- ``keys.work_close_due()``: board -> when its close jobs next need a visit, never later than
  its earliest due job or claim deadline; the close-job run visits the boards scored up to now
  (archive/services/close_jobs.py).
- ``keys.work_close_dead()``: boards holding dead close jobs; the dead-jobs gauge reads these.

A board's keys are on the board's hash tag, so no script can write a mark in the same call
(one slot per script): every writer marks **after** its write, in a call of its own. A mark
is therefore a hint that may be early or stale, never one that is missing while work is:

- a set's consumer handles a board, removes its mark, *then* checks the board again and
  marks it again if work remains (:func:`settle`). A writer that wrote before that check is
  seen by it; one that wrote after it marks after the removal.
- the close index only ever goes down from writers (``ZADD LT``); the run, which must move a
  board's time up once its jobs are done, writes what it read, reads again and lowers to
  that (:func:`settle_close`): a job written before the second read is in it, and one
  written after it is marked after the only write that went up.

A process killed between its write and its mark leaves work unmarked: the background's
safety net (archive/services/catch_up.py) visits a bounded slice of all boards per run.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from typing import Any, Protocol, cast

from django.conf import settings
from django.db.models import Q

from . import clock, keys
from .config import BoardConfig
from .models import Leaderboard
from .redis import get_redis

# The per-process memory of each board's earliest close (see _earliest_close) holds at most
# this many boards; past it, it starts again (each board is then computed once more).
CLOSE_MEMORY_MAX_BOARDS = 100_000
# Boards per database query when the consumers look up the rows of marked boards: the
# query ORs one condition per game, and SQLite caps an expression's depth at 1,000.
LOOKUP_CHUNK = 200


class _Period(Protocol):
    @property
    def starts_at(self) -> dt.datetime | None: ...

    @property
    def ends_at(self) -> dt.datetime | None: ...


PeriodsOf = Callable[[BoardConfig, dt.datetime], Sequence[_Period]]

# ref -> (the board's config, from, until, earliest close): the current periods, and so the
# earliest close, stay the same from the latest start of its windows' periods to the first end.
_closes: dict[str, tuple[BoardConfig, float, float, int | None]] = {}


def _earliest_close(board: BoardConfig, now: dt.datetime, current: PeriodsOf) -> int | None:
    """When the first of the board's current periods ends, plus ARCHIVE_GRACE_SECS (ms): when its
    first close job written at ``now`` falls due. None if no window ends."""
    now_ms = clock.to_ms(now)
    known = _closes.get(board.ref)
    if known is not None and known[1] <= now_ms < known[2] and (known[0] is board or known[0] == board):
        return known[3]
    try:
        found = current(board, now)
    except ValueError:
        # Not expected (the caller's write used these periods): visit soon, the run reads the real time.
        return now_ms
    starts = [clock.to_ms(p.starts_at) for p in found if p.starts_at is not None]
    ends = [clock.to_ms(p.ends_at) for p in found if p.ends_at is not None]
    due = min(ends) + settings.ARCHIVE_GRACE_SECS * 1000 if ends else None
    if len(_closes) >= CLOSE_MEMORY_MAX_BOARDS:
        _closes.clear()
    _closes[board.ref] = (board, max(starts, default=float("-inf")), min(ends, default=float("inf")), due)
    return due


def queue_marks(pipe: Any, boards: Collection[BoardConfig], now: dt.datetime, current: PeriodsOf) -> None:
    """Queue, on a pipeline sent after the boards' own scripts wrote them at ``now``: each board in
    the ledger work set, and in the close index at its earliest close (``current`` gives a
    board's current periods: games.periods.board_current)."""
    if not boards:
        return
    queue_ledger_marks(pipe, [board.ref for board in boards], clock.to_ms(now))
    closes = {board.ref: _earliest_close(board, now, current) for board in boards}
    queue_close_marks(pipe, {ref: due for ref, due in closes.items() if due is not None})


def queue_ledger_marks(pipe: Any, refs: Collection[str], now_ms: int) -> None:
    """Queue: these boards have ledger entries to store (a mark keeps its first time)."""
    if refs:
        pipe.zadd(keys.work_ledger(), dict.fromkeys(refs, now_ms), nx=True)


def queue_close_marks(pipe: Any, due: Mapping[str, int]) -> None:
    """Queue: these boards have a close job (or claim) due at the given time (ms) or later."""
    if due:
        pipe.zadd(keys.work_close_due(), dict(due), lt=True)


def queue_dead_marks(pipe: Any, refs: Collection[str], now_ms: int) -> None:
    """Queue: these boards hold dead close jobs."""
    if refs:
        pipe.zadd(keys.work_close_dead(), dict.fromkeys(refs, now_ms), nx=True)


async def mark_boards(boards: Collection[BoardConfig], now: dt.datetime, current: PeriodsOf) -> None:
    """:func:`queue_marks` in a round trip of its own, for writers without a pipeline."""
    pipe = get_redis().pipeline(transaction=False)
    queue_marks(pipe, boards, now, current)
    if len(pipe):
        await pipe.execute()


async def mark(
    *,
    ledger: Collection[str] = (),
    close: Mapping[str, int] | None = None,
    dead: Collection[str] = (),
    now_ms: int,
) -> None:
    """The marks above in one round trip, for writers without a pipeline of their own."""
    pipe = get_redis().pipeline(transaction=False)
    queue_ledger_marks(pipe, ledger, now_ms)
    queue_close_marks(pipe, close or {})
    queue_dead_marks(pipe, dead, now_ms)
    if len(pipe):
        await pipe.execute()


# --------------------------------------------------------------------------- consumers


async def ledger_marked(*, limit: int) -> list[str]:
    """The boards marked for the drain, longest marked first."""
    return cast("list[str]", await get_redis().zrange(keys.work_ledger(), 0, limit - 1))


async def close_due(*, now_ms: int, limit: int) -> list[str]:
    """The boards whose close jobs need a visit by ``now_ms``, earliest first."""
    return cast("list[str]", await get_redis().zrangebyscore(keys.work_close_due(), "-inf", now_ms, start=0, num=limit))


async def members(key: str) -> list[str]:
    """Every board of a (small) work set: the dead set, or the drain's set for the gauges."""
    return cast("list[str]", await get_redis().zrange(key, 0, -1))


async def settle(key: str, ref: str, *, remaining: Callable[[], Awaitable[bool]], now_ms: int) -> bool:
    """A consumer is done with ``ref`` in the set ``key``: remove its mark, then check the board
    again (``remaining``, after the removal) and mark it again if work is left. Two calls,
    never one pipeline: on a cluster, a pipeline's commands to two nodes are not ordered."""
    client = get_redis()
    await client.zrem(key, ref)
    if not await remaining():
        return False
    await client.zadd(key, {ref: now_ms}, nx=True)
    return True


async def settle_close(ref: str, *, next_visit: Callable[[], Awaitable[int | None]]) -> None:
    """The close run is done with ``ref`` for now: set its time in the close index to the board's
    next due job or claim deadline (``next_visit``, read from the board; None: none left), read
    it again and lower the index to that."""
    client = get_redis()
    first = await next_visit()
    if first is None:
        await client.zrem(keys.work_close_due(), ref)
    else:
        await client.zadd(keys.work_close_due(), {ref: first})
    again = await next_visit()
    if again is not None and again != first:
        # A job written between the two reads: its writer's own mark may have landed before the
        # write above moved the time up.
        await client.zadd(keys.work_close_due(), {ref: again}, lt=True)


def leaderboards_of(refs: Iterable[str]) -> dict[str, Leaderboard]:
    """The rows of these boards, by ref (with their games); refs of boards gone are left out."""
    by_game: dict[str, set[str]] = {}
    for ref in refs:
        game_slug, board_slug = keys.split_ref(ref)
        by_game.setdefault(game_slug, set()).add(board_slug)
    found: dict[str, Leaderboard] = {}
    games = sorted(by_game)
    for i in range(0, len(games), LOOKUP_CHUNK):
        condition = None
        for game_slug in games[i : i + LOOKUP_CHUNK]:
            term = Q(game__slug=game_slug, slug__in=sorted(by_game[game_slug]))
            condition = term if condition is None else condition | term
        for board in Leaderboard.objects.select_related("game").filter(condition):
            found[keys.board_ref(board.game.slug, board.slug)] = board
    return found
