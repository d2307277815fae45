"""Request and response shapes of the scores and standings endpoints (and their OpenAPI schema)."""

from __future__ import annotations

import datetime as dt
import re
from typing import Annotated, Any, Literal, get_args

from ninja import Schema
from pydantic import AfterValidator, AwareDatetime, BaseModel, BeforeValidator, Field, StrictInt

from core.board_rules import WINDOW_LABEL_MAX_CHARS
from core.competition_rules import (
    CLAIM_WINDOW_DEFAULT_SECS,
    CLAIM_WINDOW_MAX_SECS,
    CLAIM_WINDOW_MIN_SECS,
    COHORT_SIZE_MAX,
    COHORT_SIZE_MIN,
    MAX_ATTEMPTS_MAX,
    MAX_ENTRANTS_MAX,
    RANK_MAX,
    SETTLE_DELAY_MAX_SECS,
)
from core.models import ENTRY_WINDOW_MAX_SECS, MAX_BATCH_ITEMS, MAX_SAFE_SCORE
from core.schemas import ErrorOut, PlayerId, SingleLine, with_example

Score = Annotated[StrictInt, Field(ge=-MAX_SAFE_SCORE, le=MAX_SAFE_SCORE, examples=[120])]


_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
# A day inside the calendar's ends, so that every zone (up to 14 h off UTC) can show the instant.
_EARLIEST = dt.datetime(1, 1, 2, tzinfo=dt.UTC)
_LATEST = dt.datetime(9999, 12, 30, tzinfo=dt.UTC)


def _iso_text(value: object) -> object:
    # pydantic would take a number, or text of one, as a Unix time: the API takes what its schema
    # says, ISO 8601 text.
    if not isinstance(value, str) or not _ISO_DATE.match(value):
        raise ValueError("Give an ISO 8601 time with its zone, such as 2026-03-02T00:00:00Z.")
    return value


def _in_calendar(value: dt.datetime) -> dt.datetime:
    # Compared, never converted: 9999-12-31T23:00-14:00 overflows the calendar in UTC, which
    # saving it did (a 500).
    if not _EARLIEST <= value <= _LATEST:
        raise ValueError("Give a time from 0001-01-02 to 9999-12-30 (UTC), which every time zone can show.")
    return value


# An instant as ISO 8601 text with its zone (Z or ±hh:mm): a naive time has no one meaning, and
# compared with an aware one it cannot be ordered at all.
Instant = Annotated[AwareDatetime, BeforeValidator(_iso_text), AfterValidator(_in_calendar)]


# Request bodies are plain pydantic models: ninja's Schema adds a Django-object
# validator that made each batch item ~6x slower to check.


Metadata = Annotated[
    dict[str, Any],
    Field(
        description="Stored with the player's entry (best mode: with the submission that set the best; otherwise "
        "the latest) and returned with it; at most 512 bytes as compact JSON.",
        examples=[{"car": "mx-5", "replay": "r-8812"}],
    ),
]


# The windows a board keeps (games/periods.py; core/openapi.py PERIODS for URL parameters).
Window = Literal["daily", "weekly", "monthly", "all-time", "custom"]
Mode = Literal["increment", "best", "latest"]
Order = Literal["desc", "asc"]
Ties = Literal["shared", "earliest", "subscore"]
# A competing board's settings (core/competition_rules.py says how they fit the board's windows).
CompetitionWindow = Literal["", "daily", "weekly", "monthly", "all-time", "custom"]
Entry = Literal["open", "join"]
MaxEntrants = Annotated[StrictInt, Field(ge=1, le=MAX_ENTRANTS_MAX, examples=[50])]
EntryWindowSecs = Annotated[StrictInt, Field(ge=1, le=ENTRY_WINDOW_MAX_SECS, examples=[3600])]
MaxAttempts = Annotated[StrictInt, Field(ge=1, le=MAX_ATTEMPTS_MAX, examples=[3])]
CohortSize = Annotated[StrictInt, Field(ge=COHORT_SIZE_MIN, le=COHORT_SIZE_MAX, examples=[30])]
CohortFill = Literal["first_come", "balanced"]
CohortBy = Literal["none", "rating", "tier"]
MinScores = Annotated[StrictInt, Field(ge=0, le=MAX_ATTEMPTS_MAX, examples=[1])]
ClaimWindowSecs = Annotated[StrictInt, Field(ge=CLAIM_WINDOW_MIN_SECS, le=CLAIM_WINDOW_MAX_SECS, examples=[604800])]
SettleDelaySecs = Annotated[StrictInt, Field(ge=0, le=SETTLE_DELAY_MAX_SECS, examples=[3600])]
Line = Annotated[str, Field(max_length=10, examples=["5", "20%"])] | Annotated[StrictInt, Field(ge=0, le=1000)]


