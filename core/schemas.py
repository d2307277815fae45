"""Shapes every API module shares: the error envelope and the player id."""

from __future__ import annotations

from typing import Annotated, Any

from ninja import Schema
from pydantic import AfterValidator, ConfigDict, Field, StrictStr
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


# What SingleLine refuses, for the schema (core/text.py decides): C0 and C1 controls and the
# bidirectional overrides.
SINGLE_LINE_PATTERN = "^[^\\u0000-\\u001f\\u007f-\\u009f\\u202a-\\u202e\\u2066-\\u2069]*$"

# Free text on one line (a display name): no control characters (core/text.py).
SingleLine = Annotated[
    StrictStr, AfterValidator(_single_line), Field(json_schema_extra={"pattern": SINGLE_LINE_PATTERN})
]


def with_example(example: Any, *, forbid_extra: bool = False) -> ConfigDict:
    """A model's config with the example the OpenAPI schema shows (and schemathesis sends, for a
    request body): every request and response schema has one (tests/core/test_openapi.py).
    ``forbid_extra``: a request body refuses unknown fields."""
    if forbid_extra:
        return ConfigDict(json_schema_extra={"examples": [example]}, extra="forbid")
    return ConfigDict(json_schema_extra={"examples": [example]})


class ErrorBody(Schema):
    model_config = with_example({"code": "invalid", "message": "This field is required.", "field": "score"})

    code: str
    message: str
    field: str | None


class ErrorOut(Schema):
    model_config = with_example({"error": {"code": "invalid", "message": "This field is required.", "field": "score"}})

    error: ErrorBody
