"""What a client may send on a live socket (docs/websocket.md, "Client → server").

One closed pydantic model per action (``extra="forbid"``: a field the server does not
know is refused, not ignored, so a client's typo shows at once), as live/events.py
declares what the server sends. A socket class dispatches from one table,
``actions: {name: Action(model, handler)}``; :func:`parse` turns a frame's JSON object
into the action's model, or into the ``error`` reply the protocol defines (codes
``unknown_action`` and ``invalid``; the frame-level ``malformed`` and the budget are
LiveSocket's). What depends on the game (which boards, which windows) is checked by
the handler, with the same messages.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Generic, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from core.models import PLAYER_ID_MAX_CHARS, is_player_id

from .. import events

# Rows a subscribe without a limit gets.
DEFAULT_LIMIT = 25
# Players one socket follows at most (each is a group its process joins).
MAX_FOLLOWED = 50

_CLOSED = ConfigDict(extra="forbid", frozen=True, strict=True)


def _player_id(value: str) -> str:
    if not is_player_id(value):
        raise ValueError("not a valid player id")
    return value


PlayerId = Annotated[str, Field(min_length=1, max_length=PLAYER_ID_MAX_CHARS), AfterValidator(_player_id)]
# A cohort id ("3", a league's "silver-3": a tier slug of at most 32 characters and a number) or
# "mine"; which ids the period has is the handler's to say (cohort_not_found).
COHORT_MAX_CHARS = 48
CohortId = Annotated[str, Field(min_length=1, max_length=COHORT_MAX_CHARS, pattern=r"^[a-z0-9-]+$")]


class Subscribe(BaseModel):
    """Watch one window of a board: a snapshot now, then its changes."""

    model_config = _CLOSED
    action: Literal["subscribe"]
    leaderboard: str | None = None  # the game's first board when absent
    period: str
    limit: int = Field(default=DEFAULT_LIMIT, ge=1, le=events.LIVE_LIMIT_MAX)
    # Rows from this position (0: the top): a deep page of the board, live as the top is.
    offset: int = Field(default=0, ge=0, le=events.LIVE_OFFSET_MAX)
    cohort: CohortId | None = None  # a cohort of the window ("mine": the followed player's) instead of the board


class Unsubscribe(BaseModel):
    """Stop watching one window of a board."""

    model_config = _CLOSED
    action: Literal["unsubscribe"]
    leaderboard: str | None = None
    period: str
    cohort: CohortId | None = None  # any: the window's cohort view, whichever cohort it watches


class Follow(BaseModel):
    """Follow players: their standing on the subscribed boards now, then when it moves."""

    model_config = _CLOSED
    action: Literal["follow"]
    player_ids: list[PlayerId] = Field(max_length=MAX_FOLLOWED)


class Presence(BaseModel):
    """The game's presence: a snapshot now, then its changes."""

    model_config = _CLOSED
    action: Literal["presence"]


class Recent(BaseModel):
    """The game's latest submissions: a list now, then one per tick with new ones."""

    model_config = _CLOSED
    action: Literal["recent"]


# Every client -> server message, by action (what docs/websocket.md documents; tests check both).
MESSAGES: dict[str, type[BaseModel]] = {
    "subscribe": Subscribe,
    "unsubscribe": Unsubscribe,
    "follow": Follow,
    "presence": Presence,
    "recent": Recent,
}

# What an invalid field's ``error`` says, by field ({windows}: the board's, filled in by the
# socket). Unknown fields have their own message (see parse()).
FIELD_MESSAGES: dict[str, str] = {
    # Not a list of the game's boards: a game may have thousands, and a refusal never lists a
    # tenant's data (GET /api/v1/games/{slug} lists them, a page at a time).
    "leaderboard": "leaderboard must be the slug of one of this game's active leaderboards.",
    "period": "period must be one of: {windows}.",
    "limit": f"limit must be an integer from 1 to {events.LIVE_LIMIT_MAX}.",
    "offset": f"offset must be an integer from 0 to {events.LIVE_OFFSET_MAX:,}.",
    "player_ids": f"player_ids must be a list of at most {MAX_FOLLOWED} valid player ids.",
    "cohort": 'cohort must be "mine" or a cohort id, such as "3".',
}

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Action(Generic[M]):
    """One entry of a socket's table: the message's model and the method that handles it."""

    model: type[M]
    handler: Callable[[Any, M], Awaitable[None]]


@dataclass(frozen=True)
class Refusal:
    """A message the socket answers with an ``error`` (``field``: the invalid field, if one is)."""

    code: events.ErrorCode
    message: str
    field: str | None = None
    unknown_field: bool = False


def parse(actions: Mapping[str, Action[Any]], message: dict[str, Any]) -> tuple[Action[Any], BaseModel] | Refusal:
    """The action a JSON object names and its validated model, or why it is refused."""
    action = message.get("action")
    entry = actions.get(action) if isinstance(action, str) else None
    if entry is None:
        return Refusal("unknown_action", f"action must be one of: {', '.join(actions)}.")
    try:
        return entry, entry.model.model_validate(message)
    except ValidationError as error:
        first = error.errors(include_url=False, include_input=False)[0]
        field = str(first["loc"][0]) if first["loc"] else ""
        if first["type"] == "extra_forbidden":
            known = ", ".join(entry.model.model_fields)
            return Refusal("invalid", f"Unknown field {field!r}: {action} takes {known}.", field, unknown_field=True)
        return Refusal("invalid", FIELD_MESSAGES.get(field, f"{field} is not valid."), field)