class TierSetting(BaseModel):
    """One tier of a league (listed bottom first)."""

    model_config = with_example(
        {"slug": "silver", "name": "Silver", "promote": "5", "demote": "20%"}, forbid_extra=True
    )

    slug: Annotated[str, Field(pattern=r"^[a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?$")]
    name: Annotated[SingleLine, Field(max_length=50)] | None = Field(
        default=None, description="Shown; the slug if left out."
    )
    promote: Line | None = Field(
        default=None, description='Who moves up from each cohort: a count ("5") or a share ("20%"); none at the top.'
    )
    demote: Line | None = Field(default=None, description="Who moves down, likewise; none at the bottom.")


class RewardSetting(BaseModel):
    """One rule of the reward table: a rank range or a top percentage (within the cohort)."""

    model_config = with_example(
        {"tier": "gold", "from_rank": 1, "to_rank": 3, "reward": {"coins": 500}}, forbid_extra=True
    )

    tier: str | None = Field(default=None, description="Only this tier's cohorts; left out: every tier.")
    from_rank: Annotated[StrictInt, Field(ge=1, le=RANK_MAX)] | None = None
    to_rank: Annotated[StrictInt, Field(ge=1, le=RANK_MAX)] | None = Field(
        default=None, description="Inclusive; from_rank's if left out."
    )
    top_percent: Annotated[float, Field(gt=0, le=100)] | None = Field(
        default=None, description="Instead of a rank range: the top this share of the cohort (two decimals at most)."
    )
    reward: dict[str, Any] = Field(description="The studio's own object, at most 1,024 bytes as compact JSON.")


_COMPETITION_WINDOW_HELP = (
    "The window that competes; '' for none, or the board's only window once another competition setting "
    "is set. all-time competes only in a season."
)
_ENTRY_HELP = "open: a player's first score in a period enters them; join: a player joins first."
_MAX_ENTRANTS_HELP = "Players one period of the competing window takes at most; null: any number."
_ENTRY_WINDOW_SECS_HELP = "Players enter only during the first this many seconds of each period; null: all along."
_MAX_ATTEMPTS_HELP = "Scores one period accepts from each player at most; null: any number."
_COHORT_SIZE_HELP = (
    "Entrants race in cohorts of at most this many (2 to 1,000): ranks, reads and rewards within the cohort; "
    "null: one race for all."
)
_COHORT_FILL_HELP = (
    "first_come: cohorts fill in the order players enter; balanced: entrants are held until entry closes (or "
    "an hour at most without an entry window), then split into cohorts whose sizes differ by one at most."
)
_COHORT_BY_HELP = (
    "none; rating: cohorts are contiguous bands of the rating given at join (needs entry join, balanced and "
    "an entry window); tier: a league's cohorts, formed within each tier (needs tiers)."
)
_TIERS_HELP = "A league's tiers, bottom first (2 to 20): each period moves the top of every cohort up, the bottom down."
_START_TIER_HELP = "The tier a new player starts in; '' for the bottom one."
_MIN_SCORES_HELP = "Scores a player needs in a period to keep their tier: below it they drop one, whatever their rank."
_REWARDS_HELP = "The reward table (at most 50 rules, the first that matches wins), ranked within the cohort."
_CLAIM_WINDOW_HELP = "How long a grant can be claimed (1 hour to 1 year); then it expires."
_SETTLE_DELAY_HELP = (
    "A review buffer (seconds, up to a week) between a period's end and its settlement: a hide, a correction "
    "or an erasure in it counts."
)

# The vocabularies core/board_rules.py checks, for the schema (it answers 422 with its own words).
_WINDOWS: dict[str, Any] = {"items": {"type": "string", "enum": list(get_args(Window))}, "uniqueItems": True}
_FORMAT: dict[str, Any] = {"pattern": "^(integer|time_ms|decimal:[1-6])$"}

