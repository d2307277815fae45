"""The Lua scripts of the live layer (live/lua/), each with its one typed wrapper."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from redis.asyncio import Redis

from core import keys
from core.lua import Call, ScriptReplyError, load

PERIOD_STARTED = load(__file__, "period_started")
RECENT_SNAPSHOT = load(__file__, "recent_snapshot")
SOCKET_ADMIT = load(__file__, "socket_admit")


# --------------------------------------------------------------------------- period_started


class _PeriodsKeys(NamedTuple):
    periods: str


class _WindowArgs(NamedTuple):
    name: str
    period_id: str


PERIOD_STARTED.bind(keys=_PeriodsKeys, args=None, arg_groups=(_WindowArgs,))


def period_started_call(*, ref: str, current: Mapping[str, str]) -> Call:
    """Claim the rollovers of one board whose windows' current period ids are ``current``."""
    return Call(
        *PERIOD_STARTED.flatten(
            _PeriodsKeys(keys.live_periods(ref)), None, arg_groups=([_WindowArgs(w, p) for w, p in current.items()],)
        )
    )


def period_started_reply(raw: Sequence[Any]) -> list[str]:
    """The windows that rolled over (claimed by this caller)."""
    if not isinstance(raw, list):
        raise ScriptReplyError(f"period_started replied {raw!r}")
    return [str(window) for window in raw]


# --------------------------------------------------------------------------- recent_snapshot


class _RecentKeys(NamedTuple):
    recent: str
    names: str
    hidden: str
    version: str


class _RecentArgs(NamedTuple):
    limit: int
    take: str


RECENT_SNAPSHOT.bind(keys=_RecentKeys, args=_RecentArgs)


@dataclass(frozen=True)
class RecentRow:
    entry: dict[str, Any]  # as the submission stored it: player_id, score, at (ms), leaderboard
    name: str | None  # the player's current display name


async def recent_snapshot(
    client: Redis, *, slug: str, limit: int, take: Literal["next", "current"]
) -> tuple[int, list[RecentRow]]:
    """The version of the game's recent messages ('next' takes a new one) and its latest
    submissions, newest first, hidden players left out."""
    call = RECENT_SNAPSHOT.flatten(
        _RecentKeys(keys.recent(slug), keys.names(slug), keys.hidden(slug), keys.recent_version(slug)),
        _RecentArgs(limit, take),
    )
    raw = await RECENT_SNAPSHOT(client, *call)
    if not raw or len(raw) % 2 != 1:
        raise ScriptReplyError(f"recent_snapshot replied {len(raw) if raw else 0} values")
    rows = [RecentRow(json.loads(raw[i]), raw[i + 1] or None) for i in range(1, len(raw), 2)]
    return int(raw[0]), rows


# --------------------------------------------------------------------------- socket_admit


class _SocketsKeys(NamedTuple):
    sockets: str


class _AdmitArgs(NamedTuple):
    op: str
    socket: str
    now_ms: int
    lifetime: int
    cap: int


SOCKET_ADMIT.bind(keys=_SocketsKeys, args=_AdmitArgs)


async def socket_admit(
    client: Redis,
    *,
    address: str,
    socket_id: str,
    op: Literal["admit", "release"],
    now_ms: int,
    lifetime_ms: int,
    cap: int,
) -> bool:
    """Admit (or renew) a socket's place among its address's open sockets, or release it;
    False when the address is at its cap."""
    call = SOCKET_ADMIT.flatten(
        _SocketsKeys(keys.address_sockets(address)), _AdmitArgs(op, socket_id, now_ms, lifetime_ms, cap)
    )
    return bool(await SOCKET_ADMIT(client, *call))
