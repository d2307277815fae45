"""The Lua scripts of presence (presence/lua/), each with its typed wrapper: heartbeats and
leaves (presence_update, whose three ops get one entry each), the prune (presence_prune),
the broadcaster's claim (presence_announce) and a page of online players (presence_read).
Each builds its script's KEYS and ARGV from named arguments through the layouts bound to the
script's header (core/lua.py) and parses the reply into a typed result; nothing else reads
these replies.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from redis.asyncio import Redis

from core import keys
from core.lua import Call, KeyOrArg, ScriptReplyError, load, pipelined

PRESENCE_UPDATE = load(__file__, "presence_update")
PRESENCE_PRUNE = load(__file__, "presence_prune")
PRESENCE_ANNOUNCE = load(__file__, "presence_announce")
PRESENCE_READ = load(__file__, "presence_read")


def _int(value: Any, raw: Any, script: str) -> int:
    """An integer of a reply: a Lua number, or a ZSET score (a string, which may print as a float)."""
    if isinstance(value, int):
        return value
    try:
        return int(float(value))
    except (TypeError, ValueError):
        raise ScriptReplyError(f"{script} replied {raw!r}") from None


@dataclass(frozen=True)
class Seen:
    """A player with their display name and a time of theirs (last seen, or joined), epoch ms."""

    player_id: str
    display_name: str
    at_ms: int


def _seen(flat: Any, raw: Any, script: str) -> tuple[Seen, ...]:
    """(player_id, display name, ms) triples of a flat reply."""
    if not isinstance(flat, list) or len(flat) % 3:
        raise ScriptReplyError(f"{script} replied {raw!r}")
    return tuple(Seen(str(flat[i]), str(flat[i + 1]), _int(flat[i + 2], raw, script)) for i in range(0, len(flat), 3))


# --------------------------------------------------------------------------- presence_update


class _UpdateKeys(NamedTuple):
    online: str
    last_seen: str
    joined: str
    left: str
    hidden: str


class _UpdatePlayerKeys(NamedTuple):
    tabs: str


class _UpdateArgs(NamedTuple):
    op: str
    now_ms: int
    timeout_ms: int
    announce_ms: int
    n_or_player: int | str


class _UpdateItem(NamedTuple):
    id: str


PRESENCE_UPDATE.bind(keys=_UpdateKeys, args=_UpdateArgs, key_groups=(_UpdatePlayerKeys,), arg_groups=(_UpdateItem,))


def _update_call(
    slug: str, tabs_of: Sequence[str], args: _UpdateArgs, items: Sequence[str]
) -> tuple[list[str], list[KeyOrArg]]:
    return PRESENCE_UPDATE.flatten(
        _UpdateKeys(
            keys.presence_online(slug),
            keys.presence_last_seen(slug),
            keys.presence_joined(slug),
            keys.presence_left(slug),
            keys.hidden(slug),
        ),
        args,
        key_groups=([_UpdatePlayerKeys(keys.presence_tabs(slug, p)) for p in tabs_of],),
        arg_groups=([_UpdateItem(i) for i in items],),
    )


def presence_server_call(
    *, slug: str, now_ms: int, timeout_ms: int, announce_ms: int, online: Sequence[str], offline: Sequence[str]
) -> Call:
    """KEYS and ARGV of one game server's batch: heartbeats for ``online``, leaves for
    ``offline`` (no id in both)."""
    ids = [*online, *offline]
    return Call(*_update_call(slug, ids, _UpdateArgs("server", now_ms, timeout_ms, announce_ms, len(online)), ids))


@dataclass(frozen=True)
class ServerUpdate:
    joined: int  # of the online ids, those who were not online
    left: int  # of the offline ids, those who were online


async def presence_server(
    client: Redis,
    *,
    slug: str,
    now_ms: int,
    timeout_ms: int,
    announce_ms: int,
    online: Sequence[str],
    offline: Sequence[str],
) -> ServerUpdate:
    """A game server's heartbeats (``online``) and leaves (``offline``)."""
    call = presence_server_call(
        slug=slug, now_ms=now_ms, timeout_ms=timeout_ms, announce_ms=announce_ms, online=online, offline=offline
    )
    raw = await PRESENCE_UPDATE(client, *call)
    if not isinstance(raw, list) or len(raw) != 2:
        raise ScriptReplyError(f"presence_update replied {raw!r}")
    return ServerUpdate(_int(raw[0], raw, "presence_update"), _int(raw[1], raw, "presence_update"))


