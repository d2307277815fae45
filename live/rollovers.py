"""The broadcaster's rollover schedule: when each board window's current period ends, in memory.

A window whose period id changes (``daily``, ``weekly`` and ``monthly`` at local midnights, a
``custom`` window when its cron fires) is planned at its current period's end; once that has
passed, the broadcaster claims the new period (live/lua/period_started.lua: each rollover is
announced once, however many broadcasters run) and plans the window at the new period's end.

A window whose period never changes is never planned: ``all-time`` (with a season or without)
and a season's ``custom`` window (id ``season``) keep one period for good, so there is no
rollover to announce. A season that ends therefore leaves nothing behind, and a broadcaster that
starts after it plans nothing for it. Every end planned lies after the moment it was planned at,
so taking what is due always ends, whatever the clock does.

A board this broadcaster has not claimed yet (it just started, or the board is new or its
settings changed) has its windows' current periods claimed once: that records them, and
announces a rollover that happened while no broadcaster ran. Those boards wait in a queue, and
one tick claims for at most ``MAX_CLAIMS_PER_TICK`` boards, rollovers that are due first: a
broadcaster starting beside 10,000 boards, or boards created by the thousand, spreads its claims
over ticks instead of holding one tick for all of them.
"""

from __future__ import annotations

import datetime as dt
import heapq
from collections.abc import Mapping
from dataclasses import dataclass, field

from cronsim import CronSimError

from core import board_rules, clock
from core.config import BoardConfig, GameConfig
from games import periods

# Boards whose windows one tick claims at most (one pipelined round trip: ~10 ms for 500 on
# the reference machine); the rest wait for the next tick. At 5 ticks a second that is 2,500
# boards a second, so a broadcaster starting beside 10,000 boards has claimed them in 4 s.
MAX_CLAIMS_PER_TICK = 500
# The heap keeps the entries of boards that changed or went until their time comes; it is
# rebuilt from the plans once it holds this many times as many entries as there are plans
# (plus STALE_ENTRIES_SLACK, so that a small schedule is not rebuilt over and over).
STALE_ENTRIES_RATIO = 2
STALE_ENTRIES_SLACK = 1000

_CALENDAR = frozenset({periods.DAILY, periods.WEEKLY, periods.MONTHLY})

Boards = Mapping[str, tuple[GameConfig, BoardConfig]]


def rolls(board: BoardConfig, window: str) -> bool:
    """Whether the window's period id ever changes (a calendar window, or a custom one with a cron)."""
    return window in _CALENDAR or (window == periods.CUSTOM and bool(board.cron))


def _ceil_ms(instant: dt.datetime) -> int:
    """Epoch ms of ``instant``, rounded up: a period is over once the ms clock reaches it."""
    ms = clock.to_ms(instant)
    return ms if clock.from_ms(ms) == instant else ms + 1


def _first_firing(board: BoardConfig, now: dt.datetime) -> dt.datetime | None:
    """When a cron that has not fired before ``now`` fires first (None if it never does)."""
    try:
        found = board_rules.cron_next(board.cron, periods.zone(board.timezone), now, 1)
    except (OverflowError, ValueError, CronSimError):
        return None
    return found[0] if found else None


def next_end_ms(board: BoardConfig, window: str, now: dt.datetime) -> int | None:
    """When the period of the board's ``window`` that contains ``now`` ends (epoch ms), or None
    if the window's period does not change after ``now`` (it never rolls, or the calendar ends)."""
    if not rolls(board, window):
        return None
    ends: dt.datetime | None
    try:
        ends = periods.window_current(board, window, now).ends_at
    except (OverflowError, ValueError, CronSimError):  # InvalidPeriod is a ValueError
        # A cron that never fired before ``now`` (its first firing starts its first period), or
        # the calendar's far edge (no period after this one).
        ends = _first_firing(board, now) if window == periods.CUSTOM else None
    if ends is None:
        return None
    ms = _ceil_ms(ends)
    return ms if ms > clock.to_ms(now) else None


@dataclass
class Schedule:
    """The windows' next ends, and the boards whose current periods are not claimed yet."""

    heap: list[tuple[int, str, str]] = field(default_factory=list)  # (ends ms, board ref, window)
    planned: dict[tuple[str, str], int] = field(default_factory=dict)  # (ref, window) -> ends ms
    # Boards to claim, first in first claimed (a dict keeps insertion order).
    unclaimed: dict[str, None] = field(default_factory=dict)

    def add(self, board: BoardConfig) -> None:
        """A board new to this broadcaster, or with new settings: claimed afresh, then planned."""
        if any(rolls(board, window) for window in board.windows):
            self.unclaimed[board.ref] = None

    def remove(self, board: BoardConfig) -> None:
        """A board gone, out of play or about to be added with new settings: nothing of it is due."""
        self.unclaimed.pop(board.ref, None)
        for window in board.windows:
            self.planned.pop((board.ref, window), None)

    def due(self, boards: Boards, now: dt.datetime, limit: int = MAX_CLAIMS_PER_TICK) -> dict[str, list[str]]:
        """The windows to claim now, by board ref: those whose period ended by ``now`` (each
        planned again at its new period's end), then those of boards not claimed yet; for
        ``limit`` boards at most, the rest stay for the next call."""
        now_ms = clock.to_ms(now)
        claims: dict[str, list[str]] = {}
        while self.heap and self.heap[0][0] <= now_ms and len(claims) < limit:
            ends, ref, window = heapq.heappop(self.heap)
            if self.planned.get((ref, window)) != ends:
                continue  # planned before its board changed or went
            found = boards.get(ref)
            if found is None or window not in found[1].windows:
                del self.planned[(ref, window)]
                continue
            claims.setdefault(ref, []).append(window)
            self._plan(found[1], window, now)
        while self.unclaimed and len(claims) < limit:
            ref = next(iter(self.unclaimed))
            del self.unclaimed[ref]
            found = boards.get(ref)
            if found is None:
                continue
            board = found[1]
            windows = claims.setdefault(ref, [])
            for window in board.windows:
                if rolls(board, window) and window not in windows:
                    windows.append(window)
                    self._plan(board, window, now)
        if len(self.heap) > STALE_ENTRIES_RATIO * len(self.planned) + STALE_ENTRIES_SLACK:
            self.heap = [(ends, ref, window) for (ref, window), ends in self.planned.items()]
            heapq.heapify(self.heap)
        return claims

    def _plan(self, board: BoardConfig, window: str, now: dt.datetime) -> None:
        key = (board.ref, window)
        ends = next_end_ms(board, window, now)
        if ends is None:  # its period does not change again: the window leaves the schedule
            self.planned.pop(key, None)
            return
        self.planned[key] = ends
        heapq.heappush(self.heap, (ends, board.ref, window))