# The examples the OpenAPI schema shows: one board's day, from a real response.
_PERIOD_SCORE = {"period_id": "2026-11-24", "score": 1200, "rank": 3}
_SCORE = {
    "player_id": "ada",
    "display_name": "Ada",
    "leaderboard": "main",
    "periods": {"daily": _PERIOD_SCORE, "all-time": {"period_id": "all-time", "score": 1200, "rank": 7}},
    "metadata": {"car": "mx-5"},
}
_REFUSED_ITEM = {
    "error": {
        "code": "board_not_found",
        "message": "Tetris has no leaderboard 'nope'.",
        "field": "scores[1].leaderboard",
    }
}
_WINDOW_LABELS_HELP = (
    'The studio\'s own names of some of the board\'s windows, e.g. {"custom": "Race week"}: pages show them '
    f"on tabs and in headings; others are Daily, Weekly, Monthly, All-time or Custom (1-{WINDOW_LABEL_MAX_CHARS} "
    "characters, one line)."
)
WindowLabel = Annotated[SingleLine, Field(min_length=1, max_length=WINDOW_LABEL_MAX_CHARS)]

_WINDOW = {
    "period": "daily",
    "name": "Daily",
    "period_id": "2026-11-24",
    "starts_at": "2026-11-24T00:00:00.000Z",
    "resets_at": "2026-11-25T00:00:00.000Z",
}
_BOARD: dict[str, Any] = {
    "slug": "main",
    "name": "Points",
    "description": "",
    "mode": "best",
    "order": "desc",
    "windows": [_WINDOW],
    "window_labels": {},
    "cron": "",
    "timezone": "UTC",
    "starts_at": None,
    "ends_at": None,
    "ties": "shared",
    "subscore_order": "desc",
    "format": "integer",
    "min_score": None,
    "max_score": None,
    "competition_window": "",
    "entry": "open",
    "max_entrants": None,
    "entry_window_secs": None,
    "max_attempts": None,
    "cohort_size": None,
    "cohort_fill": "first_come",
    "cohort_by": "none",
    "tiers": [],
    "start_tier": "",
    "min_scores": 0,
    "rewards": [],
    "claim_window_secs": 2592000,
    "settle_delay_secs": 0,
    "competition": None,
    "active": True,
    "open": True,
}
_COMPETITION_PERIOD = {
    "id": "2026-W48",
    "starts_at": "2026-11-23T00:00:00.000Z",
    "entry_closes_at": "2026-11-24T00:00:00.000Z",
    "cohorts_at": "2026-11-24T00:00:00.000Z",
    "ends_at": "2026-11-30T00:00:00.000Z",
    "settles_at": "2026-11-30T01:00:00.000Z",
}
_COMPETITION: dict[str, Any] = {
    "window": "weekly",
    "entry": "join",
    "max_entrants": 50,
    "entry_window_secs": 86400,
    "max_attempts": 3,
    "cohort_size": 30,
    "cohort_fill": "balanced",
    "cohort_by": "none",
    "tiers": [],
    "start_tier": "",
    "min_scores": 0,
    "rewards": [{"tier": None, "from_rank": 1, "to_rank": 3, "reward": {"coins": 500}}],
    "claim_window_secs": 2592000,
    "settle_delay_secs": 3600,
    "period": _COMPETITION_PERIOD,
}
_ENTRY = {"rank": 3, "player_id": "ada", "display_name": "Ada", "score": 1200, "metadata": {"car": "mx-5"}}
_BOARD_PAGE = {
    "leaderboard": "main",
    "period": "daily",
    "period_id": "2026-11-24",
    "resets_at": "2026-11-25T00:00:00.000Z",
    "total": 302,
    "entries": [_ENTRY],
}
_STANDING = {**_ENTRY, "total": 302, "percentile": 98.34}
_WINDOW_STANDING = {"period_id": "2026-11-24", "standing": _STANDING}


class ScoreIn(BaseModel):
    model_config = with_example(
        {"player_id": "ada", "score": 1200, "display_name": "Ada", "metadata": {"car": "mx-5"}}, forbid_extra=True
    )

    player_id: PlayerId
    score: Score = Field(description="An integer, |score| <= 2^53-1. On increment boards, the amount added.")
    subscore: Score | None = Field(
        default=None,
        description="Boards with ties `subscore` only: orders equal scores (the board says whether higher or lower "
        "ranks first), then who reached the pair first. Omitted: 0. On increment boards, the amount added.",
        examples=[42],
    )
    display_name: Annotated[SingleLine, Field(max_length=64, examples=["Ada"])] | None = None
    metadata: Metadata | None = None