async def presence_page_beat(
    client: Redis, *, slug: str, player_id: str, socket_id: str, now_ms: int, timeout_ms: int, announce_ms: int
) -> bool:
    """An open page (``socket_id``) of the user linked to ``player_id``; True if the player
    just came online."""
    call = _update_call(
        slug, [player_id], _UpdateArgs("page_beat", now_ms, timeout_ms, announce_ms, player_id), [socket_id]
    )
    raw = await PRESENCE_UPDATE(client, *call)
    if raw not in (0, 1):
        raise ScriptReplyError(f"presence_update (page_beat) replied {raw!r}")
    return bool(raw)


class PageLeave(enum.StrEnum):
    """What closing a linked user's page did; anything else in a reply is a bug (ScriptReplyError)."""

    LEFT = "left"  # the player went offline
    STAY = "stay"  # another page or source keeps them online
    GONE = "gone"  # they were not online


async def presence_page_leave(
    client: Redis, *, slug: str, player_id: str, socket_id: str, now_ms: int, timeout_ms: int, announce_ms: int
) -> PageLeave:
    """The page ``socket_id`` of the user linked to ``player_id`` closed."""
    call = _update_call(
        slug, [player_id], _UpdateArgs("page_leave", now_ms, timeout_ms, announce_ms, player_id), [socket_id]
    )
    raw = await PRESENCE_UPDATE(client, *call)
    try:
        return PageLeave(raw)
    except ValueError:
        raise ScriptReplyError(f"presence_update (page_leave) replied {raw!r}") from None


# --------------------------------------------------------------------------- presence_prune


class _PruneKeys(NamedTuple):
    online: str
    last_seen: str
    joined: str
    left: str
    watching: str


class _PruneArgs(NamedTuple):
    now_ms: int
    timeout_ms: int
    announce_ms: int
    batch: int
    keep_ms: int


PRESENCE_PRUNE.bind(keys=_PruneKeys, args=_PruneArgs)


class PruneTarget(NamedTuple):
    """One game's presence to prune: its slug and its presence timeout, ms."""

    slug: str
    timeout_ms: int


def _prune_call(target: PruneTarget, *, now_ms: int, announce_ms: int, batch: int, keep_ms: int) -> Call:
    return Call(
        *PRESENCE_PRUNE.flatten(
            _PruneKeys(
                keys.presence_online(target.slug),
                keys.presence_last_seen(target.slug),
                keys.presence_joined(target.slug),
                keys.presence_left(target.slug),
                keys.presence_watching(target.slug),
            ),
            _PruneArgs(now_ms, target.timeout_ms, announce_ms, batch, keep_ms),
        )
    )


def _pruned(raw: Any) -> list[str]:
    if not isinstance(raw, list) or not all(isinstance(player, str) for player in raw):
        raise ScriptReplyError(f"presence_prune replied {raw!r}")
    return raw


async def presence_prune(
    client: Redis, *, slug: str, now_ms: int, timeout_ms: int, announce_ms: int, batch: int, keep_ms: int
) -> list[str]:
    """Remove up to ``batch`` expired members (queueing a leave for each) and last-seen times
    older than ``keep_ms``; returns the players removed, oldest first (``batch`` of them:
    call again)."""
    call = _prune_call(
        PruneTarget(slug, timeout_ms), now_ms=now_ms, announce_ms=announce_ms, batch=batch, keep_ms=keep_ms
    )
    return _pruned(await PRESENCE_PRUNE(client, *call))


