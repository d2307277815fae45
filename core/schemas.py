"""Shapes every API module shares: the error envelope and the player id."""

from __future__ import annotations

from typing import Annotated

from ninja import Schema
from pydantic import AfterValidator, Field, StrictStr
from pydantic_core import PydanticCustomError

from . import text
from .models import PLAYER_ID_MAX_CHARS, PLAYER_ID_RE

PlayerId = Annotated[
    StrictStr, Field(min_length=1, max_length=PLAYER_ID_MAX_CHARS, pattern=PLAYER_ID_RE, examples=["player-42"])
]


def _single_line(value: str) -> str:
    if text.has_control_characters(value):
        raise PydanticCustomError("control_characters", text.CONTROL_MESSAGE)
    return value


# Free text on one line (a display name): no control characters (core/text.py).
SingleLine = Annotated[StrictStr, AfterValidator(_single_line)]


class ErrorBody(Schema):
    code: str
    message: str
    field: str | None


class ErrorOut(Schema):
    error: ErrorBody
