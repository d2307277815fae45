"""Presence endpoints of the JSON API (mounted in leaderboard_site/api.py)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.http import HttpRequest
from ninja import Query, Router, Schema
from pydantic import BaseModel, Field

from core.api import READ_ERRORS, Authorized, BearerKey, Ok, authorized, checked_player_id, errors, game_or_404
from core.schemas import PlayerId, with_example

from . import selectors, services

router = Router(tags=["presence"])

# A page of the online list holds at most this many players.
MAX_PRESENCE_LIMIT = 200
MAX_PRESENCE_OFFSET = 10**7


class PresenceIn(BaseModel):
    model_config = with_example({"online": ["ada", "bob"], "offline": ["cy"]}, forbid_extra=True)

    online: list[PlayerId] = Field(
        default_factory=list,
        max_length=services.PRESENCE_BATCH_MAX,
        description="Players seen now (a heartbeat): online until the game's timeout passes without another.",
    )
    offline: list[PlayerId] = Field(
        default_factory=list,
        max_length=services.PRESENCE_BATCH_MAX,
        description="Players who left: offline at once.",
    )


class PresenceReportOut(Schema):
    model_config = with_example({"online": 2, "offline": 1, "joined": 1, "left": 1})

    online: int = Field(description="Players reported online.")
    offline: int = Field(description="Players reported offline.")
    joined: int = Field(description="Of those online, how many were not online before.")
    left: int = Field(description="Of those offline, how many were online before.")


class OnlinePlayerOut(Schema):
    model_config = with_example({"player_id": "ada", "display_name": "Ada", "last_seen": "2026-11-24T14:05:23.438Z"})

    player_id: str
    display_name: str
    last_seen: dt.datetime


class PresenceOut(Schema):
    model_config = with_example(
        {
            "online": 1,
            "watching": 4,
            "offset": 0,
            "players": [{"player_id": "ada", "display_name": "Ada", "last_seen": "2026-11-24T14:05:23.438Z"}],
        }
    )

    online: int = Field(description="Players online now.")
    watching: int = Field(description="Open pages of viewers who are not listed players.")
    offset: int
    players: list[OnlinePlayerOut] = Field(description="Online players, most recently seen first.")


class PlayerPresenceOut(Schema):
    model_config = with_example({"online": True, "last_seen": "2026-11-24T14:05:23.438Z"})

    online: bool
    last_seen: dt.datetime | None = Field(description="null when the player was never seen.")


@router.post(
    "/games/{game}/presence",
    response={200: PresenceReportOut, **errors(400, 401, 403, 404, 408, 413, 422, 429, 503)},
    auth=BearerKey(),
    summary="Report players online or offline",
)
@authorized(items=lambda kwargs: len(kwargs["payload"].online) + len(kwargs["payload"].offline))
async def report_presence(request: HttpRequest, key: Authorized, game: str, payload: PresenceIn) -> Ok:
    """A game server's heartbeat: players in `online` count as online for the game's presence
    timeout (60 s unless set otherwise), those in `offline` leave at once. At most 1,000 ids
    in all; the same API key and rate limit as scores. An accepted score is a heartbeat too."""
    reported = await services.presence_report(game=key.game, online=payload.online, offline=payload.offline)
    return Ok(vars(reported))


@router.get("/games/{game}/presence", response={200: PresenceOut, **READ_ERRORS}, summary="Who is online")
async def presence(
    request: HttpRequest,
    game: str,
    offset: int = Query(0, ge=0, le=MAX_PRESENCE_OFFSET),
    limit: int = Query(50, ge=1, le=MAX_PRESENCE_LIMIT),
) -> Any:
    page = await selectors.presence_page(game=await game_or_404(game), offset=offset, limit=limit)
    return {
        "online": page.online,
        "watching": page.watching,
        "offset": page.offset,
        "players": [vars(p) for p in page.players],
    }


@router.get(
    "/games/{game}/presence/{player_id}",
    response={200: PlayerPresenceOut, **READ_ERRORS},
    summary="Whether a player is online",
)
async def player_presence(request: HttpRequest, game: str, player_id: str) -> Any:
    found = await selectors.player_presence(game=await game_or_404(game), player_id=checked_player_id(player_id))
    return vars(found)
