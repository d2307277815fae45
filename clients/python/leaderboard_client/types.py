"""The API's answers, as the OpenAPI schema declares them (/api/v1/openapi.json)."""

from __future__ import annotations

from typing import Any, Literal, TypedDict

Period = Literal["daily", "weekly", "monthly", "all-time", "custom"]


class ScoreItem(TypedDict, total=False):
    """One item of a batch: ``leaderboard``, ``player_id`` and ``score`` are required."""

    leaderboard: str
    player_id: str
    score: int
    display_name: str
    metadata: dict[str, Any]


class PeriodScore(TypedDict):
    period_id: str
    score: int
    rank: int


class ScoreResult(TypedDict):
    player_id: str
    display_name: str
    leaderboard: str
    periods: dict[str, PeriodScore]
    metadata: dict[str, Any] | None


class ErrorBody(TypedDict):
    code: str
    message: str
    field: str | None


class ItemError(TypedDict):
    error: ErrorBody


# A batch's result per item, in order: the score's standings, or why that item was refused.
BatchResult = ScoreResult | ItemError


class Entry(TypedDict):
    rank: int
    player_id: str
    display_name: str
    score: int
    metadata: dict[str, Any] | None


class BoardPage(TypedDict):
    leaderboard: str
    period: Period
    period_id: str
    resets_at: str | None
    total: int
    entries: list[Entry]


class FriendsPage(BoardPage):
    missing: list[str]


class Standing(TypedDict):
    player_id: str
    display_name: str
    rank: int
    score: int
    total: int
    percentile: float
    metadata: dict[str, Any] | None


class WindowStanding(TypedDict):
    period_id: str
    standing: Standing | None


class Profile(TypedDict):
    player_id: str
    display_name: str
    leaderboards: dict[str, dict[str, WindowStanding]]


class Window(TypedDict):
    period: Period
    period_id: str
    starts_at: str | None
    resets_at: str | None


class CompetitionPeriod(TypedDict):
    id: str
    starts_at: str | None
    entry_closes_at: str | None
    ends_at: str | None


class Competition(TypedDict):
    window: Period
    entry: Literal["open", "join"]
    max_entrants: int | None
    entry_window_secs: int | None
    max_attempts: int | None
    period: CompetitionPeriod


class Leaderboard(TypedDict):
    slug: str
    name: str
    description: str
    mode: Literal["increment", "best", "latest"]
    order: Literal["desc", "asc"]
    windows: list[Window]
    cron: str
    timezone: str
    starts_at: str | None
    ends_at: str | None
    ties: Literal["shared", "earliest"]
    format: str
    min_score: int | None
    max_score: int | None
    competition_window: Literal["", "daily", "weekly", "monthly", "all-time", "custom"]
    entry: Literal["open", "join"]
    max_entrants: int | None
    entry_window_secs: int | None
    max_attempts: int | None
    competition: Competition | None
    active: bool
    open: bool


class Game(TypedDict):
    slug: str
    name: str
    description: str
    timezone: str
    leaderboards: list[Leaderboard]


class Recent(TypedDict):
    player_id: str
    display_name: str
    leaderboard: str
    score: int
    at: str


class NamedPlayer(TypedDict):
    player_id: str
    display_name: str


class PresenceReport(TypedDict):
    online: int
    offline: int
    joined: int
    left: int


class OnlinePlayer(TypedDict):
    player_id: str
    display_name: str
    last_seen: str


class PresencePage(TypedDict):
    online: int
    watching: int
    offset: int
    players: list[OnlinePlayer]


class PlayerPresence(TypedDict):
    online: bool
    last_seen: str | None


class CompetitionEntry(TypedDict):
    """A player's entry to a competing board's current period (docs/competitions.md)."""

    leaderboard: str
    player_id: str
    window: str
    period_id: str
    entered_at: str
    entrants: int
    max_entrants: int | None
    attempts_used: int
    attempts_left: int | None


class AttemptsGranted(TypedDict):
    leaderboard: str
    player_id: str
    period_id: str
    extra: int
    used: int
    left: int | None


class LinkCode(TypedDict):
    code: str
    expires_at: str
    link_url: str


class ArchivedPeriod(TypedDict):
    leaderboard: str
    period: Period
    period_id: str
    starts_at: str
    ends_at: str
    total: int
    archived_at: str


class ArchivedPeriods(TypedDict):
    total: int
    periods: list[ArchivedPeriod]
