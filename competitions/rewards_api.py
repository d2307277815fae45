"""Reward and league endpoints of the JSON API (mounted in leaderboard_site/api.py): a player's
rewards and their claim, with a key of the game; a player's league on a board, read by anyone
like the board's standings. Endpoints adapt HTTP to the services and selectors only."""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from asgiref.sync import sync_to_async
from django.http import HttpRequest, HttpResponse
from ninja import Query, Router

from core import clock, errors
from core.api import Authorized, BearerKey, Ok, authorized, checked_player_id, game_or_404, rendered
from core.api import errors as error_responses
from games import selectors as games_selectors
from games.api import MAX_OFFSET

from .models import Grant
from .rewards_schemas import PlayerLeagueOut, PlayerRewardsOut, RewardGrantOut
from .selectors import league as league_selectors
from .selectors import rewards as reward_selectors
from .services import rewards as reward_services

router = Router(tags=["rewards"])

# A player's rewards a page at a time: a page a game's reward screen shows, and a bound on
# every answer however many periods a player was rewarded in.
REWARDS_PAGE_DEFAULT = 20
REWARDS_PAGE_MAX = 100
# A player's moves on a league board, one per period settled, a page at a time.
HISTORY_PAGE_DEFAULT = 20
HISTORY_PAGE_MAX = 100

Offset = Query(0, ge=0, le=MAX_OFFSET)
# A keyed read: its key's budget is its bound (KEY_ERRORS: 401, 403, 404, 429).
KEYED_READ_ERRORS = error_responses(401, 403, 404, 422, 429, 503)
# A claim: no body, and 410 once the claim window has passed.
CLAIM_ERRORS = error_responses(401, 403, 404, 410, 422, 429, 503)
# A public read that is refused for a board without tiers (409 not_a_league).
LEAGUE_ERRORS = error_responses(404, 409, 422, 503)


def grant_json(grant: Grant, now: dt.datetime) -> dict[str, Any]:
    return {
        "grant_id": grant.grant_id,
        "leaderboard": grant.board.slug,
        "window": grant.window,
        "period_id": grant.period_id,
        "player_id": grant.player_id,
        # null for none, as in every cohort and settlement read ('' only in the database).
        "cohort": grant.cohort or None,
        "tier": grant.tier or None,
        "rank": grant.rank,
        "reward": grant.reward,
        "status": reward_selectors.grant_status(grant, now),
        "granted_at": clock.iso(grant.granted_at),
        "expires_at": clock.iso(grant.expires_at),
        "claimed_at": clock.iso(grant.claimed_at) if grant.claimed_at else None,
    }


@router.get(
    "/games/{game}/players/{player_id}/rewards",
    response={200: PlayerRewardsOut, **KEYED_READ_ERRORS},
    auth=BearerKey(),
    summary="A player's rewards",
)
@authorized
async def player_rewards(
    request: HttpRequest,
    key: Authorized,
    game: str,
    player_id: str,
    status: Literal["pending", "claimed", "expired"] | None = Query(
        None, description="Only rewards that show this status now (pending: still claimable)."
    ),
    offset: int = Offset,
    limit: int = Query(REWARDS_PAGE_DEFAULT, ge=1, le=REWARDS_PAGE_MAX),
) -> Ok:
    """The player's rewards in this game, newest first: what a player who was offline when a
    period settled finds waiting. Claim a pending one with `POST …/rewards/{grant_id}/claim`."""
    now = clock.now()
    total, grants = await reward_selectors.player_grants(
        game_id=key.game.id, player_id=checked_player_id(player_id), status=status, now=now, offset=offset, limit=limit
    )
    return Ok({"player_id": player_id, "total": total, "rewards": [grant_json(g, now) for g in grants]})


@router.post(
    "/games/{game}/rewards/{grant_id}/claim",
    response={200: RewardGrantOut, **CLAIM_ERRORS},
    auth=BearerKey(),
    summary="Claim a reward",
)
@authorized
async def claim_reward(request: HttpRequest, key: Authorized, game: str, grant_id: str) -> Ok:
    """Claims a pending reward: 200 with the claimed grant, and the same answer to every repeat,
    so that a retry is safe (credit the player once per `grant_id`). 410 `reward_expired` once its
    claim window has passed."""
    now = clock.now()
    grant = await sync_to_async(reward_services.grant_claim)(game=key.game, grant_id=grant_id, now=now)
    return Ok(grant_json(grant, now))


def _change_json(change: league_selectors.LeagueMove) -> dict[str, Any]:
    return {
        "period_id": change.period_id,
        "from_tier": change.from_tier,
        "to_tier": change.to_tier,
        "move": change.move,
        "cohort": change.cohort or None,
        "rank": change.rank,
        "at": clock.iso(change.at),
    }


@router.get(
    "/games/{game}/leaderboards/{board}/players/{player_id}/league",
    response={200: PlayerLeagueOut, **LEAGUE_ERRORS},
    summary="A player's league tier and history",
)
async def player_league(
    request: HttpRequest,
    game: str,
    board: str,
    player_id: str,
    offset: int = Offset,
    limit: int = Query(HISTORY_PAGE_DEFAULT, ge=1, le=HISTORY_PAGE_MAX),
) -> HttpResponse:
    """The player's tier on a league board now (its start tier until a settlement places them),
    the board's tiers, and the player's moves, newest first. 409 `not_a_league` for a board
    without tiers."""
    the_game = await game_or_404(game)
    found = games_selectors.board_or_404(game=the_game, slug=board)
    checked_player_id(player_id)
    # Hidden players vanish from public reads, as from the board's standings.
    if await games_selectors.is_hidden(game=the_game, player_id=player_id):
        raise errors.not_found(f"No player {player_id!r} on this board.")
    league = await league_selectors.player_league(board=found, player_id=player_id, offset=offset, limit=limit)
    return rendered(
        request,
        {
            "leaderboard": found.slug,
            "player_id": player_id,
            "tier": {"slug": league.tier.slug, "name": league.tier.name},
            "since_period_id": league.since_period_id,
            "tiers": [{"slug": tier.slug, "name": tier.name} for tier in league.tiers],
            "history_total": league.history_total,
            "history": [_change_json(change) for change in league.history],
        },
    )
