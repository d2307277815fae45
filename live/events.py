"""Websocket events: their payload shapes, their groups, and the one place that sends them.

Server -> client messages (see docs/websocket.md):

- ``standings``: a leaderboard window's top rows with a version that only increases; or,
  with ``cohort``, one cohort's top rows, ranked within it (issue 22);
- ``player``: a followed player's new score and rank on one leaderboard, per window;
- ``reset``: a window's period rolled over; it starts empty under a new id;
- ``presence``: a game's online and watching counts and who joined or left;
- ``recent``: a game's latest accepted submissions (the game page's panel);
- ``top``: a game's top three on its home board (the home page's socket, /ws/home/);
- ``error``: a message the server could not act on (the socket stays open).

The broadcaster sends all but ``error`` to channel-layer groups; each web process
receives a group's message once (fanout.py) and each socket takes what it shows,
from frames encoded once per process. Every payload is declared below as a
closed TypedDict (no other keys), listed by its ``type`` in PAYLOADS, and the
tests check every message a socket receives against its declaration
(tests/live/event_schema.py).
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Collection, Mapping
from typing import Any, Literal, NotRequired, get_args

from channels.layers import get_channel_layer
from pydantic import ConfigDict, with_config

# typing_extensions: pydantic validates typing.TypedDict only from Python 3.12 on (the tests validate these).
from typing_extensions import TypedDict

from competitions.selectors.cohorts import CohortSnapshot
from core import board_rules, clock
from core.config import BoardConfig, GameConfig
from games import periods
from games.selectors import Board, RecentSubmission, Standing
from presence.selectors import OnlinePlayer

from . import fanout
from .selectors import CohortPlace

# A watcher may ask for at most this many rows; the broadcaster reads this many once per board.
LIVE_LIMIT_MAX = 100
# How deep a live view may start (the API's offsets go as far).
LIVE_OFFSET_MAX = 1_000_000_000
# The game page's recent-submissions panel shows this many.
RECENT_LIVE_LIMIT = 15
# The home page shows each game's top this many.
HOME_TOP_N = 3

# Payloads have exactly their declared keys (checked in tests).
_CLOSED = ConfigDict(extra="forbid")


@with_config(_CLOSED)
class EntryPayload(TypedDict):
    rank: int
    player_id: str
    display_name: str
    score: int
    # The score in the board's format (1:21.999 for time_ms), as pages show it.
    shown: str
    # Equal scores' order: only on boards with ties 'subscore'.
    subscore: NotRequired[int]
    metadata: dict[str, Any] | None
    online: bool


@with_config(_CLOSED)
class StandingsPayload(TypedDict):
    type: Literal["standings"]
    leaderboard: str
    period: str
    period_id: str
    resets_at: str | None
    version: int
    total: int
    entries: list[EntryPayload]
    offset: NotRequired[int]  # a view subscribed with an offset: where its rows start


@with_config(_CLOSED)
class CohortStandingsPayload(TypedDict):
    """A cohort's standings: a ``standings`` message whose ranks and total are the cohort's."""

    type: Literal["standings"]
    leaderboard: str
    period: str
    period_id: str
    resets_at: str | None
    version: int  # the board's counter: a cohort's messages take their board's versions
    total: int  # the cohort's entrants with a score
    entries: list[EntryPayload]
    cohort: str | None  # None: a "mine" view whose player is in no cohort (yet)
    cohort_size: int  # the cohort's entrants, with a score or not
    tier: str | None


@with_config(_CLOSED)
class PlayerPeriodPayload(TypedDict):
    period_id: str
    score: int
    shown: str
    subscore: NotRequired[int]
    rank: int
    total: int
    percentile: float
    # On a board with cohorts, in its competing window (all None while the player is in none).
    cohort: NotRequired[str | None]
    cohort_rank: NotRequired[int | None]
    cohort_size: NotRequired[int | None]
    tier: NotRequired[str | None]


@with_config(_CLOSED)
class PlayerPayload(TypedDict):
    type: Literal["player"]
    leaderboard: str
    player_id: str
    display_name: str
    periods: dict[str, PlayerPeriodPayload]


@with_config(_CLOSED)
class ResetPayload(TypedDict):
    type: Literal["reset"]
    leaderboard: str
    period: str
    period_id: str
    resets_at: str | None


@with_config(_CLOSED)
class PresencePlayerPayload(TypedDict):
    player_id: str
    display_name: str
    last_seen: str


@with_config(_CLOSED)
class PresencePayload(TypedDict):
    type: Literal["presence"]
    version: int
    online: int
    watching: int
    # True on the message a socket gets when it asks for presence: ``joined`` then
    # holds the first page of online players (most recent first), not changes.
    snapshot: bool
    joined: list[PresencePlayerPayload]
    left: list[str]


@with_config(_CLOSED)
class RecentItemPayload(TypedDict):
    leaderboard: str
    # The board's display name, which a page shows beside the score (the list mixes boards).
    board_name: str
    player_id: str
    display_name: str
    score: int
    shown: str
    at: str


@with_config(_CLOSED)
class RecentPayload(TypedDict):
    type: Literal["recent"]
    version: int
    submissions: list[RecentItemPayload]


@with_config(_CLOSED)
class TopPayload(TypedDict):
    type: Literal["top"]
    game: str
    leaderboard: str
    period: str
    period_id: str
    resets_at: str | None
    version: int
    total: int
    entries: list[EntryPayload]


# Every code an ``error`` carries (docs/websocket.md, "error").
ErrorCode = Literal[
    "malformed",
    "unknown_action",
    "invalid",
    "rate_limited",
    "unavailable",
    "no_cohorts",
    "cohort_not_found",
]
ERROR_CODES: tuple[str, ...] = get_args(ErrorCode)


@with_config(_CLOSED)
class ErrorPayload(TypedDict):
    type: Literal["error"]
    code: ErrorCode
    message: str


Payload = (
    StandingsPayload
    | CohortStandingsPayload
    | PlayerPayload
    | ResetPayload
    | PresencePayload
    | RecentPayload
    | TopPayload
    | ErrorPayload
)
# Every message the server sends, by its "type" (a type may have several shapes).
PAYLOADS: dict[str, Any] = {
    "standings": StandingsPayload | CohortStandingsPayload,
    "player": PlayerPayload,
    "reset": ResetPayload,
    "presence": PresencePayload,
    "recent": RecentPayload,
    "top": TopPayload,
    "error": ErrorPayload,
}


# --------------------------------------------------------------------------- groups


def board_group(ref: str, period: str) -> str:
    """Watchers of one window of a leaderboard (whatever its current period id)."""
    # Group names hold at most 99 characters of [A-Za-z0-9._-]: two slugs could pass that.
    return f"lb.{hashlib.sha1(ref.encode()).hexdigest()[:24]}.{period}"


def presence_group(slug: str) -> str:
    """Sockets that asked for a game's presence."""
    return f"pr.{slug}"


