"""Request and response shapes of the competition endpoints (competitions/api.py)."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

from ninja import Schema
from pydantic import BaseModel, Field, StrictInt

from core.competition_rules import RATING_MAX
from core.schemas import PlayerId, SingleLine, with_example
from games.schemas import BoardOut, FriendsOut, Window

from .services.entry import EXTRA_ATTEMPTS_MAX


class CompetitionEntryIn(BaseModel):
    model_config = with_example({"player_id": "ada", "display_name": "Ada"}, forbid_extra=True)

    player_id: PlayerId
    display_name: Annotated[SingleLine, Field(max_length=64, examples=["Ada"])] | None = None
    rating: Annotated[StrictInt, Field(ge=-RATING_MAX, le=RATING_MAX, examples=[1450])] | None = Field(
        default=None,
        description="The player's rating (any whole-number scale), on boards whose cohorts are bands of rating; "
        "refused elsewhere. A second join keeps the first entry's.",
    )


class CompetitionEntryOut(Schema):
    model_config = with_example(
        {
            "leaderboard": "weekly-cup",
            "player_id": "ada",
            "window": "weekly",
            "period_id": "2026-W48",
            "entered_at": "2026-11-23T09:15:00.000Z",
            "entrants": 41,
            "max_entrants": 100,
            "attempts_used": 0,
            "attempts_left": 3,
            "cohort": "2",
            "tier": None,
        }
    )

    leaderboard: str
    player_id: str
    window: str
    period_id: str
    entered_at: str
    entrants: int
    max_entrants: int | None
    attempts_used: int
    attempts_left: int | None = Field(description="null: the board sets no max_attempts.")
    cohort: str | None = Field(
        description="The player's cohort ('3', or 'silver-3' in a league); null on a board without cohorts, and "
        "until balanced cohorts are split (the board's competition.period.cohorts_at)."
    )
    tier: str | None = Field(description="The league tier the player races in this period; null outside a league.")


class AttemptsGrantIn(BaseModel):
    model_config = with_example({"add": 1}, forbid_extra=True)

    add: Annotated[StrictInt, Field(ge=1, le=EXTRA_ATTEMPTS_MAX)]


class AttemptsGrantOut(Schema):
    model_config = with_example(
        {"leaderboard": "weekly-cup", "player_id": "ada", "period_id": "2026-W48", "extra": 1, "used": 3, "left": 1}
    )

    leaderboard: str
    player_id: str
    period_id: str
    extra: int = Field(description="Attempts granted beyond max_attempts in this period, in all.")
    used: int
    left: int | None = Field(description="null: the board sets no max_attempts.")


_COHORT = {"cohort": "2", "tier": None, "size": 30}


class CohortSummaryOut(Schema):
    model_config = with_example(_COHORT)

    cohort: str = Field(description="Its id: a number, after the tier's slug in a league ('silver-2').")
    tier: str | None = Field(description="The league tier it races in; null outside a league.")
    size: int = Field(description="Entrants placed in it.")


class CohortsOut(Schema):
    model_config = with_example(
        {
            "leaderboard": "weekly-league",
            "period": "weekly",
            "period_id": "2026-W48",
            "cohort_size": 30,
            "entrants": 101,
            "held": 0,
            "cohorts_at": "2026-11-24T00:00:00.000Z",
            "total": 4,
            "offset": 0,
            "cohorts": [_COHORT],
        }
    )

    leaderboard: str
    period: Window
    period_id: str
    cohort_size: int = Field(description="The most a cohort takes.")
    entrants: int = Field(description="Players who entered the period.")
    held: int = Field(description="Entrants waiting for the balanced split (none once it ran).")
    cohorts_at: dt.datetime | None = Field(
        description="Balanced cohorts: when the split is due; null where entrants are placed as they enter."
    )
    total: int = Field(description="Cohorts in the period, on all pages.")
    offset: int
    cohorts: list[CohortSummaryOut] = Field(description="By tier (bottom first), then number.")


class CohortBoardOut(BoardOut):
    model_config = with_example(
        {
            "leaderboard": "weekly-league",
            "period": "weekly",
            "period_id": "2026-W48",
            "resets_at": "2026-11-30T00:00:00.000Z",
            "total": 28,
            "entries": [{"rank": 1, "player_id": "ada", "display_name": "Ada", "score": 1200, "metadata": None}],
            "cohort": "2",
            "tier": None,
            "cohort_size": 30,
        }
    )

    cohort: str
    tier: str | None = Field(description="The league tier the cohort races in; null outside a league.")
    cohort_size: int = Field(description="Entrants in the cohort, with a score or not (`total` counts those with one).")


class CohortFriendsOut(FriendsOut):
    model_config = with_example(
        {
            "leaderboard": "weekly-league",
            "period": "weekly",
            "period_id": "2026-W48",
            "resets_at": "2026-11-30T00:00:00.000Z",
            "total": 1,
            "entries": [{"rank": 1, "player_id": "ada", "display_name": "Ada", "score": 1200, "metadata": None}],
            "missing": ["zed"],
            "cohorts": {"ada": "2"},
        }
    )

    cohorts: dict[str, str] = Field(description="scope=cohort: each listed player's cohort (ranks are within it).")


_SETTLED = {
    "player_id": "ada",
    "cohort": "2",
    "rank": 1,
    "score": 1200,
    "tier": "silver",
    "move": 1,
    "tier_after": "gold",
    "reward": {"coins": 500},
}


class SettledEntryOut(Schema):
    model_config = with_example(_SETTLED)

    player_id: str
    cohort: str | None = Field(description="null on a board without cohorts.")
    rank: int | None = Field(description="Within the cohort; null without a score.")
    score: int | None
    tier: str | None = Field(description="The tier raced in; null outside a league.")
    move: int = Field(description="+1 up a tier, -1 down, 0 stays (always 0 outside a league).")
    tier_after: str | None
    reward: dict[str, Any] | None = Field(description="The reward granted (claim it), null for none.")


class SettlementOut(Schema):
    model_config = with_example(
        {
            "leaderboard": "weekly-league",
            "window": "weekly",
            "period_id": "2026-W48",
            "preview": False,
            "settled_at": "2026-11-30T01:00:02.114Z",
            "entrants": 101,
            "cohorts": 4,
            "promoted": 20,
            "demoted": 15,
            "granted": 12,
            "total": 101,
            "offset": 0,
            "entries": [_SETTLED],
        }
    )

    leaderboard: str
    window: Window
    period_id: str
    preview: bool = Field(description="true: what the current period would settle if it ended now.")
    settled_at: dt.datetime | None
    entrants: int
    cohorts: int
    promoted: int
    demoted: int
    granted: int = Field(description="Entrants who got a reward.")
    total: int = Field(description="Entries matching the filter, on all pages.")
    offset: int
    entries: list[SettledEntryOut] = Field(description="By cohort, then rank (entrants without a score last).")
