"""Every domain event: its type, its version and the shape of its ``data``, declared once.

An event leaves the product as an envelope (``EventEnvelope``)::

    {"id": "evt_…", "type": "period.archived", "version": 1,
     "created_at": "2026-11-24T00:02:40.681Z", "data": {…}}

``data`` is one of the models below, closed (no other keys) and strict. ``event_emit`` validates
every event it writes against its model, the tests validate every envelope a handler receives
(``envelope_check``), and docs/events.md shows an example of each, checked against these too.
A change a consumer could trip on (a key removed, renamed or retyped) is a new ``VERSION`` of
the type; adding a key is not (consumers must ignore keys they do not know).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    model_serializer,
)

# typing_extensions: pydantic validates typing.TypedDict only from Python 3.12 on.
from typing_extensions import TypedDict

# Instants leave the product in one format (core.clock.iso).
TIMESTAMP_RE = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$"
# Event ids: 'evt_', then the creation time in ms (12 hex digits, so ids sort by time) and 16
# random hex digits.
EVENT_ID_RE = r"^evt_[0-9a-f]{28}$"

Instant = Annotated[StrictStr, Field(pattern=TIMESTAMP_RE, examples=["2026-11-24T00:02:40.681Z"])]
Window = Annotated[StrictStr, Field(pattern=r"^(daily|weekly|monthly|all-time|custom)$")]
Slug = Annotated[StrictStr, Field(min_length=1, max_length=50)]
PlayerIdText = Annotated[StrictStr, Field(min_length=1, max_length=64)]


class EventEnvelope(TypedDict):
    """What a handler receives (and a webhook will send): the same for every delivery of an event."""

    id: str
    type: str
    version: int
    created_at: str
    data: dict[str, Any]


class EventData(BaseModel):
    """The ``data`` of one event type; subclasses set ``TYPE`` and ``VERSION``."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    TYPE: ClassVar[str]
    VERSION: ClassVar[int]

    game: Slug = Field(description="The game's slug.")


class PeriodArchived(EventData):
    """A board's period is over and its final standings are archived for good (exactly once per
    period). Read them at ``standings``."""

    TYPE: ClassVar[str] = "period.archived"
    VERSION: ClassVar[int] = 1

    leaderboard: Slug
    window: Window
    period_id: StrictStr
    starts_at: Instant
    ends_at: Instant = Field(description="Exclusive: when the period closed.")
    ended_early: StrictBool = Field(
        description="True when the board was taken out of play before the period's end, which then counts as ended."
    )
    entrants: StrictInt = Field(ge=0, description="Players on the final standings.")
    archived_at: Instant
    standings: StrictStr = Field(description="The API path of the final standings.")


class FinalPeriod(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    window: Window
    period_id: StrictStr
    entrants: StrictInt = Field(ge=0)
    standings: StrictStr


class SeasonEnded(EventData):
    """A board's season (``starts_at`` to ``ends_at``) is over and the last period of each of its
    windows that held scores is archived: the season's results are final. Once per season end."""

    TYPE: ClassVar[str] = "season.ended"
    VERSION: ClassVar[int] = 1

    leaderboard: Slug
    starts_at: Instant | None = Field(description="null for a season without a start.")
    ends_at: Instant
    periods: list[FinalPeriod] = Field(description="Each window's final period, as archived.")


class BoardClosed(EventData):
    """A board was taken out of play (`DELETE …/leaderboards/{board}`, or admin): it takes no
    more scores, and its unarchived periods are archived at once (a ``period.archived`` each)."""

    TYPE: ClassVar[str] = "board.closed"
    VERSION: ClassVar[int] = 1

    leaderboard: Slug
    closed_at: Instant


class PlayerErased(EventData):
    """A player was erased from the game (a GDPR erasure): erase them in your systems too. A
    later score under the same id is a new player."""

    TYPE: ClassVar[str] = "player.erased"
    VERSION: ClassVar[int] = 1

    player_id: PlayerIdText
    erased_at: Instant


class _SubscoreIfAny(BaseModel):
    """Leaves ``subscore`` out of the payload when it is None: a board without subscores has
    none to show, and its payloads keep the shape they had before subscores existed."""

    @model_serializer(mode="wrap")
    def _without_absent_subscore(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        dumped: dict[str, Any] = handler(self)
        if dumped.get("subscore") is None:
            dumped.pop("subscore", None)
        return dumped


class CorrectedStanding(_SubscoreIfAny):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    period_id: StrictStr
    score: StrictInt
    rank: StrictInt = Field(ge=1)
    subscore: StrictInt | None = Field(default=None, description="Only on boards with ties 'subscore'.")


class ScoreCorrected(_SubscoreIfAny, EventData):
    """An admin corrected a player's score on a board's current periods (on an ``increment``
    board ``value`` was added, else the score became ``value``)."""

    TYPE: ClassVar[str] = "score.corrected"
    VERSION: ClassVar[int] = 1

    leaderboard: Slug
    player_id: PlayerIdText
    value: StrictInt
    subscore: StrictInt | None = Field(
        default=None, description="The subscore given with it, if any (ties 'subscore')."
    )
    reason: StrictStr
    windows: dict[Window, CorrectedStanding] = Field(description="The player's standing after it, per window.")
    corrected_at: Instant


class GameDeleted(EventData):
    """A game was deleted with everything it held (boards, players, archives)."""

    TYPE: ClassVar[str] = "game.deleted"
    VERSION: ClassVar[int] = 1

    deleted_at: Instant


# Every event type, by name. A type not here cannot be written, subscribed to or delivered.
EVENTS: dict[str, type[EventData]] = {
    model.TYPE: model for model in (PeriodArchived, SeasonEnded, BoardClosed, PlayerErased, ScoreCorrected, GameDeleted)
}


class _Envelope(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    id: Annotated[StrictStr, Field(pattern=EVENT_ID_RE)]
    type: StrictStr
    version: StrictInt
    created_at: Instant
    data: dict[str, Any]


def envelope_check(envelope: Mapping[str, Any]) -> None:
    """Raise AssertionError unless ``envelope`` is exactly a declared event (its envelope, its
    type's current version, and its data: closed, strict, every instant in the one format)."""
    try:
        _Envelope.model_validate(dict(envelope))
    except ValidationError as error:
        raise AssertionError(f"not an event envelope: {error}") from None
    model = EVENTS.get(envelope["type"])
    assert model is not None, f"undeclared event type {envelope['type']!r}"
    assert envelope["version"] == model.VERSION, f"{model.TYPE} is version {model.VERSION}, not {envelope['version']}"
    try:
        model.model_validate(envelope["data"])
    except ValidationError as error:
        raise AssertionError(f"{model.TYPE} data does not match its declaration: {error}") from None


def is_event_id(value: str) -> bool:
    return re.fullmatch(EVENT_ID_RE, value) is not None
