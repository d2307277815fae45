"""Presence reads. Each applies the game's timeout window itself, so answers are
right whether or not the prune task has run yet (pruning is for memory only)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from core import clock, keys
from core.config import GameConfig
from core.redis import get_redis

from . import scripts

# A player's last-seen time is kept this long after they went offline ("last seen 3
# weeks ago"), then forgotten: reads stop showing it and the prune drops it, so the
# last-seen ZSET holds only recent players.
PRESENCE_LAST_SEEN_KEEP_SECS = 30 * 24 * 3600


@dataclass(frozen=True)
class OnlinePlayer:
    player_id: str
    display_name: str
    last_seen: dt.datetime


@dataclass(frozen=True)
class PresencePage:
    version: int  # of the live presence messages, when this was read
    online: int
    watching: int
    offset: int
    players: list[OnlinePlayer]


@dataclass(frozen=True)
class PlayerPresence:
    online: bool
    last_seen: dt.datetime | None


def _cutoff_ms(game: GameConfig) -> int:
    return clock.now_ms() - game.presence_timeout_secs * 1000


async def presence_page(*, game: GameConfig, offset: int = 0, limit: int = 50) -> PresencePage:
    """Online players, most recently seen first, with the online and watching counts."""
    read = await scripts.presence_read(
        get_redis(),
        slug=game.slug,
        now_ms=clock.now_ms(),
        timeout_ms=game.presence_timeout_secs * 1000,
        offset=offset,
        limit=limit,
    )
    players = [OnlinePlayer(p.player_id, p.display_name, clock.from_ms(p.at_ms)) for p in read.players]
    return PresencePage(
        version=read.version, online=read.online, watching=read.watching, offset=offset, players=players
    )


async def player_presence(*, game: GameConfig, player_id: str) -> PlayerPresence:
    """Whether a player is online, and when they were last seen (None: never, longer ago than
    PRESENCE_LAST_SEEN_KEEP_SECS, or the player is hidden: a hidden player leaves no trace)."""
    async with get_redis().pipeline(transaction=True) as pipe:
        pipe.zscore(keys.presence_online(game.slug), player_id)
        pipe.zscore(keys.presence_last_seen(game.slug), player_id)
        pipe.sismember(keys.hidden(game.slug), player_id)
        score, stored, hidden = await pipe.execute()
    if hidden:
        return PlayerPresence(online=False, last_seen=None)
    if score is not None:
        return PlayerPresence(online=score >= _cutoff_ms(game), last_seen=clock.from_ms(score))
    if stored is None or stored < clock.now_ms() - PRESENCE_LAST_SEEN_KEEP_SECS * 1000:
        return PlayerPresence(online=False, last_seen=None)  # the prune drops these too
    return PlayerPresence(online=False, last_seen=clock.from_ms(stored))


async def online_among(*, game: GameConfig, player_ids: Sequence[str]) -> set[str]:
    """Which of these players are online (for the dots beside leaderboard rows)."""
    if not player_ids:
        return set()
    scores = await get_redis().zmscore(keys.presence_online(game.slug), list(player_ids))
    cutoff = _cutoff_ms(game)
    return {p for p, s in zip(player_ids, scores, strict=True) if s is not None and s >= cutoff}


@dataclass(frozen=True)
class PresenceCount:
    slug: str
    online: int
    watching: int


async def presence_counts(*, games: Sequence[GameConfig]) -> list[PresenceCount]:
    """Each game's online players and watchers now (the /metrics gauges): two ZCOUNTs a
    game, pipelined."""
    if not games:
        return []
    now_ms = clock.now_ms()
    pipe = get_redis().pipeline(transaction=False)
    for game in games:
        cutoff = now_ms - game.presence_timeout_secs * 1000
        pipe.zcount(keys.presence_online(game.slug), cutoff, "+inf")
        pipe.zcount(keys.presence_watching(game.slug), cutoff, "+inf")
    counts = await pipe.execute()
    return [PresenceCount(game.slug, int(counts[2 * i]), int(counts[2 * i + 1])) for i, game in enumerate(games)]
