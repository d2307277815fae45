"""Request and response shapes of the scores and standings endpoints (and their OpenAPI schema)."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

from ninja import Schema
from pydantic import BaseModel, ConfigDict, Field, StrictInt

from core.models import MAX_BATCH_ITEMS, MAX_SAFE_SCORE
from core.schemas import ErrorOut, PlayerId, SingleLine

Score = Annotated[StrictInt, Field(ge=-MAX_SAFE_SCORE, le=MAX_SAFE_SCORE, examples=[120])]


# Request bodies are plain pydantic models: ninja's Schema adds a Django-object
# validator that made each batch item ~6x slower to check.


class ScoreIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    player_id: PlayerId
    score: Score = Field(description="An integer, |score| <= 2^53-1. In increment games, the amount added.")
    display_name: Annotated[SingleLine, Field(max_length=64, examples=["Ada"])] | None = None


class BatchIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # Items are validated one by one so that one bad item fails alone.
    scores: list[Any] = Field(
        min_length=1,
        max_length=MAX_BATCH_ITEMS,
        json_schema_extra=lambda schema: schema.update(items=ScoreIn.model_json_schema()),
    )


class PeriodScoreOut(Schema):
    period_id: str
    score: int
    rank: int


class ScoreOut(Schema):
    player_id: str
    display_name: str
    periods: dict[str, PeriodScoreOut]


class BatchOut(Schema):
    results: list[ScoreOut | ErrorOut]


class PeriodOut(Schema):
    period: str
    period_id: str
    starts_at: dt.datetime | None
    resets_at: dt.datetime | None


class GameOut(Schema):
    slug: str
    name: str
    description: str
    mode: str
    order: str
    timezone: str
    periods: list[PeriodOut]


class EntryOut(Schema):
    rank: int
    player_id: str
    display_name: str
    score: int


class BoardOut(Schema):
    period: str
    period_id: str
    resets_at: dt.datetime | None
    total: int
    entries: list[EntryOut]


class FriendsOut(BoardOut):
    missing: list[str] = Field(description="Requested players who have no score on this board.")


class StandingOut(Schema):
    player_id: str
    display_name: str
    rank: int
    score: int
    total: int
    percentile: float = Field(description="Share of the board with a strictly worse score, in percent.")


class RecentOut(Schema):
    player_id: str
    display_name: str
    score: int
    at: dt.datetime


class NamedPlayerOut(Schema):
    player_id: str = Field(examples=["player-42"])
    display_name: str = Field(examples=["Ada"])


class PlayersFoundOut(Schema):
    players: list[NamedPlayerOut] = Field(
        description="Players whose display name starts with `q` (any case or accents), hidden players left out; "
        "a player whose id is `q` exactly comes first."
    )
