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
from typing import Annotated, Any, ClassVar, Literal

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

from ..competition_rules import GRANT_ID_RE, TIER_SLUG_MAX_CHARS

# Instants leave the product in one format (core.clock.iso).
TIMESTAMP_RE = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$"
# Event ids: 'evt_', then the creation time in ms (12 hex digits, so ids sort by time) and 16
# random hex digits.
EVENT_ID_RE = r"^evt_[0-9a-f]{28}$"

Instant = Annotated[StrictStr, Field(pattern=TIMESTAMP_RE, examples=["2026-11-24T00:02:40.681Z"])]
Window = Annotated[StrictStr, Field(pattern=r"^(daily|weekly|monthly|all-time|custom)$")]
Slug = Annotated[StrictStr, Field(min_length=1, max_length=50)]
PlayerIdText = Annotated[StrictStr, Field(min_length=1, max_length=64)]
GrantId = Annotated[StrictStr, Field(pattern=GRANT_ID_RE, examples=["grant_h7Kq2XbN0vLw9RtYc3ZpEg"])]
# A tier's slug, or "" where there is none (a board without tiers).
TierText = Annotated[StrictStr, Field(max_length=TIER_SLUG_MAX_CHARS)]


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


class TopStanding(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    rank: StrictInt = Field(ge=1)
    player_id: PlayerIdText
    display_name: StrictStr = Field(description='The name shown for them; "" for none.')
    score: StrictInt = Field(description="The score as stored (a time in ms, points, hundredths: the board's format).")


# The final standings' first ranks a period.archived carries (all of them: read `standings`).
PERIOD_EVENT_TOP = 10


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
    top: list[TopStanding] = Field(
        default_factory=list, description=f"The first {PERIOD_EVENT_TOP} of the final standings, in rank order."
    )


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


class RewardGranted(EventData):
    """A player was granted a reward for a period of a competing board (by its settlement). It waits
    to be claimed (``POST …/rewards/{grant_id}/claim``) until ``expires_at``. Once per player and period."""

    TYPE: ClassVar[str] = "reward.granted"
    VERSION: ClassVar[int] = 1

    leaderboard: Slug
    window: Window
    period_id: StrictStr
    player_id: PlayerIdText
    grant_id: GrantId
    cohort: StrictStr = Field(description='The cohort the player ranked in; "" when the board has none.')
    tier: TierText = Field(description='The tier the player played the period in; "" on a board without tiers.')
    rank: StrictInt = Field(ge=1, description="Their rank in the cohort (or the board) when the period settled.")
    reward: dict[str, Any] = Field(description="The studio's reward, as its reward table gives it.")
    granted_at: Instant
    expires_at: Instant = Field(description="The end of the claim window: claims from then on are refused.")


class RewardClaimed(EventData):
    """A game server claimed a player's reward: give it to the player now (once per grant)."""

    TYPE: ClassVar[str] = "reward.claimed"
    VERSION: ClassVar[int] = 1

    leaderboard: Slug
    window: Window
    period_id: StrictStr
    player_id: PlayerIdText
    grant_id: GrantId
    reward: dict[str, Any]
    claimed_at: Instant


class RewardExpired(EventData):
    """A reward's claim window passed unclaimed: it can no longer be claimed (once per grant)."""

    TYPE: ClassVar[str] = "reward.expired"
    VERSION: ClassVar[int] = 1

    leaderboard: Slug
    window: Window
    period_id: StrictStr
    player_id: PlayerIdText
    grant_id: GrantId
    reward: dict[str, Any]
    expires_at: Instant = Field(description="When its claim window ended.")
    expired_at: Instant = Field(description="When the expiry sweep marked it (at or after expires_at).")


class TierChanged(EventData):
    """A player moved up or down a league's tiers when a period settled (a player who stays in
    their tier has a history row, but no event)."""

    TYPE: ClassVar[str] = "tier.changed"
    VERSION: ClassVar[int] = 1

    leaderboard: Slug
    period_id: StrictStr = Field(description="The period whose settlement moved them.")
    player_id: PlayerIdText
    from_tier: TierText
    to_tier: TierText
    move: Literal[-1, 1] = Field(description="1: promoted (up a tier); -1: demoted.")
    cohort: StrictStr = Field(description='The cohort they ranked in; "" when the board has none.')
    rank: StrictInt | None = Field(ge=1, description="Their rank in the cohort; null: no score that period.")
    changed_at: Instant


class PeriodSettled(EventData):
    """A competing board's period settled (exactly once, with its archive): every entrant's rank
    in their cohort, tier move and reward are frozen; read them at ``settlement``. Its
    ``tier.changed`` and ``reward.granted`` events are written in the same transaction."""

    TYPE: ClassVar[str] = "period.settled"
    VERSION: ClassVar[int] = 1

    leaderboard: Slug
    window: Window
    period_id: StrictStr
    entrants: StrictInt = Field(ge=0, description="Players who entered the period.")
    cohorts: StrictInt = Field(ge=0, description="Cohorts they raced in (1 on a board without cohorts).")
    promoted: StrictInt = Field(ge=0, description="Entrants who moved up a tier.")
    demoted: StrictInt = Field(ge=0, description="Entrants who moved down a tier.")
    granted: StrictInt = Field(ge=0, description="Entrants granted a reward.")
    settled_at: Instant
    settlement: StrictStr = Field(description="The API path of the settlement, entrant by entrant.")


class WebhookTest(EventData):
    """Asked for by `POST …/webhooks/{endpoint_id}/test` (or admin, or `manage.py webhooks test`):
    delivered to that one endpoint only, to check that a receiver verifies and answers 2xx."""

    TYPE: ClassVar[str] = "webhook.test"
    VERSION: ClassVar[int] = 1

    endpoint_id: Annotated[StrictStr, Field(min_length=1, max_length=40)]
    requested_at: Instant


# Every event type, by name. A type not here cannot be written, subscribed to or delivered.
EVENTS: dict[str, type[EventData]] = {
    model.TYPE: model
    for model in (
        PeriodArchived,
        PeriodSettled,
        SeasonEnded,
        BoardClosed,
        PlayerErased,
        ScoreCorrected,
        GameDeleted,
        RewardGranted,
        RewardClaimed,
        RewardExpired,
        TierChanged,
        WebhookTest,
    )
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