def recent_group(slug: str) -> str:
    """Sockets that asked for a game's recent submissions."""
    return f"rc.{slug}"


# The home page's sockets: every active game's top three.
HOME_GROUP = "home"


def cohort_group(ref: str, period: str, index: int) -> str:
    """Watchers of one cohort of a leaderboard's competing window (whatever its period id)."""
    return f"co.{hashlib.sha1(ref.encode()).hexdigest()[:24]}.{period}.{index}"


def player_group(slug: str, player_id: str) -> str:
    # Group names allow only [A-Za-z0-9._-]; player ids may also hold ':'.
    return f"lbp.{slug}.{hashlib.sha1(player_id.encode()).hexdigest()[:20]}"


# --------------------------------------------------------------------------- payloads


def _iso(moment: dt.datetime | None) -> str | None:
    return None if moment is None else clock.iso(moment)


def _entries(board: Board, fmt: str, online: Collection[str], limit: int | None = None) -> list[EntryPayload]:
    entries: list[EntryPayload] = []
    for e in board.entries[:limit]:
        entry: EntryPayload = {
            "rank": e.rank,
            "player_id": e.player_id,
            "display_name": e.display_name,
            "score": e.score,
            "shown": board_rules.format_score(e.score, fmt),
            "metadata": e.metadata,
            "online": e.player_id in online,
        }
        if e.subscore is not None:
            entry["subscore"] = e.subscore
        entries.append(entry)
    return entries


