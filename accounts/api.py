"""Account-linking endpoints of the JSON API (mounted in leaderboard_site/api.py)."""

from __future__ import annotations

import datetime as dt

from django.http import HttpRequest
from django.urls import reverse
from ninja import Router, Schema
from pydantic import Field

from core.api import Authorized, BearerKey, Ok, authorized, checked_player_id, errors
from core.schemas import with_example

from . import services

router = Router(tags=["accounts"])


class LinkCodeOut(Schema):
    model_config = with_example(
        {
            "code": "JUWET4W5",
            "expires_at": "2026-11-24T14:15:23.455Z",
            "link_url": "https://lb.example.com/games/tetris/link/",
        }
    )

    code: str = Field(description=f"{services.LINK_CODE_LENGTH} characters of {services.LINK_CODE_ALPHABET}.")
    expires_at: dt.datetime = Field(description="The code works until then, once.")
    link_url: str = Field(description="The page where a signed-in user enters the code.")


@router.post(
    "/games/{game}/players/{player_id}/link-code",
    response={200: LinkCodeOut, **errors(401, 403, 404, 422, 429, 503)},
    auth=BearerKey(),
    summary="Issue a code that links a site account to a player",
)
@authorized
async def link_code(request: HttpRequest, key: Authorized, game: str, player_id: str) -> Ok:
    """Show the code in the game; the player enters it at `link_url` while signed in to
    the site. A code works once, for 10 minutes; at most 3 live codes per player."""
    issued = await services.link_code_issue(game=key.game, player_id=checked_player_id(player_id))
    body = {
        "code": issued.code,
        "expires_at": issued.expires_at,
        "link_url": request.build_absolute_uri(reverse("accounts:link", args=[key.game.slug])),
    }
    return Ok(body)
