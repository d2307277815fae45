"""Reads of leagues (issue 22): a player's tier on a league board now, with their history of
moves, for the API; and the tiers of many players at once, for the settlement."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from django.db.models import QuerySet

from core import errors
from core.competition_rules import Competition, Tier
from core.config import BoardConfig
from core.models import Leaderboard

from ..models import LeagueStanding, SettledEntry
from ..services.records import chunks

# Player ids per query of tiers_of: well under SQLite's bound on a statement's parameters.
TIERS_OF_CHUNK = 500


@dataclass(frozen=True)
class LeagueMove:
    """What one period's settlement did to a player's tier (their settled entry of it)."""

    period_id: str
    from_tier: str
    to_tier: str
    move: int  # 1 up, -1 down, 0 stayed
    cohort: str  # "" on a board without cohorts
    rank: int | None  # in the cohort; None: no score that period
    at: dt.datetime  # when the period settled

    @classmethod
    def of(cls, entry: SettledEntry) -> LeagueMove:
        settlement = entry.settlement
        return cls(
            settlement.period_id,
            entry.tier,
            entry.tier_after,
            entry.move,
            entry.cohort,
            entry.rank,
            settlement.settled_at,
        )


@dataclass(frozen=True)
class League:
    """A player on a league board: their tier now, since which period, and their moves."""

    tiers: tuple[Tier, ...]  # the ladder, bottom first
    tier: Tier
    since_period_id: str | None  # None: never settled yet (in the start tier)
    history_total: int
    history: list[LeagueMove]  # newest first, a page of it


def _tier(competition: Competition, slug: str) -> Tier:
    return next(tier for tier in competition.tiers if tier.slug == slug)


def _placed(competition: Competition, stored: str | None) -> str | None:
    """A stored tier the board still has; None for none, or for a tier taken out of the ladder
    since, whose player starts again in the start tier (as a join places them:
    core/lua/prelude/cohorts.lua)."""
    return stored if stored in {tier.slug for tier in competition.tiers} else None


async def player_league(*, board: BoardConfig, player_id: str, offset: int, limit: int) -> League:
    """The player's league on ``board`` (409 not_a_league for a board without tiers): the start
    tier with no history for a player no settlement has placed yet."""
    competition = board.competition
    if competition is None or not competition.tiers:
        raise errors.not_a_league(board=board.slug)
    standing = await LeagueStanding.objects.filter(board_id=board.id, player_id=player_id).afirst()
    placed = _placed(competition, standing.tier if standing else None)
    # Their entry in each settlement of the board's league (a period settled before the board
    # had tiers has none).
    entries = SettledEntry.objects.filter(settlement__board_id=board.id, player_id=player_id).exclude(tier="")
    total = await entries.acount()
    newest = entries.select_related("settlement").order_by("-settlement__settled_at", "-settlement_id")
    page = [] if offset >= total else [LeagueMove.of(e) async for e in newest[offset : offset + limit]]
    return League(
        tiers=competition.tiers,
        tier=_tier(competition, placed or competition.start_tier),
        since_period_id=await _since(standing, placed, entries, total),
        history_total=total,
        history=page,
    )


async def _since(
    standing: LeagueStanding | None, placed: str | None, entries: QuerySet[SettledEntry], total: int
) -> str | None:
    """The period whose settlement put them in their tier: their standing's (written when they
    move); for a player who never moved, the first period they were settled in (in the start
    tier since); None before their first settlement, or when their tier left the ladder."""
    if standing is not None:
        return standing.since_period_id if placed else None
    if not total:
        return None
    first = (
        await entries.order_by("settlement__settled_at", "settlement_id")
        .values_list("settlement__period_id", flat=True)
        .afirst()
    )
    return first


def tiers_of(*, board: Leaderboard, player_ids: Sequence[str]) -> dict[str, str]:
    """Each player's tier on ``board`` now, by player id: the tier their last settlement gave
    them, else the board's start tier (also for a tier taken out of the ladder since, as a join
    places them; "" on a board without tiers). For the settlement, which moves players from
    the tier they raced in."""
    competition = board.competition()
    if competition is None or not competition.tiers:
        return dict.fromkeys(player_ids, "")
    wanted = list(dict.fromkeys(player_ids))
    found: dict[str, str] = {}
    for chunk in chunks(wanted, TIERS_OF_CHUNK):
        rows = LeagueStanding.objects.filter(board=board, player_id__in=chunk).values_list("player_id", "tier")
        found.update(rows)
    return {player_id: _placed(competition, found.get(player_id)) or competition.start_tier for player_id in wanted}