def standings(
    leaderboard: BoardConfig, board: Board, version: int, online: Collection[str] = (), offset: int | None = None
) -> StandingsPayload:
    """``online``: which of the board's players are online (a dot beside their row); ``offset``:
    where a view subscribed with one starts (its rows are ``board``'s)."""
    payload: StandingsPayload = {
        "type": "standings",
        "leaderboard": leaderboard.slug,
        "period": board.period.kind,
        "period_id": board.period.id,
        "resets_at": _iso(board.period.ends_at),
        "version": version,
        "total": board.total,
        "entries": _entries(board, leaderboard.format, online),
    }
    if offset is not None:
        payload["offset"] = offset
    return payload


def cohort_standings(
    leaderboard: BoardConfig,
    period: periods.Period,
    snapshot: CohortSnapshot | None,
    version: int,
    online: Collection[str] = (),
) -> CohortStandingsPayload:
    """A cohort's top rows (``snapshot`` None: a "mine" view with no cohort yet, empty)."""
    return {
        "type": "standings",
        "leaderboard": leaderboard.slug,
        "period": period.kind,
        "period_id": period.id,
        "resets_at": _iso(period.ends_at),
        "version": version,
        "total": snapshot.board.total if snapshot else 0,
        "entries": _entries(snapshot.board, leaderboard.format, online) if snapshot else [],
        "cohort": snapshot.cohort if snapshot else None,
        "cohort_size": snapshot.size if snapshot else 0,
        "tier": snapshot.tier if snapshot else None,
    }


def top(leaderboard: BoardConfig, board: Board, version: int, online: Collection[str] = ()) -> TopPayload:
    """A game's home-page card: the first HOME_TOP_N entries of its home board."""
    return {
        "type": "top",
        "game": leaderboard.game_slug,
        "leaderboard": leaderboard.slug,
        "period": board.period.kind,
        "period_id": board.period.id,
        "resets_at": _iso(board.period.ends_at),
        "version": version,
        "total": board.total,
        "entries": _entries(board, leaderboard.format, online, HOME_TOP_N),
    }


def recent(*, game: GameConfig, version: int, submissions: list[RecentSubmission]) -> RecentPayload:
    """Each score is also ``shown`` in its own board's format: the list mixes the game's boards,
    and a page then needs no table of every board's format (it grew with the boards)."""
    return {
        "type": "recent",
        "version": version,
        "submissions": [
            {
                "leaderboard": r.leaderboard,
                "board_name": _name_of(game, r.leaderboard),
                "player_id": r.player_id,
                "display_name": r.display_name,
                "score": r.score,
                "shown": board_rules.format_score(r.score, _format_of(game, r.leaderboard)),
                "at": clock.iso(r.at),
            }
            for r in submissions
        ],
    }


def _format_of(game: GameConfig, slug: str) -> str:
    board = game.board_named(slug)
    return board.format if board is not None else board_rules.INTEGER  # a board deleted since


def _name_of(game: GameConfig, slug: str) -> str:
    board = game.board_named(slug)
    return board.name if board is not None else slug  # a board deleted since


