"""Competition endpoints of the JSON API (mounted in leaderboard_site/api.py): joining a
competing board's current period, and granting a player more attempts in it. Endpoints adapt
HTTP to the services only (core/api.py holds what every endpoint shares)."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router

from core import clock
from core.api import ERRORS, Authorized, BearerKey, Ok, authorized, checked_player_id
from games import selectors

from .schemas import AttemptsGrantIn, AttemptsGrantOut, CompetitionEntryIn, CompetitionEntryOut
from .services import entry as services

router = Router(tags=["competitions"])


@router.post(
    "/games/{game}/leaderboards/{board}/entries",
    response={200: CompetitionEntryOut, 201: CompetitionEntryOut, **ERRORS},
    auth=BearerKey(),
    summary="Join a competing board's current period",
)
@authorized
async def join(request: HttpRequest, key: Authorized, game: str, board: str, payload: CompetitionEntryIn) -> Ok:
    """Enters the player in the current period of the board's competing window: 201 with the
    entry, or 200 with the same entry when they had joined already. Refused while entry is
    closed (`entry_closed`) or the field is full (`board_full`)."""
    found = selectors.board_or_404(game=key.game, slug=board)
    entry = await services.entry_join(
        game=key.game,
        board=found,
        player_id=payload.player_id,
        display_name=payload.display_name,
        rating=payload.rating,
    )
    competition = found.competition
    body = {
        "leaderboard": found.slug,
        "player_id": payload.player_id,
        "window": competition.window if competition else "",
        "period_id": entry.period_id,
        "entered_at": clock.iso(entry.entered_at),
        "entrants": entry.entrants,
        "max_entrants": competition.max_entrants if competition else None,
        "attempts_used": entry.attempts_used,
        "attempts_left": entry.attempts_left,
        "cohort": entry.cohort,
        "tier": entry.tier,
    }
    return Ok(body, status=201 if entry.created else 200)


@router.post(
    "/games/{game}/leaderboards/{board}/players/{player_id}/attempts",
    response={200: AttemptsGrantOut, **ERRORS},
    auth=BearerKey(),
    summary="Grant a player more attempts this period (manage key)",
)
@authorized(manage=True)
async def grant_attempts(
    request: HttpRequest, key: Authorized, game: str, board: str, player_id: str, payload: AttemptsGrantIn
) -> Ok:
    """Adds `add` attempts to the player's `max_attempts` in the board's current competing
    period (grants add up, to 1,000 a period at most); the next period starts afresh."""
    found = selectors.board_or_404(game=key.game, slug=board)
    granted = await services.attempts_grant(board=found, player_id=checked_player_id(player_id), add=payload.add)
    body = {
        "leaderboard": found.slug,
        "player_id": player_id,
        "period_id": granted.period_id,
        "extra": granted.extra,
        "used": granted.used,
        "left": granted.left,
    }
    return Ok(body)