class BatchItemIn(ScoreIn):
    model_config = with_example({"leaderboard": "main", "player_id": "ada", "score": 1200}, forbid_extra=True)

    leaderboard: str = Field(description="The slug of the game's leaderboard this score is for.", examples=["main"])


class BatchIn(BaseModel):
    model_config = with_example(
        {
            "scores": [
                {"leaderboard": "main", "player_id": "ada", "score": 1200, "display_name": "Ada"},
                {"leaderboard": "speedrun", "player_id": "bob", "score": 93512},
            ]
        },
        forbid_extra=True,
    )

    # Items are validated one by one so that one bad item fails alone.
    scores: list[Any] = Field(
        min_length=1,
        max_length=MAX_BATCH_ITEMS,
        json_schema_extra=lambda schema: schema.update(items=BatchItemIn.model_json_schema()),
    )


class PeriodScoreOut(Schema):
    model_config = with_example(_PERIOD_SCORE)

    period_id: str
    score: int
    rank: int
    subscore: int | None = Field(default=None, description="Boards with ties `subscore` only.")


class ScoreOut(Schema):
    model_config = with_example(_SCORE)

    player_id: str
    display_name: str
    leaderboard: str
    periods: dict[str, PeriodScoreOut]
    metadata: dict[str, Any] | None


class BatchOut(Schema):
    model_config = with_example({"results": [_SCORE, _REFUSED_ITEM]})

    results: list[ScoreOut | ErrorOut]


class PeriodOut(Schema):
    model_config = with_example(_WINDOW)

    period: Window = Field(description="The window: daily, weekly, monthly, all-time or custom.")
    name: str = Field(
        description="What pages call it: the board's `window_labels` entry, else Daily, Weekly, Monthly, "
        "All-time or Custom."
    )
    period_id: str
    starts_at: dt.datetime | None
    resets_at: dt.datetime | None


class CompetitionPeriodOut(Schema):
    model_config = with_example(_COMPETITION_PERIOD)

    id: str = Field(description="The current period of the competing window (its id in URLs).")
    starts_at: dt.datetime | None
    entry_closes_at: dt.datetime | None = Field(
        description="When entry closes: `entry_window_secs` after the start, at the period's end at the latest; "
        "null without an entry window."
    )
    cohorts_at: dt.datetime | None = Field(
        description="Balanced cohorts: when the period's entrants are split into cohorts (until then they have "
        "none); null where entrants are placed as they enter, or without cohorts."
    )
    ends_at: dt.datetime | None = Field(description="When the period ends; null if it never does.")
    settles_at: dt.datetime | None = Field(
        description="When it settles (its end, after `settle_delay_secs`; the close job runs within seconds of it)."
    )


class CompetitionOut(Schema):
    model_config = with_example(_COMPETITION)

    window: Window = Field(description="The window that competes (named, or the board's only one).")
    entry: Entry = Field(description=_ENTRY_HELP)
    max_entrants: int | None = Field(description=_MAX_ENTRANTS_HELP)
    entry_window_secs: int | None = Field(description=_ENTRY_WINDOW_SECS_HELP)
    max_attempts: int | None = Field(description=_MAX_ATTEMPTS_HELP)
    cohort_size: int | None = Field(description=_COHORT_SIZE_HELP)
    cohort_fill: CohortFill = Field(description=_COHORT_FILL_HELP)
    cohort_by: CohortBy = Field(description=_COHORT_BY_HELP)
    tiers: list[TierSetting] = Field(description=_TIERS_HELP)
    start_tier: str = Field(description=_START_TIER_HELP)
    min_scores: int = Field(description=_MIN_SCORES_HELP)
    rewards: list[RewardSetting] = Field(description=_REWARDS_HELP)
    claim_window_secs: int = Field(description=_CLAIM_WINDOW_HELP)
    settle_delay_secs: int = Field(description=_SETTLE_DELAY_HELP)
    period: CompetitionPeriodOut