async def presence_prune_many(
    client: Redis, targets: Sequence[PruneTarget], *, now_ms: int, announce_ms: int, batch: int, keep_ms: int
) -> list[list[str] | Exception]:
    """:func:`presence_prune` of many games in one round trip; each game's removed players, in
    the order of ``targets``, or the error of a game whose call failed (the others ran)."""
    calls = [
        (PRESENCE_PRUNE, _prune_call(target, now_ms=now_ms, announce_ms=announce_ms, batch=batch, keep_ms=keep_ms))
        for target in targets
    ]
    replies = await pipelined(client, calls, raise_on_error=False)
    return [raw if isinstance(raw, Exception) else _pruned(raw) for raw in replies]


# --------------------------------------------------------------------------- presence_announce


class _AnnounceKeys(NamedTuple):
    joined: str
    left: str
    online: str
    watching: str
    version: str
    names: str
    announcer: str


class _AnnounceArgs(NamedTuple):
    now_ms: int
    timeout_ms: int
    max: int
    token: str
    lease_ms: int


PRESENCE_ANNOUNCE.bind(keys=_AnnounceKeys, args=_AnnounceArgs)


@dataclass(frozen=True)
class Claimed:
    version: int  # of this announcement; only increases
    online: int
    watching: int
    joined: tuple[Seen, ...]  # at_ms: when they joined
    left: tuple[str, ...]
    next_lapse_ms: int | None  # when the counts next fall by themselves; None: nobody is there


async def presence_announce(
    client: Redis, *, slug: str, now_ms: int, timeout_ms: int, max_changes: int, token: str, lease_ms: int
) -> Claimed | None:
    """Claim up to ``max_changes`` joins and as many leaves not yet announced, with the
    counts, under the announcer lease (``token``: the caller's, ``lease_ms`` long); None when
    another caller holds it."""
    call = PRESENCE_ANNOUNCE.flatten(
        _AnnounceKeys(
            keys.presence_joined(slug),
            keys.presence_left(slug),
            keys.presence_online(slug),
            keys.presence_watching(slug),
            keys.presence_version(slug),
            keys.names(slug),
            keys.presence_announcer(slug),
        ),
        _AnnounceArgs(now_ms, timeout_ms, max_changes, token, lease_ms),
    )
    raw = await PRESENCE_ANNOUNCE(client, *call)
    if raw == [0]:
        return None
    if not isinstance(raw, list) or len(raw) != 6 or not isinstance(raw[4], list):
        raise ScriptReplyError(f"presence_announce replied {raw!r}")
    version, online, watching, joins, leaves, lapse = raw
    return Claimed(
        _int(version, raw, "presence_announce"),
        _int(online, raw, "presence_announce"),
        _int(watching, raw, "presence_announce"),
        _seen(joins, raw, "presence_announce"),
        tuple(str(player) for player in leaves),
        _int(lapse, raw, "presence_announce") if lapse != "" else None,
    )


# --------------------------------------------------------------------------- presence_read


class _ReadKeys(NamedTuple):
    online: str
    watching: str
    names: str
    version: str


class _ReadArgs(NamedTuple):
    now_ms: int
    timeout_ms: int
    offset: int
    limit: int


PRESENCE_READ.bind(keys=_ReadKeys, args=_ReadArgs)


@dataclass(frozen=True)
class PresenceRead:
    version: int  # of the live presence messages, when this was read
    online: int
    watching: int
    players: tuple[Seen, ...]  # at_ms: last seen; most recently seen first


async def presence_read(
    client: Redis, *, slug: str, now_ms: int, timeout_ms: int, offset: int, limit: int
) -> PresenceRead:
    """One page of the players seen within ``timeout_ms``, with the online and watching counts."""
    call = PRESENCE_READ.flatten(
        _ReadKeys(
            keys.presence_online(slug), keys.presence_watching(slug), keys.names(slug), keys.presence_version(slug)
        ),
        _ReadArgs(now_ms, timeout_ms, offset, limit),
    )
    raw = await PRESENCE_READ(client, *call)
    if not isinstance(raw, list) or len(raw) < 3:
        raise ScriptReplyError(f"presence_read replied {raw!r}")
    return PresenceRead(
        _int(raw[0], raw, "presence_read"),
        _int(raw[1], raw, "presence_read"),
        _int(raw[2], raw, "presence_read"),
        _seen(raw[3:], raw, "presence_read"),
    )
