"""Reads of settlements (issue 22): a settled period's outcome from the database, and the
preview of the current period computed as its settlement would (nothing written)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from core import competition_rules, errors, keys
from core.competition_rules import Outcome, Placed
from core.config import BoardConfig
from core.redis import get_redis
from games import selectors as board_reads

from ..models import SettledEntry, Settlement
from ..services import settlement as settling
from . import cohorts as cohort_reads


@dataclass(frozen=True)
class EntryView:
    player_id: str
    cohort: str  # "" without cohorts
    rank: int | None
    score: int | None
    tier: str  # "" outside a league
    move: int
    tier_after: str
    reward: dict[str, Any] | None

    @classmethod
    def of(cls, outcome: Outcome, *, cohort: str, score: int | None) -> EntryView:
        """A computed outcome as a read shows it ("" for no tier, as a settled entry stores it)."""
        return cls(
            player_id=outcome.player_id,
            cohort=cohort,
            rank=outcome.rank,
            score=score,
            tier=outcome.tier or "",
            move=outcome.move,
            tier_after=outcome.tier_after or "",
            reward=outcome.reward,
        )


@dataclass(frozen=True)
class SettlementView:
    window: str
    period_id: str
    settled_at: dt.datetime | None  # None: a preview
    entrants: int
    cohorts: int
    promoted: int
    demoted: int
    granted: int
    total: int  # entries matching the filter, on all pages
    offset: int
    entries: list[EntryView]


def _competing(board: BoardConfig, period: str) -> None:
    competition = board.competition
    if competition is None:
        raise errors.not_competing(board=board.slug)
    if period != competition.window:
        raise errors.period_not_found(f"This leaderboard competes in its {competition.window} window.")


async def settlement_preview(
    *, board: BoardConfig, period: str, cohort: str | None, player_id: str | None, offset: int, limit: int
) -> SettlementView:
    """The current period as its settlement would leave it if it ended now."""
    _competing(board, period)
    current, _ = board_reads.resolve_period(board=board, period=period)
    plan = await settling.settlement_plan(board=board, period=current, preview=True)
    chosen = settling.settled_of(plan, cohort=cohort, player_ids=[player_id] if player_id else ())
    entries = [EntryView.of(s.outcome, cohort=s.cohort, score=s.score) for s in chosen[offset : offset + limit]]
    return SettlementView(
        window=current.kind,
        period_id=current.id,
        settled_at=None,
        entrants=plan.entrants,
        cohorts=plan.cohorts,
        promoted=plan.promoted,
        demoted=plan.demoted,
        granted=plan.granted,
        total=len(chosen),
        offset=offset,
        entries=entries,
    )


async def player_preview(
    *, board: BoardConfig, player_id: str, found: cohort_reads.RankedCohort | None = None
) -> EntryView | None:
    """The player's entry of ``settlement_preview`` (the same rules, the same outcome), read
    from their cohort alone: a page shows it to its signed-in player on every view, and the
    preview reads the whole field. None: the board has no cohorts, or the player is in none of
    its current period (not entered, or held for a balanced split, which the preview would make
    in memory for the whole field: the page says when the split comes instead). ``found``: their
    cohort of the current period, when the caller read it already."""
    competition = board.competition
    if competition is None or competition.cohort_size is None:
        return None
    period, _ = board_reads.resolve_period(board=board, period=competition.window)
    if found is None:
        found = await cohort_reads.player_cohort(board=board, period=period, player_id=player_id)
    if found is None:
        return None
    tries = await get_redis().hget(keys.entry_tries(board_reads.board_key(board, period)), player_id)
    used = int(tries or 0)
    mine = next((e for _, e in found.ranked if e.player_id == player_id), None)
    # Another entrant's move and reward never change this player's: only the cohort's size and
    # ranks do, so those without a score stand in as placeholders (ids no player can have).
    placed = [Placed(e.player_id, rank, used if e is mine else 0) for rank, e in found.ranked]
    unscored = max(0, found.size - len(placed) - (0 if mine else 1))
    placed += [Placed(f"\x00{n}", None, 0) for n in range(unscored)]
    if mine is None:
        placed.append(Placed(player_id, None, used))
    outcome = next(
        o
        for o in competition_rules.cohort_outcomes(competition, tier=found.tier, cohort=placed)
        if o.player_id == player_id
    )
    return EntryView.of(outcome, cohort=found.cohort, score=None if mine is None else board.score_from_base(mine.base))


async def settlement_read(
    *,
    board: BoardConfig,
    period: str,
    period_id: str,
    cohort: str | None,
    player_id: str | None,
    offset: int,
    limit: int,
) -> SettlementView:
    """A settled period's outcome, entrant by entrant (by cohort, then rank); 404 until it settled."""
    _competing(board, period)
    resolved, _ = board_reads.resolve_period(board=board, period=period, period_id=period_id)
    found = await Settlement.objects.filter(board_id=board.id, window=resolved.kind, period_id=resolved.id).afirst()
    if found is None:
        raise errors.not_settled(period_id=resolved.id)
    rows = SettledEntry.objects.filter(settlement=found).order_by("id")  # written cohort by cohort, best first
    if cohort is not None:
        rows = rows.filter(cohort=cohort)
    if player_id is not None:
        rows = rows.filter(player_id=player_id)
    entries = [
        EntryView(
            player_id=e.player_id,
            cohort=e.cohort,
            rank=e.rank,
            score=e.score,
            tier=e.tier,
            move=e.move,
            tier_after=e.tier_after,
            reward=e.reward,
        )
        async for e in rows[offset : offset + limit]
    ]
    return SettlementView(
        window=found.window,
        period_id=found.period_id,
        settled_at=found.settled_at,
        entrants=found.entrants,
        cohorts=found.cohorts,
        promoted=found.promoted,
        demoted=found.demoted,
        granted=found.granted,
        total=await rows.acount(),
        offset=offset,
        entries=entries,
    )
