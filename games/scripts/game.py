"""Typed wrappers of the game scripts (games/lua/): the game's part of a submission
(submit_game), names (names_write, players_named), the player sync's queue
(pending_players_read / _ack) and hidden players' restore (hidden_restore)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from redis.asyncio import Redis

from core import keys
from core.lua import Call, ScriptReplyError, load

SUBMIT_GAME = load(__file__, "submit_game")
NAMES_WRITE = load(__file__, "names_write")
PLAYERS_NAMED = load(__file__, "players_named")
PENDING_PLAYERS_READ = load(__file__, "pending_players_read")
PENDING_PLAYERS_ACK = load(__file__, "pending_players_ack")
HIDDEN_RESTORE = load(__file__, "hidden_restore")


# --------------------------------------------------------------------------- submit_game


class _GameKeys(NamedTuple):
    names: str
    hidden: str
    recent: str
    pending: str
    online: str
    last_seen: str
    joined: str
    left: str
    name_index: str
    name_keys: str


class _GameItemKeys(NamedTuple):
    tabs: str


class _GameArgs(NamedTuple):
    now_ms: int
    recent_cap: int
    timeout: int | str
    announce_ttl: int


class _GameItemArgs(NamedTuple):
    player: str
    name: str
    search_key: str
    recent: str
    fresh: int


SUBMIT_GAME.bind(keys=_GameKeys, args=_GameArgs, key_groups=(_GameItemKeys,), arg_groups=(_GameItemArgs,))


@dataclass(frozen=True)
class GameItem:
    player_id: str
    display_name: str  # '' keeps the stored one
    search_key: str
    recent: str  # the recent-list entry, JSON text
    fresh: bool  # applied now (False: a replay: its name is set again, no recent entry or heartbeat)


def submit_game_call(
    *,
    slug: str,
    now_ms: int,
    recent_cap: int,
    presence_timeout_ms: int | None,
    announce_ttl_ms: int,
    items: Sequence[GameItem],
) -> Call:
    """KEYS and ARGV of one submit_game.lua call (``presence_timeout_ms`` None: an import,
    which is no heartbeat)."""
    return Call(
        *SUBMIT_GAME.flatten(
            _GameKeys(
                keys.names(slug),
                keys.hidden(slug),
                keys.recent(slug),
                keys.pending_players(slug),
                keys.presence_online(slug),
                keys.presence_last_seen(slug),
                keys.presence_joined(slug),
                keys.presence_left(slug),
                keys.name_index(slug),
                keys.name_keys(slug),
            ),
            _GameArgs(now_ms, recent_cap, "" if presence_timeout_ms is None else presence_timeout_ms, announce_ttl_ms),
            key_groups=([_GameItemKeys(keys.presence_tabs(slug, item.player_id)) for item in items],),
            arg_groups=(
                [
                    _GameItemArgs(item.player_id, item.display_name, item.search_key, item.recent, int(item.fresh))
                    for item in items
                ],
            ),
        )
    )


@dataclass(frozen=True)
class GameReply:
    names: list[str]  # each item's player's display name, in order
    marked: bool  # a player was marked for the player sync


def submit_game_reply(raw: Sequence[Any], items: int) -> GameReply:
    if len(raw) != items + 1:
        raise ScriptReplyError(f"submit_game replied {len(raw)} values for {items} items")
    return GameReply([str(name) for name in raw[:items]], bool(int(raw[items])))


# --------------------------------------------------------------------------- names_write


class _NamesKeys(NamedTuple):
    names: str
    pending: str
    name_index: str
    name_keys: str
    erased: str


class _NamesArgs(NamedTuple):
    mode: str
    now_ms: int


class _NameArgs(NamedTuple):
    player: str
    name: str
    search_key: str
    mark: int


NAMES_WRITE.bind(keys=_NamesKeys, args=_NamesArgs, arg_groups=(_NameArgs,))


async def names_write(
    client: Redis,
    *,
    slug: str,
    mode: Literal["set", "restore", "index"],
    now_ms: int,
    names: Sequence[tuple[str, str, str, bool]],
) -> int:
    """Write (player_id, name, search key, mark for the sync) names; how many were written."""
    call = NAMES_WRITE.flatten(
        _NamesKeys(
            keys.names(slug), keys.pending_players(slug), keys.name_index(slug), keys.name_keys(slug), keys.erased(slug)
        ),
        _NamesArgs(mode, now_ms),
        arg_groups=([_NameArgs(p, n, k, int(m)) for p, n, k, m in names],),
    )
    return int(await NAMES_WRITE(client, *call))


# --------------------------------------------------------------------------- players_named


class _NamedKeys(NamedTuple):
    name_index: str
    names: str
    hidden: str


class _NamedArgs(NamedTuple):
    prefix: str
    limit: int
    exact: str


PLAYERS_NAMED.bind(keys=_NamedKeys, args=_NamedArgs)


async def players_named(client: Redis, *, slug: str, prefix: str, limit: int, exact: str) -> list[tuple[str, str]]:
    """(player_id, display name) of players whose search key starts with ``prefix``."""
    call = PLAYERS_NAMED.flatten(
        _NamedKeys(keys.name_index(slug), keys.names(slug), keys.hidden(slug)), _NamedArgs(prefix, limit, exact)
    )
    raw = await PLAYERS_NAMED(client, *call)
    if len(raw) % 2:
        raise ScriptReplyError(f"players_named replied {len(raw)} values")
    return [(str(raw[i]), str(raw[i + 1])) for i in range(0, len(raw), 2)]


# --------------------------------------------------------------------------- the player sync's queue


class _PendingKeys(NamedTuple):
    pending: str
    names: str


class _PendingArgs(NamedTuple):
    batch: int


PENDING_PLAYERS_READ.bind(keys=_PendingKeys, args=_PendingArgs)


@dataclass(frozen=True)
class PendingPlayer:
    player_id: str
    marked: str  # the mark's score as read (the ack compares it)
    display_name: str


async def pending_players_read(client: Redis, *, slug: str, batch: int) -> list[PendingPlayer]:
    raw = await PENDING_PLAYERS_READ(
        client,
        *PENDING_PLAYERS_READ.flatten(_PendingKeys(keys.pending_players(slug), keys.names(slug)), _PendingArgs(batch)),
    )
    if len(raw) % 3:
        raise ScriptReplyError(f"pending_players_read replied {len(raw)} values")
    return [PendingPlayer(str(raw[i]), str(raw[i + 1]), str(raw[i + 2])) for i in range(0, len(raw), 3)]


class _AckKeys(NamedTuple):
    pending: str
    erased: str


class _AckPlayer(NamedTuple):
    player: str
    marked: str


PENDING_PLAYERS_ACK.bind(keys=_AckKeys, args=None, arg_groups=(_AckPlayer,))


async def pending_players_ack(client: Redis, *, slug: str, players: Sequence[PendingPlayer]) -> list[str]:
    """Acknowledge what was stored; returns the players erased meanwhile, whose rows the sync
    must delete again."""
    call = PENDING_PLAYERS_ACK.flatten(
        _AckKeys(keys.pending_players(slug), keys.erased(slug)),
        None,
        arg_groups=([_AckPlayer(p.player_id, p.marked) for p in players],),
    )
    raw = await PENDING_PLAYERS_ACK(client, *call)
    return [str(player) for player in raw[1:]]


# --------------------------------------------------------------------------- hidden_restore


class _RestoreKeys(NamedTuple):
    hidden: str


class _RestorePlayer(NamedTuple):
    player_id: str


HIDDEN_RESTORE.bind(keys=_RestoreKeys, args=None, arg_groups=(_RestorePlayer,))


async def hidden_restore(client: Redis, *, slug: str, player_ids: Sequence[str]) -> int:
    """The database's hidden players back into the game's hidden SET, if Redis lost it."""
    call = HIDDEN_RESTORE.flatten(
        _RestoreKeys(keys.hidden(slug)), None, arg_groups=([_RestorePlayer(p) for p in player_ids],)
    )
    return int(await HIDDEN_RESTORE(client, *call))
