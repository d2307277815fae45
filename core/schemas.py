"""Shapes every API module shares: the error envelope and the player id."""

from __future__ import annotations

from typing import Annotated

from ninja import Schema
from pydantic import Field, StrictStr

from .models import PLAYER_ID_RE

PlayerId = Annotated[StrictStr, Field(min_length=1, max_length=64, pattern=PLAYER_ID_RE, examples=["player-42"])]


class ErrorBody(Schema):
    code: str
    message: str
    field: str | None


class ErrorOut(Schema):
    error: ErrorBody
