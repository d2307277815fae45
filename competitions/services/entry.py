"""Entry to a competing board (issue 22): a player joins its competing window's current period,
and a studio grants a player more attempts in it. The score submission checks both in its own
script (games/lua/submit_score.lua), atomically with the score.

Async, touching only Redis and the in-process config caches, like the score submission.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.conf import settings

from core import clock, competition_rules, errors, worksets
from core.competition_rules import Competition
from core.config import BoardConfig, GameConfig
from core.errors import ServiceError
from core.models import PLAYER_ID_MESSAGE, is_player_id
from core.redis import get_redis
from games import periods
from games.services import players as player_services
from games.services.scores import LEDGER_FULL_RETRY_SECS, board_closed, cohort_gate

from .. import scripts

# Extra attempts one player may be granted in one period, in all: a studio's "one more try"
# many times over, and a bound that keeps a runaway client from making the limit meaningless.
EXTRA_ATTEMPTS_MAX = 1_000


@dataclass(frozen=True)
class Entry:
    """A player's entry to the current period of a competing board."""

    period_id: str
    entered_at: dt.datetime
    created: bool  # False: they had joined already (the same entry)
    entrants: int
    attempts_used: int
    attempts_left: int | None  # None: unlimited
    cohort: str | None  # its id; None without cohorts, or until a balanced split
    tier: str | None  # the tier the player races in (a league), else None


@dataclass(frozen=True)
class Spot:
    competition: Competition
    period: periods.Period
    script: scripts.PeriodSpot
    closes_at: dt.datetime | None


def current_spot(board: BoardConfig, now: dt.datetime) -> Spot:
    """The competing window's period of ``board`` at ``now`` (409 when the board competes not)."""
    competition = board.competition
    if competition is None:
        raise errors.not_competing(board=board.slug)
    period = periods.window_current(board, competition.window, now)
    spot = scripts.PeriodSpot(board.ref, period.kind, period.id, period.ends_at_ms)
    closes = periods.entry_closes_at(period, competition.entry_window_secs)
    return Spot(competition, period, spot, closes)


def _open_board(board: BoardConfig, player_id: str, now: dt.datetime) -> Spot:
    if not is_player_id(player_id):
        raise errors.invalid("player_id", PLAYER_ID_MESSAGE)
    spot = current_spot(board, now)
    if not board.is_open(now):
        raise board_closed(board)
    return spot


def _refusal(refused: scripts.JoinRefused, spot: Spot) -> ServiceError:
    if refused.reason == "rating_required":
        return errors.invalid("rating", "This board's cohorts are bands of rating: give the player's rating.")
    if refused.reason == "hidden":
        return errors.player_hidden(message="This player is hidden and cannot join.")
    if refused.reason == "entry_closed":
        assert spot.closes_at is not None
        return errors.entry_closed(period_id=spot.period.id, closed_at=spot.closes_at)
    if refused.reason == "board_full":
        return errors.board_full(period_id=spot.period.id, max_entrants=refused.value or 0)
    return errors.ledger_full(retry_secs=LEDGER_FULL_RETRY_SECS)


def _rating(spot: Spot, rating: int | None) -> int | None:
    """The rating a join gives: refused where cohorts are not bands of rating. Where they are, a
    new entrant without one is refused by the join script (one who joined already has it)."""
    by_rating = spot.competition.cohort_by == competition_rules.BY_RATING
    if rating is not None and not by_rating:
        raise errors.invalid("rating", "This board's cohorts are not by rating: leave rating out.")
    bound = competition_rules.RATING_MAX
    if rating is not None and (type(rating) is not int or not -bound <= rating <= bound):
        raise errors.invalid("rating", f"A whole number from -{bound:,} to {bound:,}.")
    return rating


async def entry_join(
    *,
    game: GameConfig,
    board: BoardConfig,
    player_id: str,
    display_name: str | None = None,
    rating: int | None = None,
) -> Entry:
    """Enter ``player_id`` in the board's current competing period (the same entry when they had),
    in a cohort where the board has them (first come, or after a balanced split)."""
    now = clock.now()
    spot = _open_board(board, player_id, now)
    rating = _rating(spot, rating)
    result = await scripts.entry_join(
        get_redis(),
        spot=spot.script,
        player_id=player_id,
        now_ms=clock.to_ms(now),
        max_entrants=spot.competition.max_entrants,
        closes_ms=None if spot.closes_at is None else clock.to_ms(spot.closes_at),
        ledger_cap=settings.LEDGER_STREAM_MAXLEN,
        grace_ms=settings.ARCHIVE_GRACE_SECS * 1000,
        rating=rating,
        needs_rating=spot.competition.cohort_by == competition_rules.BY_RATING,
        cohorts=cohort_gate(spot.competition, spot.period),
    )
    if isinstance(result, scripts.JoinRefused):
        raise _refusal(result, spot)
    if result.created:
        # The join is in the ledger and the period has a close job: the background runs must
        # know, as they do after a score (a join-only period still closes and settles on time).
        await worksets.mark_boards([board], now, periods.board_current)
    if display_name:
        await player_services.names_write(slug=game.slug, mode="set", names=[(player_id, display_name, True)])
    limit, used = spot.competition.max_attempts, result.attempts_used
    left = None if limit is None else max(0, limit + result.attempts_extra - used)
    return Entry(
        period_id=spot.period.id,
        entered_at=clock.from_ms(result.entered_ms),
        created=result.created,
        entrants=result.entrants,
        attempts_used=used,
        attempts_left=left,
        cohort=None if result.cohort is None else competition_rules.cohort_name(result.cohort, spot.competition.tiers),
        tier=None if result.cohort is None else competition_rules.cohort_tier(result.cohort, spot.competition.tiers),
    )


@dataclass(frozen=True)
class AttemptsGranted:
    period_id: str
    extra: int  # granted beyond max_attempts this period, in all
    used: int
    left: int | None


async def attempts_grant(*, board: BoardConfig, player_id: str, add: int) -> AttemptsGranted:
    """Give ``player_id`` ``add`` more attempts in the board's current competing period."""
    now = clock.now()
    spot = _open_board(board, player_id, now)
    if type(add) is not int or not 1 <= add <= EXTRA_ATTEMPTS_MAX:  # bool too
        raise errors.invalid("add", f"A whole number from 1 to {EXTRA_ATTEMPTS_MAX:,}.")
    result = await scripts.attempts_add(
        get_redis(),
        spot=spot.script,
        player_id=player_id,
        add=add,
        extra_max=EXTRA_ATTEMPTS_MAX,
        grace_ms=settings.ARCHIVE_GRACE_SECS * 1000,
        now_ms=clock.to_ms(now),
        ledger_cap=settings.LEDGER_STREAM_MAXLEN,
    )
    if isinstance(result, scripts.Attempts):
        await worksets.mark_boards([board], now, periods.board_current)
    if isinstance(result, scripts.AttemptsRefused) and result.reason == "ledger_full":
        raise errors.ledger_full(retry_secs=LEDGER_FULL_RETRY_SECS)
    if isinstance(result, scripts.AttemptsRefused):
        raise errors.invalid(
            "add",
            f"The player has {result.granted:,} extra attempts this period; at most "
            f"{EXTRA_ATTEMPTS_MAX:,} may be granted in one period.",
        )
    limit = spot.competition.max_attempts
    left = None if limit is None else max(0, limit + result.extra - result.used)
    return AttemptsGranted(period_id=spot.period.id, extra=result.extra, used=result.used, left=left)
