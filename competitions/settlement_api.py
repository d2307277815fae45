"""Settlement endpoints of the JSON API (issue 22), mounted with the cohort reads before the
period reads: a settled period's outcome, and the preview of the current one ("if it ended
now"). Ending a season's competition at once is archive/api.py's (it makes the close jobs due)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Query, Router

from core.api import COHORT_READ_ERRORS, rendered
from games.api import Limit, Offset, board_of

from .schemas import SettlementOut
from .selectors import settlement as selectors

router = Router(tags=["competitions"])

Cohort = Query(None, description="Only this cohort's entrants.", max_length=50)
Player = Query(None, description="Only this player.", max_length=64)


def _out(board_slug: str, found: selectors.SettlementView) -> dict[str, Any]:
    return {
        "leaderboard": board_slug,
        "window": found.window,
        "period_id": found.period_id,
        "preview": found.settled_at is None,
        "settled_at": found.settled_at,
        "entrants": found.entrants,
        "cohorts": found.cohorts,
        "promoted": found.promoted,
        "demoted": found.demoted,
        "granted": found.granted,
        "total": found.total,
        "offset": found.offset,
        "entries": [
            {
                "player_id": e.player_id,
                "cohort": e.cohort or None,
                "rank": e.rank,
                "score": e.score,
                "tier": e.tier or None,
                "move": e.move,
                "tier_after": e.tier_after or None,
                "reward": e.reward,
            }
            for e in found.entries
        ],
    }


@router.get(
    "/games/{game}/leaderboards/{board}/{period}/settlement/preview",
    response={200: SettlementOut, **COHORT_READ_ERRORS},
    summary="What the current period would settle if it ended now",
)
async def settlement_preview(
    request: HttpRequest,
    game: str,
    board: str,
    period: str,
    cohort: str | None = Cohort,
    player_id: str | None = Player,
    offset: int = Offset,
    limit: int = Limit,
) -> Any:
    """The competing window's current period as its settlement would leave it if it ended now:
    each entrant's rank in their cohort, tier move and reward (nothing is written). For QA and
    for players' "if it ended now" screens. 409 `not_competing` for another window."""
    found = await board_of(game, board)
    view = await selectors.settlement_preview(
        board=found, period=period, cohort=cohort, player_id=player_id, offset=offset, limit=limit
    )
    return rendered(request, _out(found.slug, view))


@router.get(
    "/games/{game}/leaderboards/{board}/{period}/{named:period_id}/settlement",
    response={200: SettlementOut, **COHORT_READ_ERRORS},
    summary="A settled period's outcome",
)
async def settlement(
    request: HttpRequest,
    game: str,
    board: str,
    period: str,
    period_id: str,
    cohort: str | None = Cohort,
    player_id: str | None = Player,
    offset: int = Offset,
    limit: int = Limit,
) -> Any:
    """How a finished competing period settled, entrant by entrant (by cohort, then rank): kept
    in the database for good. 404 `not_settled` while it is not (yet)."""
    found = await board_of(game, board)
    view = await selectors.settlement_read(
        board=found, period=period, period_id=period_id, cohort=cohort, player_id=player_id, offset=offset, limit=limit
    )
    return rendered(request, _out(found.slug, view))
