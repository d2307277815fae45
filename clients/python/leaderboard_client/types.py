"""The API's answers, as the OpenAPI schema declares them (/api/v1/openapi.json)."""

from __future__ import annotations

from typing import Any, Literal, TypedDict

Period = Literal["daily", "weekly", "monthly", "all-time", "custom"]
# The file formats of an export (GET …/{period}/{period_id}/export).
ExportFormat = Literal["csv", "jsonl"]
# ``around`` and ``friends``: ranks within the whole board, or within each player's cohort.
Scope = Literal["board", "cohort"]


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


class _Subscored(TypedDict, total=False):
    subscore: int | None  # boards with ties ``subscore`` only


class Entry(_Subscored):
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


class CohortBoard(BoardPage):
    """One cohort's standings, ranked within it (``cohort``, or ``around(scope="cohort")``):
    ``total`` counts its entrants with a score, ``cohort_size`` all of them."""

    cohort: str
    tier: str | None
    cohort_size: int


class CohortFriendsPage(FriendsPage):
    """``friends(scope="cohort")``: each player ranked within their own cohort."""

    cohorts: dict[str, str]  # player_id -> their cohort


class _StandingCohort(_Subscored, total=False):
    # On boards with cohorts, in their competing window only (all None until a balanced split
    # places the player).
    cohort: str | None
    cohort_rank: int | None
    cohort_size: int | None
    tier: str | None


class Standing(_StandingCohort):
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
    name: str  # what pages call it: the board's window_labels entry, else Daily, Weekly, ...
    period_id: str
    starts_at: str | None
    resets_at: str | None


class CompetitionPeriod(TypedDict):
    id: str
    starts_at: str | None
    entry_closes_at: str | None
    cohorts_at: str | None  # balanced cohorts: when entrants are split (None: placed as they enter)
    ends_at: str | None
    settles_at: str | None  # its end, after settle_delay_secs


class TierSetting(TypedDict):
    """A league's tier (listed bottom first), with its lines as written: "5", "20%" or None."""

    slug: str
    name: str
    promote: str | None
    demote: str | None


class _RewardRange(TypedDict, total=False):
    # A rule has either a rank range or a top percentage (the other null, or left out).
    from_rank: int | None
    to_rank: int | None
    top_percent: float | None


class RewardRule(_RewardRange):
    """A rule of the reward table (the first that matches a player's tier and rank wins)."""

    tier: str | None
    reward: dict[str, Any]


CohortFill = Literal["first_come", "balanced"]
CohortBy = Literal["none", "rating", "tier"]


class _CompetitionRules(TypedDict):
    max_entrants: int | None
    entry_window_secs: int | None
    max_attempts: int | None
    cohort_size: int | None
    cohort_fill: CohortFill
    cohort_by: CohortBy
    tiers: list[TierSetting]
    start_tier: str
    min_scores: int
    rewards: list[RewardRule]
    claim_window_secs: int
    settle_delay_secs: int


class Competition(_CompetitionRules):
    window: Period
    entry: Literal["open", "join"]
    period: CompetitionPeriod


class Leaderboard(_CompetitionRules):
    slug: str
    name: str
    description: str
    mode: Literal["increment", "best", "latest"]
    order: Literal["desc", "asc"]
    windows: list[Window]
    window_labels: dict[str, str]
    cron: str
    timezone: str
    starts_at: str | None
    ends_at: str | None
    ties: Literal["shared", "earliest", "subscore"]
    subscore_order: Literal["desc", "asc"]
    format: str
    min_score: int | None
    max_score: int | None
    competition_window: Literal["", "daily", "weekly", "monthly", "all-time", "custom"]
    entry: Literal["open", "join"]
    competition: Competition | None
    active: bool
    open: bool


class Socket(TypedDict):
    path: str
    port: int | None  # the websockets' own port on the same host; None: the API's


class Game(TypedDict):
    slug: str
    name: str
    description: str
    timezone: str
    leaderboards: list[Leaderboard]
    leaderboards_total: int
    short_name: str
    accent: str | None
    logo_url: str | None
    socket: Socket


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
    cohort: str | None  # None without cohorts, and while a balanced period holds its entrants
    tier: str | None  # the league tier they race in (None outside a league)


class CohortSummary(TypedDict):
    cohort: str  # its id: "3", or "silver-3" in a league
    tier: str | None
    size: int  # entrants placed in it


class CohortsPage(TypedDict):
    """A competing period's cohorts, by tier (bottom first) then number."""

    leaderboard: str
    period: Period
    period_id: str
    cohort_size: int  # the most a cohort takes
    entrants: int
    held: int  # entrants waiting for a balanced split
    cohorts_at: str | None
    total: int  # cohorts, on all pages
    offset: int
    cohorts: list[CohortSummary]


class SettledEntry(TypedDict):
    player_id: str
    cohort: str | None  # None on a board without cohorts
    rank: int | None  # within the cohort; None without a score
    score: int | None
    tier: str | None  # the tier raced in (None outside a league)
    move: Literal[-1, 0, 1]
    tier_after: str | None
    reward: dict[str, Any] | None


class Settlement(TypedDict):
    """How a competing period settled (or, ``preview`` True, would if it ended now)."""

    leaderboard: str
    window: Period
    period_id: str
    preview: bool
    settled_at: str | None  # None for a preview
    entrants: int
    cohorts: int
    promoted: int
    demoted: int
    granted: int
    total: int  # entries matching the filter, on all pages
    offset: int
    entries: list[SettledEntry]


class AttemptsGranted(TypedDict):
    leaderboard: str
    player_id: str
    period_id: str
    extra: int
    used: int
    left: int | None


RewardStatus = Literal["pending", "claimed", "expired"]


class RewardGrant(TypedDict):
    """A reward a period's settlement granted a player (docs/competitions.md)."""

    grant_id: str
    leaderboard: str
    window: str
    period_id: str
    player_id: str
    cohort: str | None  # None on a board without cohorts
    tier: str | None  # None on a board without tiers
    rank: int
    reward: dict[str, Any]
    status: RewardStatus
    granted_at: str
    expires_at: str
    claimed_at: str | None


class PlayerRewards(TypedDict):
    player_id: str
    total: int
    rewards: list[RewardGrant]


class LeagueTier(TypedDict):
    slug: str
    name: str


class TierChange(TypedDict):
    period_id: str
    from_tier: str
    to_tier: str
    move: Literal[-1, 0, 1]
    cohort: str | None
    rank: int | None
    at: str


class PlayerLeague(TypedDict):
    """A player's tier on a league board now, the board's tiers and their moves (newest first)."""

    leaderboard: str
    player_id: str
    tier: LeagueTier
    since_period_id: str | None
    tiers: list[LeagueTier]
    history_total: int
    history: list[TierChange]


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
