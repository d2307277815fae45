"""Named-period and archive endpoints of the JSON API (mounted in leaderboard_site/api.py).

A period named by its id answers with the shapes of the current-period reads
(games/api.py), from Redis while it is open or not yet archived and from the
archive once it is complete (archive/selectors.py decides which).
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from asgiref.sync import sync_to_async
from django.http import HttpRequest, StreamingHttpResponse
from ninja import Query, Router, Schema
from pydantic import Field

from competitions.cohorts_api import cohort_board_out
from competitions.selectors import cohorts as cohort_selectors
from core import errors
from core.api import (
    ACTION_ERRORS,
    COHORT_READ_ERRORS,
    KEYED_READ_ERRORS,
    READ_ERRORS,
    Authorized,
    BearerKey,
    Ok,
    authorized,
    checked_player_id,
    game_or_404,
    rendered,
)
from core.config import BoardConfig
from core.models import Leaderboard
from core.schemas import with_example
from games import selectors as board_reads
from games.api import (
    Ids,
    Limit,
    Offset,
    Radius,
    board_json,
    board_of,
    boards,
    entry_json,
    not_on_board,
    player_ids_param,
    standings_out,
)
from games.schemas import BoardOut, FriendsOut, LeaderboardOut, StandingOut, Window

from . import exports, exports_openapi, selectors, services

Scope = Query(
    "board",
    pattern="^(board|cohort)$",
    description="board: ranks within the whole board; cohort: within the player's cohort (boards with cohorts, "
    "in their competing window).",
)

# The list of a board's archived periods: mounted before games/api.py's reads, whose
# '/leaderboards/{board}/{period}' would take '.../periods'.
listing = Router(tags=["history"])
router = Router(tags=["history"])


# What the OpenAPI schema shows (a real archive of a day).
_ARCHIVED = {
    "leaderboard": "main",
    "period": "daily",
    "period_id": "2026-11-23",
    "starts_at": "2026-11-23T00:00:00.000Z",
    "ends_at": "2026-11-24T00:00:00.000Z",
    "total": 36,
    "archived_at": "2026-11-24T00:02:40.681Z",
}


class ArchivedPeriodOut(Schema):
    model_config = with_example(_ARCHIVED)

    leaderboard: str
    period: Window
    period_id: str
    starts_at: dt.datetime
    ends_at: dt.datetime = Field(description="Exclusive: the instant the period closed.")
    total: int = Field(description="Players on the final standings.")
    archived_at: dt.datetime = Field(description="When the final standings were written.")


class ArchivedPeriodsOut(Schema):
    model_config = with_example({"total": 40, "periods": [_ARCHIVED]})

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


# The current period's reads come first: a literal 'players' must not be taken for a
# period id. They read through the same selectors as named periods, which serve a
# deactivated board's last periods from the archive.


@router.get(
    "/games/{game}/leaderboards/{board}/{period}/players",
    response={200: FriendsOut, **COHORT_READ_ERRORS},
    summary="Friends view",
)
async def friends(request: HttpRequest, game: str, board: str, period: str, ids: str = Ids, scope: str = Scope) -> Any:
    """The given players ranked within the whole current period of a window (`scope=cohort`:
    each within their own cohort, listed by that rank)."""
    return rendered(request, await _friends(game, board, period, None, ids, scope))


@router.get(
    "/games/{game}/leaderboards/{board}/{period}/players/{player_id}",
    response={200: StandingOut, **READ_ERRORS},
    summary="A player's standing",
)
async def standing(request: HttpRequest, game: str, board: str, period: str, player_id: str) -> Any:
    return rendered(request, await _standing(game, board, period, None, player_id))


@router.get(
    "/games/{game}/leaderboards/{board}/{period}/players/{player_id}/around",
    response={200: BoardOut, **COHORT_READ_ERRORS},
    summary="Players around a player",
)
async def around(
    request: HttpRequest, game: str, board: str, period: str, player_id: str, radius: int = Radius, scope: str = Scope
) -> Any:
    """The player with up to `radius` entries each side; the window shifts at the top and
    bottom of the board so that it stays full where the board allows. `scope=cohort`: within
    the player's cohort, with `cohort`, `tier` and `cohort_size` added."""
    return rendered(request, await _around(game, board, period, None, player_id, radius, scope))


