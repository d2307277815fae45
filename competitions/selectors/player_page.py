"""What a player's page shows of their competitions (issue 22): their tier on the game's league
boards with their moves, their cohort in each board's current competing period, and their
rewards. Every part is bounded, whatever the game's boards or the player's history hold.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from core import clock
from core.config import BoardConfig, GameConfig
from games import selectors as board_reads

from ..models import SettledEntry
from . import cohorts as cohort_reads
from . import league as league_reads
from . import rewards as reward_reads
from .pages import cohort_label

# The league boards a player page lists (a read of the player's league and cohort each); it says
# how many more the player has, which the board picker reaches.
LEAGUE_BOARDS_MAX = 5
# Moves listed per league board, newest first.
LEAGUE_HISTORY_MAX = 10
# Rewards listed, newest first.
REWARDS_MAX = 10


@dataclass(frozen=True)
class Move:
    period_id: str
    move: int  # +1 up, -1 down, 0 stayed
    from_name: str
    to_name: str
    cohort_label: str
    rank: int | None  # in the cohort; None: entered, never scored


@dataclass(frozen=True)
class CohortPlace:
    cohort: str
    label: str
    rank: int | None  # None: no score yet
    size: int


@dataclass(frozen=True)
class BoardCompetition:
    """The player on one competing board: their tier (a league's) and moves, and their cohort in
    its current period (None: not in one, not entered or held for a split)."""

    board: BoardConfig
    window: str
    period_id: str
    tier_name: str  # "" outside a league
    since_period_id: str | None  # None: no settlement has placed them (the start tier)
    history: list[Move]
    history_total: int
    cohort: CohortPlace | None


@dataclass(frozen=True)
class Reward:
    board_name: str
    board_slug: str
    period_id: str
    rank: int
    cohort: str
    reward: dict[str, Any]
    status: str  # pending, claimed or expired, as it shows now
    granted_at: dt.datetime
    expires_at: dt.datetime
    claimed_at: dt.datetime | None


@dataclass(frozen=True)
class PlayerCompetitions:
    boards: list[BoardCompetition]
    boards_unread: int  # league boards of theirs left out (LEAGUE_BOARDS_MAX)
    rewards: list[Reward]
    rewards_total: int


def _shows(board: BoardConfig) -> bool:
    competition = board.competition
    return competition is not None and (competition.cohort_size is not None or bool(competition.tiers))


async def _league_boards(game: GameConfig, shown: BoardConfig, player_id: str) -> tuple[list[BoardConfig], int]:
    """The board shown (if it competes in cohorts), then the league boards a settlement placed
    the player on, in the game's order: LEAGUE_BOARDS_MAX at most, and how many were left out."""
    # Their settled entries in a league: the boards where they have a tier and a history.
    entries = SettledEntry.objects.filter(settlement__board__game_id=game.id, player_id=player_id).exclude(tier="")
    placed = {board_id async for board_id in entries.values_list("settlement__board_id", flat=True).distinct()}
    wanted = [shown] if _shows(shown) else []
    wanted += [b for b in game.boards if b.id in placed and b != shown and _shows(b)]
    return wanted[:LEAGUE_BOARDS_MAX], max(0, len(wanted) - LEAGUE_BOARDS_MAX)


async def _board(board: BoardConfig, player_id: str) -> BoardCompetition:
    competition = board.competition
    assert competition is not None
    period, _ = board_reads.resolve_period(board=board, period=competition.window)
    tiers = {t.slug: t.name for t in competition.tiers}
    tier_name, since, history, total = "", None, [], 0
    if competition.tiers:
        league = await league_reads.player_league(board=board, player_id=player_id, offset=0, limit=LEAGUE_HISTORY_MAX)
        tier_name, since, total = league.tier.name, league.since_period_id, league.history_total
        history = [
            Move(
                period_id=c.period_id,
                move=c.move,
                from_name=tiers.get(c.from_tier, c.from_tier),
                to_name=tiers.get(c.to_tier, c.to_tier),
                cohort_label=cohort_label(competition, c.cohort, c.from_tier) if c.cohort else "",
                rank=c.rank,
            )
            for c in league.history
        ]
    standing = await cohort_reads.cohort_standing(board=board, period=period, player_id=player_id)
    place = None
    if standing is not None:
        label = cohort_label(competition, standing.cohort, standing.tier)
        place = CohortPlace(standing.cohort, label, standing.rank, standing.size)
    return BoardCompetition(board, competition.window, period.id, tier_name, since, history, total, place)


async def player_competitions(*, game: GameConfig, board: BoardConfig, player_id: str) -> PlayerCompetitions:
    """The player's competitions in ``game`` as their page shows them (``board``: the one the page
    shows, first when it competes)."""
    boards, unread = await _league_boards(game, board, player_id)
    now = clock.now()
    total, grants = await reward_reads.player_grants(
        game_id=game.id, player_id=player_id, status=None, now=now, offset=0, limit=REWARDS_MAX
    )
    rewards = [
        Reward(
            board_name=g.board.name,
            board_slug=g.board.slug,
            period_id=g.period_id,
            rank=g.rank,
            cohort=g.cohort,
            reward=g.reward,
            status=reward_reads.grant_status(g, now),
            granted_at=g.granted_at,
            expires_at=g.expires_at,
            claimed_at=g.claimed_at,
        )
        for g in grants
    ]
    return PlayerCompetitions(
        boards=[await _board(b, player_id) for b in boards],
        boards_unread=unread,
        rewards=rewards,
        rewards_total=total,
    )
