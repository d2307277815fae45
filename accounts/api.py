"""Account-linking endpoints of the JSON API (mounted in leaderboard_site/api.py)."""

from __future__ import annotations

import datetime as dt

from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from ninja import Router, Schema
from pydantic import Field

from games import services as game_services
from games.api import ERRORS, BearerKey, checked_player_id, ok_response
from games.errors import ServiceError

from . import services

router = Router(tags=["accounts"])


class LinkCodeOut(Schema):
    code: str = Field(description=f"{services.LINK_CODE_LENGTH} characters of {services.LINK_CODE_ALPHABET}.")
    expires_at: dt.datetime = Field(description="The code works until then, once.")
    link_url: str = Field(description="The page where a signed-in user enters the code.")


@router.post(
    "/games/{game}/players/{player_id}/link-code",
    response={200: LinkCodeOut, **ERRORS},
    auth=BearerKey(),
    summary="Issue a code that links a site account to a player",
)
async def link_code(request: HttpRequest, game: str, player_id: str) -> HttpResponse:
    """Show the code in the game; the player enters it at `link_url` while signed in to
    the site. A code works once, for 10 minutes; at most 3 live codes per player."""
    authorized = await game_services.request_authorize(raw_key=request.auth, game_slug=game)  # type: ignore[attr-defined]
    try:
        issued = await services.link_code_issue(game=authorized.game, player_id=checked_player_id(player_id))
    except ServiceError as error:
        error.headers = {**authorized.rate_headers, **error.headers}
        raise
    body = {
        "code": issued.code,
        "expires_at": issued.expires_at,
        "link_url": request.build_absolute_uri(reverse("accounts:link", args=[authorized.game.slug])),
    }
    return ok_response(request, body, authorized, replayed=False)