@router.get(
    "/games/{game}/leaderboards/{board}/{period}",
    response={200: BoardOut, **READ_ERRORS},
    summary="Current standings",
)
async def leaderboard(
    request: HttpRequest, game: str, board: str, period: str, offset: int = Offset, limit: int = Limit
) -> Any:
    """`period` is one of the board's windows: daily, weekly, monthly, all-time or custom;
    past the end, `entries` is empty."""
    return rendered(request, await _page(game, board, period, None, offset, limit))


async def _friends(game: str, board: str, period: str, period_id: str | None, ids: str, scope: str) -> dict[str, Any]:
    found = await board_of(game, board)
    if scope == "cohort":
        ranked = await cohort_selectors.cohort_friends(
            board=found, period=period, period_id=period_id, player_ids=player_ids_param(ids)
        )
        return {**standings_out(found, ranked.board), "missing": ranked.missing, "cohorts": ranked.cohorts}
    page, missing = await selectors.period_ranked(
        board=found, period=period, period_id=period_id, player_ids=player_ids_param(ids)
    )
    return {**standings_out(found, page), "missing": missing}


async def _standing(game: str, board: str, period: str, period_id: str | None, player_id: str) -> dict[str, Any]:
    found = await board_of(game, board)
    standing = await selectors.period_standing(
        board=found, period=period, period_id=period_id, player_id=checked_player_id(player_id)
    )
    if standing is None:
        raise not_on_board(player_id)
    return {**entry_json(standing), **await _cohort_fields(found, period, period_id, player_id)}


async def _cohort_fields(board: BoardConfig, period: str, period_id: str | None, player_id: str) -> dict[str, Any]:
    """A standing's cohort fields, on boards with cohorts in their competing window (while Redis
    keeps the period)."""
    competition = board.competition
    if competition is None or competition.cohort_size is None or period != competition.window:
        return {}
    resolved, _ = board_reads.resolve_period(board=board, period=period, period_id=period_id)
    found = await cohort_selectors.cohort_standing(board=board, period=resolved, player_id=player_id)
    if found is None:
        return {"cohort": None, "cohort_rank": None, "cohort_size": None, "tier": None}
    return {"cohort": found.cohort, "cohort_rank": found.rank, "cohort_size": found.size, "tier": found.tier}


async def _around(
    game: str, board: str, period: str, period_id: str | None, player_id: str, radius: int, scope: str
) -> dict[str, Any]:
    found = await board_of(game, board)
    if scope == "cohort":
        within = await cohort_selectors.cohort_around(
            board=found, period=period, period_id=period_id, player_id=checked_player_id(player_id), radius=radius
        )
        if within is None:
            raise not_on_board(player_id)
        return cohort_board_out(found.slug, within)
    page = await selectors.period_around(
        board=found, period=period, period_id=period_id, player_id=checked_player_id(player_id), radius=radius
    )
    if page is None:
        raise not_on_board(player_id)
    return standings_out(found, page)


async def _page(game: str, board: str, period: str, period_id: str | None, offset: int, limit: int) -> dict[str, Any]:
    found = await board_of(game, board)
    page = await selectors.period_page(board=found, period=period, period_id=period_id, offset=offset, limit=limit)
    return standings_out(found, page)


@router.get(
    "/games/{game}/leaderboards/{board}/{period}/{period_id}/players",
    response={200: FriendsOut, **COHORT_READ_ERRORS},
    summary="Friends view of a named period",
)
async def friends_named(
    request: HttpRequest, game: str, board: str, period: str, period_id: str, ids: str = Ids, scope: str = Scope
) -> Any:
    return rendered(request, await _friends(game, board, period, period_id, ids, scope))


