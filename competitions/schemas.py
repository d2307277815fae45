"""Request and response shapes of the competition endpoints (competitions/api.py)."""

from __future__ import annotations

from typing import Annotated

from ninja import Schema
from pydantic import BaseModel, Field, StrictInt

from core.schemas import PlayerId, SingleLine, with_example

from .services import EXTRA_ATTEMPTS_MAX


class CompetitionEntryIn(BaseModel):
    model_config = with_example({"player_id": "ada", "display_name": "Ada"}, forbid_extra=True)

    player_id: PlayerId
    display_name: Annotated[SingleLine, Field(max_length=64, examples=["Ada"])] | None = None


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