class LeaderboardOut(Schema):
    model_config = with_example(_BOARD)

    slug: str
    name: str
    description: str
    mode: Mode
    order: Order
    windows: list[PeriodOut] = Field(description="Each window with its current period and when it resets next.")
    window_labels: dict[str, str] = Field(description=_WINDOW_LABELS_HELP)
    cron: str = Field(description="When the custom window resets (5-field cron, in `timezone`); '' for none.")
    timezone: str
    starts_at: dt.datetime | None = Field(description="The season's start: no scores before.")
    ends_at: dt.datetime | None = Field(description="The season's end: no scores from then on.")
    ties: Ties = Field(
        description="shared (equal scores share a rank), earliest (the first to reach it ranks first) or subscore "
        "(equal scores by subscore, then the first to reach the pair)."
    )
    subscore_order: Order = Field(
        description="With ties `subscore`: desc (a higher subscore ranks first) or asc (a lower one does)."
    )
    format: str = Field(
        description="How to show scores: integer, time_ms or decimal:N (values stay integers).",
        json_schema_extra=_FORMAT,
    )
    min_score: int | None
    max_score: int | None
    competition_window: CompetitionWindow = Field(description=_COMPETITION_WINDOW_HELP)
    entry: Entry = Field(description=_ENTRY_HELP)
    max_entrants: int | None = Field(description=_MAX_ENTRANTS_HELP)
    entry_window_secs: int | None = Field(description=_ENTRY_WINDOW_SECS_HELP)
    max_attempts: int | None = Field(description=_MAX_ATTEMPTS_HELP)
    cohort_size: int | None = Field(description=_COHORT_SIZE_HELP)
    cohort_fill: CohortFill = Field(description=_COHORT_FILL_HELP)
    cohort_by: CohortBy = Field(description=_COHORT_BY_HELP)
    tiers: list[TierSetting] = Field(description=_TIERS_HELP)
    start_tier: str = Field(description=_START_TIER_HELP)
    min_scores: int = Field(description=_MIN_SCORES_HELP)
    rewards: list[RewardSetting] = Field(description=_REWARDS_HELP)
    claim_window_secs: int = Field(description=_CLAIM_WINDOW_HELP)
    settle_delay_secs: int = Field(description=_SETTLE_DELAY_HELP)
    competition: CompetitionOut | None = Field(
        description="The competition's rules and its current period, as settings and clock make them; "
        "null for a board that does not compete.",
        json_schema_extra={"examples": [_COMPETITION]},
    )
    active: bool
    open: bool = Field(description="Whether it takes scores now (active, and within its season).")


class LeaderboardIn(BaseModel):
    """A board's settings (PUT: all of them, omitted ones take their defaults)."""

    model_config = with_example(
        {"name": "Speedrun", "mode": "best", "order": "asc", "windows": ["weekly", "all-time"], "format": "time_ms"},
        forbid_extra=True,
    )

    name: Annotated[SingleLine, Field(max_length=100)] = ""
    description: Annotated[str, Field(max_length=500)] = ""
    mode: Mode
    order: Order
    windows: list[str] = Field(
        default=["daily", "weekly", "monthly", "all-time"], examples=[["weekly", "custom"]], json_schema_extra=_WINDOWS
    )
    window_labels: dict[str, WindowLabel] = Field(
        default_factory=dict, description=_WINDOW_LABELS_HELP, examples=[{"custom": "Race week"}]
    )
    cron: Annotated[SingleLine, Field(max_length=100, examples=["0 18 * * FRI"])] = ""
    timezone: Annotated[SingleLine, Field(max_length=64)] = Field(
        default="", description="An IANA zone; '' uses the game's."
    )
    starts_at: Instant | None = None
    ends_at: Instant | None = None
    ties: Ties = "shared"
    subscore_order: Order = "desc"
    format: Annotated[SingleLine, Field(max_length=20, json_schema_extra=_FORMAT)] = "integer"
    min_score: Score | None = None
    max_score: Score | None = None
    competition_window: CompetitionWindow = Field(default="", description=_COMPETITION_WINDOW_HELP)
    entry: Entry = Field(default="open", description=_ENTRY_HELP)
    max_entrants: MaxEntrants | None = Field(default=None, description=_MAX_ENTRANTS_HELP)
    entry_window_secs: EntryWindowSecs | None = Field(default=None, description=_ENTRY_WINDOW_SECS_HELP)
    max_attempts: MaxAttempts | None = Field(default=None, description=_MAX_ATTEMPTS_HELP)
    cohort_size: CohortSize | None = Field(default=None, description=_COHORT_SIZE_HELP)
    cohort_fill: CohortFill = Field(default="first_come", description=_COHORT_FILL_HELP)
    cohort_by: CohortBy = Field(default="none", description=_COHORT_BY_HELP)
    tiers: list[TierSetting] = Field(default_factory=list, description=_TIERS_HELP)
    start_tier: Annotated[str, Field(max_length=32)] = Field(default="", description=_START_TIER_HELP)
    min_scores: MinScores = Field(default=0, description=_MIN_SCORES_HELP)
    rewards: list[RewardSetting] = Field(default_factory=list, description=_REWARDS_HELP)
    claim_window_secs: ClaimWindowSecs = Field(default=CLAIM_WINDOW_DEFAULT_SECS, description=_CLAIM_WINDOW_HELP)
    settle_delay_secs: SettleDelaySecs = Field(default=0, description=_SETTLE_DELAY_HELP)