@router.get(
    "/games/{game}/leaderboards/{board}/{period}/{period_id}/players/{player_id}",
    response={200: StandingOut, **READ_ERRORS},
    summary="A player's standing in a named period",
)
async def standing_named(
    request: HttpRequest, game: str, board: str, period: str, period_id: str, player_id: str
) -> Any:
    return rendered(request, await _standing(game, board, period, period_id, player_id))


@router.get(
    "/games/{game}/leaderboards/{board}/{period}/{period_id}/players/{player_id}/around",
    response={200: BoardOut, **COHORT_READ_ERRORS},
    summary="Players around a player in a named period",
)
async def around_named(
    request: HttpRequest,
    game: str,
    board: str,
    period: str,
    period_id: str,
    player_id: str,
    radius: int = Radius,
    scope: str = Scope,
) -> Any:
    return rendered(request, await _around(game, board, period, period_id, player_id, radius, scope))


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
    return rendered(request, await _page(game, board, period, period_id, offset, limit))


@router.get(
    "/games/{game}/leaderboards/{board}/{period}/{period_id}/export",
    response={**KEYED_READ_ERRORS},
    auth=BearerKey(),
    summary="Export a period's standings (CSV or JSON Lines)",
    openapi_extra={"responses": {"200": exports_openapi.EXPORT_200}},
)
@authorized
async def export_period(
    request: HttpRequest,
    key: Authorized,
    game: str,
    board: str,
    period: str,
    period_id: str,
    format: Literal["csv", "jsonl"] = Query(
        "csv", description="csv (with a header row) or jsonl (one JSON object a line)."
    ),
) -> StreamingHttpResponse:
    """Every entry of one period in board order, streamed: the current one (`current`, or its id)
    read from Redis, a finished one from its archive. Any key of the game."""
    found = await board_of(game, board)
    export = await exports.export_open(board=found, period=period, period_id=period_id, format=format)
    response = StreamingHttpResponse(exports.export_chunks(export), content_type=export.content_type)
    response["Content-Disposition"] = f'attachment; filename="{export.filename(game)}"'
    response["Cache-Control"] = "no-store"
    return response


# Declared on games/api.py's board router: one path's methods live on one router, and taking a
# board out of play archives its windows, which is this app's work.
@boards.delete(
    "/games/{game}/leaderboards/{board}",
    response={200: LeaderboardOut, **ACTION_ERRORS},
    auth=BearerKey(),
    summary="Take a leaderboard out of play (manage key)",
)
@authorized(manage=True)
async def delete_board(request: HttpRequest, key: Authorized, game: str, board: str) -> Ok:
    """The board refuses scores from now on (409 `board_closed`); its windows are archived at
    once as if they had ended, and every read serves their final standings from the archive.
    Its all-time window stays as it is. A PUT brings the board back."""
    model = await Leaderboard.objects.select_related("game").filter(game_id=key.game.id, slug=board).afirst()
    if model is None:
        raise errors.board_not_found(game=key.game, board=board)
    await sync_to_async(services.leaderboard_deactivate)(board=model, by=key.actor)
    return Ok(await board_json(game, board))


@boards.post(
    "/games/{game}/leaderboards/{board}/end",
    response={200: LeaderboardOut, **ACTION_ERRORS},
    auth=BearerKey(),
    summary="End a season's competition now (manage key)",
)
@authorized(manage=True)
async def end_competition(request: HttpRequest, key: Authorized, game: str, board: str) -> Ok:
    """Ends a competing season board now: its season's end (`ends_at`) moves to this instant,
    it takes no more scores or joins, and its period settles like any end (after
    `settle_delay_secs`). 409 `not_endable` for a board that does not compete in a season
    (daily … custom periods end on their own), or whose season is not running."""
    model = await Leaderboard.objects.select_related("game").filter(game_id=key.game.id, slug=board).afirst()
    if model is None:
        raise errors.board_not_found(game=key.game, board=board)
    await sync_to_async(services.competition_end)(board=model, by=key.actor)
    return Ok(await board_json(game, board))
