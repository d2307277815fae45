"""Named-period and archive endpoints of the JSON API (mounted in leaderboard_site/api.py).

A period named by its id answers with the shapes of the current-period reads
(games/api.py), from Redis while it is open or not yet archived and from the
archive once it is complete (archive/selectors.py decides which).
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from django.http import HttpRequest
from ninja import Query, Router, Schema
from pydantic import Field

from core.api import READ_ERRORS, checked_player_id, game_or_404
from games.api import Ids, Limit, Offset, Radius, board_of, not_on_board, player_ids_param, standings_out
from games.schemas import BoardOut, FriendsOut, StandingOut

from . import selectors

# The list of a board's archived periods: mounted before games/api.py's reads, whose
# '/leaderboards/{board}/{period}' would take '.../periods'.
listing = Router(tags=["history"])
router = Router(tags=["history"])


class ArchivedPeriodOut(Schema):
    leaderboard: str
    period: str
    period_id: str
    starts_at: dt.datetime
    ends_at: dt.datetime = Field(description="Exclusive: the instant the period closed.")
    total: int = Field(description="Players on the final standings.")
    archived_at: dt.datetime = Field(description="When the final standings were written.")


class ArchivedPeriodsOut(Schema):
    total: int = Field(description="Archived periods matching the filter, on all pages.")
    periods: list[ArchivedPeriodOut]


@listing.get(
    "/games/{game}/leaderboards/{board}/periods",
    response={200: ArchivedPeriodsOut, **READ_ERRORS},
    summary="Archived periods",
)
async def archived_periods(
    request: HttpRequest,
    game: str,
    board: str,
    period: Literal["daily", "weekly", "monthly", "custom", "all-time"] | None = Query(
        None, description="Only periods of this window."
    ),
    offset: int = Offset,
    limit: int = Limit,
) -> Any:
    """A board's finished periods whose final standings are archived, newest first. Read each
    one's standings at `/games/{game}/leaderboards/{board}/{period}/{period_id}`."""
    found = await board_of(game, board)
    total, archives = await selectors.archived_periods(
        game=await game_or_404(game), board=found, period=period, offset=offset, limit=limit
    )
    return {
        "total": total,
        "periods": [
            {
                "leaderboard": a.leaderboard,
                "period": a.period.kind,
                "period_id": a.period.id,
                "starts_at": a.period.starts_at,
                "ends_at": a.period.ends_at,
                "total": a.total,
                "archived_at": a.archived_at,
            }
            for a in archives
        ],
    }


@router.get(
    "/games/{game}/leaderboards/{board}/{period}/{period_id}/players",
    response={200: FriendsOut, **READ_ERRORS},
    summary="Friends view of a named period",
)
async def friends_named(
    request: HttpRequest, game: str, board: str, period: str, period_id: str, ids: str = Ids
) -> Any:
    found = await board_of(game, board)
    page, missing = await selectors.period_ranked(
        board=found, period=period, period_id=period_id, player_ids=player_ids_param(ids)
    )
    return {**standings_out(found, page), "missing": missing}


@router.get(
    "/games/{game}/leaderboards/{board}/{period}/{period_id}/players/{player_id}",
    response={200: StandingOut, **READ_ERRORS},
    summary="A player's standing in a named period",
)
async def standing_named(
    request: HttpRequest, game: str, board: str, period: str, period_id: str, player_id: str
) -> Any:
    standing = await selectors.period_standing(
        board=await board_of(game, board), period=period, period_id=period_id, player_id=checked_player_id(player_id)
    )
    if standing is None:
        raise not_on_board(player_id)
    return vars(standing)


@router.get(
    "/games/{game}/leaderboards/{board}/{period}/{period_id}/players/{player_id}/around",
    response={200: BoardOut, **READ_ERRORS},
    summary="Players around a player in a named period",
)
async def around_named(
    request: HttpRequest, game: str, board: str, period: str, period_id: str, player_id: str, radius: int = Radius
) -> Any:
    found = await board_of(game, board)
    page = await selectors.period_around(
        board=found,
        period=period,
        period_id=period_id,
        player_id=checked_player_id(player_id),
        radius=radius,
    )
    if page is None:
        raise not_on_board(player_id)
    return standings_out(found, page)


@router.get(
    "/games/{game}/leaderboards/{board}/{period}/{period_id}",
    response={200: BoardOut, **READ_ERRORS},
    summary="Standings of a named period",
)
async def leaderboard_named(
    request: HttpRequest, game: str, board: str, period: str, period_id: str, offset: int = Offset, limit: int = Limit
) -> Any:
    """A period by id (e.g. `2026-11-22`, `2026-W47`, `2026-11`, `2026-11-20T17:00Z`): from Redis
    while it is open or not yet archived, then from the archive in the database, with the same shapes."""
    found = await board_of(game, board)
    page = await selectors.period_page(board=found, period=period, period_id=period_id, offset=offset, limit=limit)
    return standings_out(found, page)
