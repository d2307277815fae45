"""Websocket events: their payload shapes, their groups, and the one place that sends them.

Server -> client messages (see docs/websocket.md):

- ``standings``: a board's top rows with a per-board version that only increases;
- ``player``: a followed player's new score and rank, per period;
- ``reset``: a period rolled over; the board starts empty under a new id;
- ``presence``: a game's online and watching counts and who joined or left;
- ``error``: a message the server could not act on (the socket stays open).

The broadcaster sends ``standings``, ``player``, ``reset`` and ``presence`` to
channel-layer groups; each consumer trims and filters them for its own socket.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Collection
from typing import Literal, TypedDict

from channels.layers import get_channel_layer

from core import clock
from games import periods
from games.selectors import Board, Standing
from presence.selectors import OnlinePlayer

# A watcher may ask for at most this many rows; the broadcaster reads this many once per board.
LIVE_LIMIT_MAX = 100


class EntryPayload(TypedDict):
    rank: int
    player_id: str
    display_name: str
    score: int
    online: bool


class StandingsPayload(TypedDict):
    type: Literal["standings"]
    period: str
    period_id: str
    resets_at: str | None
    version: int
    total: int
    entries: list[EntryPayload]


class PlayerPeriodPayload(TypedDict):
    period_id: str
    score: int
    rank: int
    total: int
    percentile: float


class PlayerPayload(TypedDict):
    type: Literal["player"]
    player_id: str
    display_name: str
    periods: dict[str, PlayerPeriodPayload]


class ResetPayload(TypedDict):
    type: Literal["reset"]
    period: str
    period_id: str
    resets_at: str | None


class PresencePlayerPayload(TypedDict):
    player_id: str
    display_name: str
    last_seen: str


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


class ErrorPayload(TypedDict):
    type: Literal["error"]
    code: str
    message: str


# --------------------------------------------------------------------------- groups


def board_group(slug: str, period: str) -> str:
    """Watchers of one period board of a game (whatever its current id)."""
    return f"lb.{slug}.{period}"


def presence_group(slug: str) -> str:
    """Sockets that asked for a game's presence."""
    return f"pr.{slug}"


def player_group(slug: str, player_id: str) -> str:
    # Group names allow only [A-Za-z0-9._-]; player ids may also hold ':'.
    return f"lbp.{slug}.{hashlib.sha1(player_id.encode()).hexdigest()[:20]}"


# --------------------------------------------------------------------------- payloads


def _iso(moment: dt.datetime | None) -> str | None:
    return None if moment is None else clock.iso(moment)


def standings(board: Board, version: int, online: Collection[str] = ()) -> StandingsPayload:
    """``online``: which of the board's players are online (a dot beside their row)."""
    return {
        "type": "standings",
        "period": board.period.kind,
        "period_id": board.period.id,
        "resets_at": _iso(board.period.ends_at),
        "version": version,
        "total": board.total,
        "entries": [
            {
                "rank": e.rank,
                "player_id": e.player_id,
                "display_name": e.display_name,
                "score": e.score,
                "online": e.player_id in online,
            }
            for e in board.entries
        ],
    }


def player(player_id: str, display_name: str, changes: dict[str, tuple[str, Standing]]) -> PlayerPayload:
    """``changes``: period -> (period id, standing)."""
    return {
        "type": "player",
        "player_id": player_id,
        "display_name": display_name,
        "periods": {
            kind: {
                "period_id": period_id,
                "score": s.score,
                "rank": s.rank,
                "total": s.total,
                "percentile": s.percentile,
            }
            for kind, (period_id, s) in changes.items()
        },
    }


def reset(period: periods.Period) -> ResetPayload:
    return {"type": "reset", "period": period.kind, "period_id": period.id, "resets_at": _iso(period.ends_at)}


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


def error(code: str, message: str) -> ErrorPayload:
    return {"type": "error", "code": code, "message": message}


# --------------------------------------------------------------------------- sending


async def _group_send(group: str, payload: StandingsPayload | PlayerPayload | ResetPayload | PresencePayload) -> None:
    # The consumer method named by "type" receives it: live.event.
    await get_channel_layer().group_send(group, {"type": "live.event", "payload": payload})


async def send_standings(slug: str, board: Board, version: int, online: Collection[str] = ()) -> None:
    await _group_send(board_group(slug, board.period.kind), standings(board, version, online))


async def send_player(slug: str, payload: PlayerPayload) -> None:
    await _group_send(player_group(slug, payload["player_id"]), payload)


async def send_reset(slug: str, period: periods.Period) -> None:
    await _group_send(board_group(slug, period.kind), reset(period))


async def send_presence(slug: str, payload: PresencePayload) -> None:
    await _group_send(presence_group(slug), payload)


async def disconnect_watchers(slug: str, period: str) -> None:
    """Close every socket watching a board (ops, and the reconnect test)."""
    await get_channel_layer().group_send(board_group(slug, period), {"type": "live.disconnect"})
