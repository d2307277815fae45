"""The Lua scripts of moderation (moderation/lua/), each with its one typed wrapper."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from redis.asyncio import Redis

from core import keys
from core.lua import ScriptReplyError, load

PLAYER_ERASE = load(__file__, "player_erase")
PLAYER_ERASE_BOARD = load(__file__, "player_erase_board", prelude=("entries",))


class _EraseKeys(NamedTuple):
    names: str
    name_index: str
    name_keys: str
    hidden: str
    pending: str
    recent: str
    followed: str
    erased: str
    online: str
    last_seen: str
    joined: str
    left: str
    tabs: str
    codes: str


class _CodeKey(NamedTuple):
    code_key: str


class _EraseArgs(NamedTuple):
    player: str
    now_ms: int
    codes: int
    memory: int
    announce_ttl: int


class _CodeArg(NamedTuple):
    code: str


PLAYER_ERASE.bind(keys=_EraseKeys, args=_EraseArgs, key_groups=(_CodeKey,), arg_groups=(_CodeArg,))


@dataclass(frozen=True)
class GameErased:
    named: int  # 1 if a name was removed
    recent: int  # recent rows removed
    codes: int  # link codes removed
    online: bool  # the player was online


async def player_erase(
    client: Redis, *, slug: str, player_id: str, now_ms: int, codes: Sequence[str], memory_ms: int, announce_ttl_ms: int
) -> GameErased | None:
    """Erase what the game holds of the player; None when the codes ZSET lists a code not
    passed (read them again and call again)."""
    call = PLAYER_ERASE.flatten(
        _EraseKeys(
            keys.names(slug),
            keys.name_index(slug),
            keys.name_keys(slug),
            keys.hidden(slug),
            keys.pending_players(slug),
            keys.recent(slug),
            keys.followed(slug),
            keys.erased(slug),
            keys.presence_online(slug),
            keys.presence_last_seen(slug),
            keys.presence_joined(slug),
            keys.presence_left(slug),
            keys.presence_tabs(slug, player_id),
            keys.link_codes_issued(slug, player_id),
        ),
        _EraseArgs(player_id, now_ms, len(codes), memory_ms, announce_ttl_ms),
        key_groups=([_CodeKey(keys.link_code(slug, code)) for code in codes],),
        arg_groups=([_CodeArg(code) for code in codes],),
    )
    reply = await PLAYER_ERASE(client, *call)
    if reply[0] == "retry":
        return None
    if reply[0] != "ok" or len(reply) != 5:
        raise ScriptReplyError(f"player_erase replied {reply!r}")
    return GameErased(int(reply[1]), int(reply[2]), int(reply[3]), bool(int(reply[4])))


class _BoardEraseKeys(NamedTuple):
    boards_index: str
    dirty: str
    ledger: str
    hidden: str
    spam: str
    records: str
    tiers: str


class _BoardKeys(NamedTuple):
    board: str
    stash: str
    meta: str
    members: str
    entrants: str
    tries: str
    extra: str
    cohorts: str
    sizes: str
    ratings: str


class _RecordKey(NamedTuple):
    record: str


class _BoardEraseArgs(NamedTuple):
    player: str
    now_ms: int
    boards: int
    records: int


PLAYER_ERASE_BOARD.bind(keys=_BoardEraseKeys, args=_BoardEraseArgs, key_groups=(_BoardKeys, _RecordKey))


@dataclass(frozen=True)
class BoardErased:
    boards: int  # boards and stashes the player left
    records: int  # idempotency records removed


async def player_erase_board(
    client: Redis, *, ref: str, player_id: str, now_ms: int, boards: Sequence[str], records: Sequence[str]
) -> BoardErased | None:
    """Erase the player from every board of one leaderboard, with a ledger tombstone; None
    when an index lists a key not passed (read them again and call again)."""
    call = PLAYER_ERASE_BOARD.flatten(
        _BoardEraseKeys(
            keys.boards_index(ref),
            keys.dirty(ref),
            keys.ledger(ref),
            keys.board_hidden(ref),
            keys.player_spam(ref, player_id),
            keys.player_idempotency(ref, player_id),
            keys.league_tiers(ref),
        ),
        _BoardEraseArgs(player_id, now_ms, len(boards), len(records)),
        key_groups=(
            [
                _BoardKeys(
                    b,
                    keys.hidden_stash(b),
                    keys.entry_meta(b),
                    keys.entry_members(b),
                    keys.entry_entrants(b),
                    keys.entry_tries(b),
                    keys.entry_extra(b),
                    keys.entry_cohorts(b),
                    keys.entry_cohort_sizes(b),
                    keys.entry_ratings(b),
                )
                for b in boards
            ],
            [_RecordKey(r) for r in records],
        ),
    )
    reply = await PLAYER_ERASE_BOARD(client, *call)
    if reply[0] == "retry":
        return None
    if reply[0] != "ok" or len(reply) != 3:
        raise ScriptReplyError(f"player_erase_board replied {reply!r}")
    return BoardErased(int(reply[1]), int(reply[2]))
