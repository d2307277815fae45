"""Cohort reads of the JSON API (issue 22), mounted in leaderboard_site/api.py before the period
reads: '/leaderboards/{board}/{period}/cohorts' would otherwise be taken for a period id.

A named period's segment never reads 'players' or 'cohorts' (the ``named`` converter): those
paths are a player's reads ('/weekly/players/cohorts' is the standing of a player whose id is
'cohorts'), which the period reads serve.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.urls import register_converter
from ninja import Router

from core.api import COHORT_READ_ERRORS, rendered
from games.api import Limit, Offset, board_of, entry_json

from .schemas import CohortBoardOut, CohortsOut
from .selectors import cohorts as selectors


class _NamedPeriod:
    """A period id in a path: any segment but the literal words the reads use after a window."""

    regex = r"(?!(?:players|cohorts)(?:/|$))[^/]+"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(_NamedPeriod, "named")

router = Router(tags=["competitions"])


def cohort_board_out(board_slug: str, found: selectors.CohortBoard) -> dict[str, Any]:
    page = found.board
    return {
        "leaderboard": board_slug,
        "period": page.period.kind,
        "period_id": page.period.id,
        "resets_at": page.period.ends_at,
        "total": page.total,
        "entries": [entry_json(e) for e in page.entries],
        "cohort": found.cohort,
        "tier": found.tier,
        "cohort_size": found.size,
    }


async def _list(game: str, board: str, period: str, period_id: str | None, offset: int, limit: int) -> dict[str, Any]:
    found = await board_of(game, board)
    listed = await selectors.cohorts_list(board=found, period=period, period_id=period_id, offset=offset, limit=limit)
    return {
        "leaderboard": found.slug,
        "period": listed.period.kind,
        "period_id": listed.period.id,
        "cohort_size": listed.cohort_size,
        "entrants": listed.entrants,
        "held": listed.held,
        "cohorts_at": listed.formed_at,
        "total": listed.total,
        "offset": listed.offset,
        "cohorts": [{"cohort": c.cohort, "tier": c.tier, "size": c.size} for c in listed.cohorts],
    }


async def _cohort(
    game: str, board: str, period: str, period_id: str | None, cohort: str, offset: int, limit: int
) -> dict[str, Any]:
    found = await board_of(game, board)
    page = await selectors.cohort_page(
        board=found, period=period, period_id=period_id, cohort=cohort, offset=offset, limit=limit
    )
    return cohort_board_out(found.slug, page)


@router.get(
    "/games/{game}/leaderboards/{board}/{period}/cohorts",
    response={200: CohortsOut, **COHORT_READ_ERRORS},
    summary="Cohorts of the current period",
)
async def cohorts(
    request: HttpRequest, game: str, board: str, period: str, offset: int = Offset, limit: int = Limit
) -> Any:
    """The cohorts of the competing window's current period with their sizes, by tier (bottom
    first) then number. 409 `no_cohorts` on a board without cohorts or another window."""
    return rendered(request, await _list(game, board, period, None, offset, limit))


@router.get(
    "/games/{game}/leaderboards/{board}/{period}/cohorts/{cohort}",
    response={200: CohortBoardOut, **COHORT_READ_ERRORS},
    summary="One cohort's standings",
)
async def cohort(
    request: HttpRequest, game: str, board: str, period: str, cohort: str, offset: int = Offset, limit: int = Limit
) -> Any:
    """A page of one cohort of the current period, ranked within the cohort in the board's own
    order and tie rule; `total` counts its entrants with a score, `cohort_size` all of them."""
    return rendered(request, await _cohort(game, board, period, None, cohort, offset, limit))


@router.get(
    "/games/{game}/leaderboards/{board}/{period}/{named:period_id}/cohorts",
    response={200: CohortsOut, **COHORT_READ_ERRORS},
    summary="Cohorts of a named period",
)
async def cohorts_named(
    request: HttpRequest, game: str, board: str, period: str, period_id: str, offset: int = Offset, limit: int = Limit
) -> Any:
    """A past period's cohorts, while Redis keeps its board."""
    return rendered(request, await _list(game, board, period, period_id, offset, limit))


@router.get(
    "/games/{game}/leaderboards/{board}/{period}/{named:period_id}/cohorts/{cohort}",
    response={200: CohortBoardOut, **COHORT_READ_ERRORS},
    summary="One cohort's standings in a named period",
)
async def cohort_named(
    request: HttpRequest,
    game: str,
    board: str,
    period: str,
    period_id: str,
    cohort: str,
    offset: int = Offset,
    limit: int = Limit,
) -> Any:
    return rendered(request, await _cohort(game, board, period, period_id, cohort, offset, limit))
