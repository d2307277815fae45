"""Reads of a competing board's entry (issue 22): where its current period stands, for pages and
clients (the board's JSON carries the rules and times; this adds what Redis counts)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from core import clock, competition_rules, keys
from core.config import BoardConfig
from core.redis import get_redis
from games import periods

from ..services.entry import current_spot


@dataclass(frozen=True)
class Phase:
    """A competing board's current period as players see it."""

    window: str
    entry: str  # 'open' | 'join'
    period_id: str
    entrants: int
    max_entrants: int | None
    max_attempts: int | None
    entry_closes_at: dt.datetime | None
    ends_at: dt.datetime | None
    cohort_size: int | None = None
    balanced: bool = False
    cohorts_at: dt.datetime | None = None  # balanced: when the entrants are split
    # When the period settles, only where that is after its end (a review buffer): otherwise
    # "ends" says it, and a page need not say the same instant twice.
    settles_at: dt.datetime | None = None

    @property
    def cohorts_pending(self) -> bool:
        """Whether a balanced split is still to come (its entrants are held until then)."""
        return self.cohorts_at is not None and clock.now() < self.cohorts_at

    @property
    def entry_open(self) -> bool:
        full = self.max_entrants is not None and self.entrants >= self.max_entrants
        closed = self.entry_closes_at is not None and clock.now() >= self.entry_closes_at
        return not (full or closed)


async def competition_phase(*, board: BoardConfig) -> Phase | None:
    """The board's competing period now, with its entrants counted; None if it competes not."""
    if board.competition is None:
        return None
    spot = current_spot(board, clock.now())
    entrants = await get_redis().zcard(keys.entry_entrants(spot.script.board_key))
    return Phase(
        window=spot.competition.window,
        entry=spot.competition.entry,
        period_id=spot.period.id,
        entrants=int(entrants),
        max_entrants=spot.competition.max_entrants,
        max_attempts=spot.competition.max_attempts,
        entry_closes_at=spot.closes_at,
        ends_at=spot.period.ends_at,
        cohort_size=spot.competition.cohort_size,
        balanced=spot.competition.cohort_fill == competition_rules.BALANCED,
        cohorts_at=periods.cohorts_formed_at(spot.period, spot.competition),
        settles_at=periods.settles_at(spot.period, spot.competition) if spot.competition.settle_delay_secs else None,
    )
