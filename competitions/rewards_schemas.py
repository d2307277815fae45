"""Response shapes of the reward and league endpoints (competitions/rewards_api.py). Class names
are unique across the API: the OpenAPI components are keyed by them (tests/core/test_openapi.py)."""

from __future__ import annotations

from typing import Any, Literal

from ninja import Schema
from pydantic import Field

from core.schemas import with_example

_GRANT: dict[str, Any] = {
    "grant_id": "grant_h7Kq2XbN0vLw9RtYc3ZpEg",
    "leaderboard": "weekly-cup",
    "window": "weekly",
    "period_id": "2026-W48",
    "player_id": "ada",
    "cohort": None,
    "tier": None,
    "rank": 1,
    "reward": {"coins": 500, "badge": "cup-winner"},
    "status": "pending",
    "granted_at": "2026-11-30T00:02:00.000Z",
    "expires_at": "2026-12-30T00:02:00.000Z",
    "claimed_at": None,
}
_CLAIMED = {**_GRANT, "status": "claimed", "claimed_at": "2026-12-01T18:40:12.345Z"}
_BRONZE, _SILVER, _GOLD = (
    {"slug": "bronze", "name": "Bronze"},
    {"slug": "silver", "name": "Silver"},
    {"slug": "gold", "name": "Gold"},
)
_CHANGE = {
    "period_id": "2026-W48",
    "from_tier": "silver",
    "to_tier": "gold",
    "move": 1,
    "cohort": "silver-3",
    "rank": 2,
    "at": "2026-11-30T00:02:00.000Z",
}


class RewardGrantOut(Schema):
    model_config = with_example(_CLAIMED)

    grant_id: str = Field(description="The id to claim it by: 'grant_' and 22 random url-safe characters.")
    leaderboard: str
    window: str
    period_id: str = Field(description="The period it rewards.")
    player_id: str
    cohort: str | None = Field(description="The cohort the player ranked in; null when the board has none.")
    tier: str | None = Field(description="The tier they played the period in; null on a board without tiers.")
    rank: int = Field(description="Their rank (in the cohort, if any) when the period settled.")
    reward: dict[str, Any] = Field(description="The studio's reward, as its reward table gives it.")
    status: Literal["pending", "claimed", "expired"] = Field(
        description="pending: claimable until expires_at; claimed; expired: its claim window passed unclaimed."
    )
    granted_at: str
    expires_at: str = Field(description="The end of its claim window: a claim from then on is 410 reward_expired.")
    claimed_at: str | None = Field(description="When it was claimed; null until then.")


class PlayerRewardsOut(Schema):
    model_config = with_example({"player_id": "ada", "total": 1, "rewards": [_GRANT]})

    player_id: str
    total: int = Field(description="The player's rewards that match the status filter, on all pages.")
    rewards: list[RewardGrantOut] = Field(description="Newest first.")


class LeagueTierOut(Schema):
    model_config = with_example(_GOLD)

    slug: str
    name: str


class TierChangeOut(Schema):
    model_config = with_example(_CHANGE)

    period_id: str = Field(description="The period whose settlement made the move.")
    from_tier: str
    to_tier: str
    move: Literal[-1, 0, 1] = Field(description="1: promoted; -1: demoted; 0: stayed.")
    cohort: str | None = Field(description="The cohort they ranked in; null when the board has none.")
    rank: int | None = Field(description="Their rank in the cohort; null: no score that period.")
    at: str = Field(description="When the period settled.")


class PlayerLeagueOut(Schema):
    model_config = with_example(
        {
            "leaderboard": "weekly-league",
            "player_id": "ada",
            "tier": _GOLD,
            "since_period_id": "2026-W48",
            "tiers": [_BRONZE, _SILVER, _GOLD],
            "history_total": 1,
            "history": [_CHANGE],
        }
    )

    leaderboard: str
    player_id: str
    tier: LeagueTierOut = Field(description="Their tier now: the board's start tier until a settlement places them.")
    since_period_id: str | None = Field(
        description="The period whose settlement put them in this tier; null before their first settlement."
    )
    tiers: list[LeagueTierOut] = Field(description="The board's tiers, bottom first.")
    history_total: int = Field(description="Their moves on all pages, one per period settled.")
    history: list[TierChangeOut] = Field(description="Newest first.")