class LeaderboardPatch(BaseModel):
    """Some of a board's settings (PATCH): the others stay."""

    model_config = with_example(
        {"name": "Weekly cup", "cron": "0 18 * * FRI", "windows": ["custom", "all-time"]}, forbid_extra=True
    )

    # Never null: a board always has a value of each (null was taken to the database, which
    # refused it as a conflict). Left out, unchanged: a PATCH applies only the fields it sends,
    # never these defaults.
    name: Annotated[SingleLine, Field(max_length=100)] = ""
    description: Annotated[str, Field(max_length=500)] = ""
    mode: Mode = "best"
    order: Order = "desc"
    windows: Annotated[list[str], Field(json_schema_extra=_WINDOWS)] = Field(default_factory=list)
    window_labels: dict[str, WindowLabel] = Field(default_factory=dict, description=_WINDOW_LABELS_HELP)
    cron: Annotated[SingleLine, Field(max_length=100)] = ""
    timezone: Annotated[SingleLine, Field(max_length=64)] = ""
    ties: Ties = "shared"
    subscore_order: Order = "desc"
    format: Annotated[SingleLine, Field(max_length=20, json_schema_extra=_FORMAT)] = "integer"
    # Null clears these.
    starts_at: Instant | None = None
    ends_at: Instant | None = None
    min_score: Score | None = None
    max_score: Score | None = None
    competition_window: CompetitionWindow = Field(default="", description=_COMPETITION_WINDOW_HELP)
    entry: Entry = Field(default="open", description=_ENTRY_HELP)
    max_entrants: MaxEntrants | None = Field(default=None, description=_MAX_ENTRANTS_HELP)
    entry_window_secs: EntryWindowSecs | None = Field(default=None, description=_ENTRY_WINDOW_SECS_HELP)
    max_attempts: MaxAttempts | None = Field(default=None, description=_MAX_ATTEMPTS_HELP)
    cohort_size: CohortSize | None = Field(default=None, description=_COHORT_SIZE_HELP)
    cohort_fill: CohortFill = Field(default="first_come", description=_COHORT_FILL_HELP)
    cohort_by: CohortBy = Field(default="none", description=_COHORT_BY_HELP)
    tiers: list[TierSetting] = Field(default_factory=list, description=_TIERS_HELP)
    start_tier: Annotated[str, Field(max_length=32)] = Field(default="", description=_START_TIER_HELP)
    min_scores: MinScores = Field(default=0, description=_MIN_SCORES_HELP)
    rewards: list[RewardSetting] = Field(default_factory=list, description=_REWARDS_HELP)
    claim_window_secs: ClaimWindowSecs = Field(default=CLAIM_WINDOW_DEFAULT_SECS, description=_CLAIM_WINDOW_HELP)
    settle_delay_secs: SettleDelaySecs = Field(default=0, description=_SETTLE_DELAY_HELP)


class SocketOut(Schema):
    model_config = with_example({"path": "/ws/games/tetris/", "port": None})

    path: str = Field(description="The websocket's path, on the host that answered this request.")
    port: int | None = Field(
        description="The port of that host the websockets listen on, when it is not this request's (null: the same)."
    )