def player(
    leaderboard: BoardConfig,
    player_id: str,
    display_name: str,
    changes: dict[str, tuple[str, Standing]],
    places: Mapping[str, CohortPlace] | None = None,
) -> PlayerPayload:
    """``changes``: window -> (period id, standing) on one leaderboard; ``places``: window ->
    the player's place in their cohort, for the windows that have cohorts."""
    periods_out = {kind: _player_period(leaderboard, period_id, s) for kind, (period_id, s) in changes.items()}
    for kind, place in (places or {}).items():
        if kind in periods_out:
            shown = periods_out[kind]
            shown["cohort"], shown["cohort_rank"] = place.cohort, place.rank
            shown["cohort_size"], shown["tier"] = place.size, place.tier
    return {
        "type": "player",
        "leaderboard": leaderboard.slug,
        "player_id": player_id,
        "display_name": display_name,
        "periods": periods_out,
    }


def _player_period(leaderboard: BoardConfig, period_id: str, s: Standing) -> PlayerPeriodPayload:
    shown: PlayerPeriodPayload = {
        "period_id": period_id,
        "score": s.score,
        "shown": board_rules.format_score(s.score, leaderboard.format),
        "rank": s.rank,
        "total": s.total,
        "percentile": s.percentile,
    }
    if s.subscore is not None:
        shown["subscore"] = s.subscore
    return shown


def reset(leaderboard: BoardConfig, period: periods.Period) -> ResetPayload:
    return {
        "type": "reset",
        "leaderboard": leaderboard.slug,
        "period": period.kind,
        "period_id": period.id,
        "resets_at": _iso(period.ends_at),
    }


def presence(
    *,
    version: int,
    online: int,
    watching: int,
    joined: list[OnlinePlayer],
    left: list[str],
    snapshot: bool = False,
) -> PresencePayload:
    return {
        "type": "presence",
        "version": version,
        "online": online,
        "watching": watching,
        "snapshot": snapshot,
        "joined": [
            {"player_id": p.player_id, "display_name": p.display_name, "last_seen": clock.iso(p.last_seen)}
            for p in joined
        ],
        "left": left,
    }


def error(code: ErrorCode, message: str) -> ErrorPayload:
    return {"type": "error", "code": code, "message": message}


# --------------------------------------------------------------------------- sending


async def _group_send(group: str, payload: Payload) -> None:
    # Each web process's hub receives it once and names the group to find its watchers (fanout.py).
    await get_channel_layer().group_send(group, {"type": fanout.EVENT, "group": group, "payload": payload})


async def send_standings(leaderboard: BoardConfig, board: Board, version: int, online: Collection[str] = ()) -> None:
    group = board_group(leaderboard.ref, board.period.kind)
    await _group_send(group, standings(leaderboard, board, version, online))


async def send_cohort_standings(
    leaderboard: BoardConfig, period: periods.Period, snapshot: CohortSnapshot, online: Collection[str] = ()
) -> None:
    group = cohort_group(leaderboard.ref, period.kind, snapshot.index)
    await _group_send(group, cohort_standings(leaderboard, period, snapshot, snapshot.version, online))


async def send_player(slug: str, payload: PlayerPayload) -> None:
    await _group_send(player_group(slug, payload["player_id"]), payload)


async def send_reset(leaderboard: BoardConfig, period: periods.Period) -> None:
    await _group_send(board_group(leaderboard.ref, period.kind), reset(leaderboard, period))


async def send_presence(slug: str, payload: PresencePayload) -> None:
    await _group_send(presence_group(slug), payload)


async def send_recent(slug: str, payload: RecentPayload) -> None:
    await _group_send(recent_group(slug), payload)


async def send_top(payload: TopPayload) -> None:
    await _group_send(HOME_GROUP, payload)


async def send_reconnect(ref: str, period: str) -> None:
    """Ask every socket watching one window of a leaderboard to reconnect (manage.py live_reconnect)."""
    group = board_group(ref, period)
    await get_channel_layer().group_send(group, {"type": fanout.DISCONNECT, "group": group})