class GameOut(Schema):
    model_config = with_example(
        {
            "slug": "tetris",
            "name": "Tetris",
            "description": "Stack the blocks.",
            "timezone": "UTC",
            "leaderboards": [_BOARD],
            "leaderboards_total": 1,
            "short_name": "Tetris",
            "accent": "#1f6feb",
            "logo_url": "/games/tetris/logo?v=5d41402abc4b2a76",
            "socket": {"path": "/ws/games/tetris/", "port": None},
        }
    )

    slug: str
    name: str
    description: str
    timezone: str
    leaderboards: list[LeaderboardOut] = Field(
        description="The game's first leaderboards (at most 10, in the order they were made); page "
        "through all of them with `GET /games/{game}/leaderboards`."
    )
    leaderboards_total: int = Field(description="How many leaderboards the game has in all.")
    short_name: str = Field(description="The name where room is short (the name when the studio set none).")
    accent: str | None = Field(description="The game's colour, `#rrggbb`, or null for the site's own.")
    logo_url: str | None = Field(description="The game's logo, a path on this server (null: none).")
    socket: SocketOut = Field(description="Where this game's live websocket is (docs/websocket.md).")


class EntryOut(Schema):
    model_config = with_example(_ENTRY)

    rank: int
    player_id: str
    display_name: str
    score: int
    subscore: int | None = Field(default=None, description="Boards with ties `subscore` only.")
    metadata: dict[str, Any] | None


class BoardOut(Schema):
    model_config = with_example(_BOARD_PAGE)

    leaderboard: str
    period: Window
    period_id: str
    resets_at: dt.datetime | None
    total: int
    entries: list[EntryOut]


class FriendsOut(BoardOut):
    model_config = with_example({**_BOARD_PAGE, "missing": ["zed"]})

    missing: list[str] = Field(description="Requested players who have no score on this board.")


class StandingOut(Schema):
    model_config = with_example(_STANDING)

    player_id: str
    display_name: str
    rank: int
    score: int
    total: int
    percentile: float = Field(description="Share of the board ranked below this entry, in percent.")
    subscore: int | None = Field(default=None, description="Boards with ties `subscore` only.")
    metadata: dict[str, Any] | None
    cohort: str | None = Field(
        default=None,
        description="Boards with cohorts, in their competing window only: the player's cohort (null until a "
        "balanced split places them).",
    )
    cohort_rank: int | None = Field(default=None, description="With `cohort`: the player's rank within it.")
    cohort_size: int | None = Field(default=None, description="With `cohort`: its entrants, with a score or not.")
    tier: str | None = Field(default=None, description="With `cohort`: the league tier it races in (null outside one).")


class WindowStandingOut(Schema):
    model_config = with_example(_WINDOW_STANDING)

    period_id: str
    standing: StandingOut | None = Field(description="None when the player has no score in this period.")


class ProfileOut(Schema):
    model_config = with_example(
        {
            "player_id": "ada",
            "display_name": "Ada",
            "leaderboards": {"main": {"daily": _WINDOW_STANDING}},
            "leaderboards_total": 1,
        }
    )

    player_id: str
    display_name: str
    leaderboards: dict[str, dict[str, WindowStandingOut]] = Field(
        description="Per leaderboard slug, per window: the player's standing in its current period; "
        "for the page of the game's leaderboards that `offset` and `limit` ask for."
    )
    leaderboards_total: int = Field(description="How many leaderboards the game has in all.")


class RecentOut(Schema):
    model_config = with_example(
        {
            "player_id": "ada",
            "display_name": "Ada",
            "leaderboard": "main",
            "score": 1200,
            "at": "2026-11-24T14:05:23.396Z",
        }
    )

    player_id: str
    display_name: str
    leaderboard: str
    score: int
    at: dt.datetime


class NamedPlayerOut(Schema):
    model_config = with_example({"player_id": "ada", "display_name": "Ada"})

    player_id: str = Field(examples=["player-42"])
    display_name: str = Field(examples=["Ada"])


class PlayersFoundOut(Schema):
    model_config = with_example({"players": [{"player_id": "ada", "display_name": "Ada"}]})

    players: list[NamedPlayerOut] = Field(
        description="Players whose display name starts with `q` (any case or accents), hidden players left out; "
        "a player whose id is `q` exactly comes first."
    )
