"""Presence writes: heartbeats, leaves, pruning, and the broadcaster's claim of changes.

A player is online while last seen within the game's ``presence_timeout_secs``
(core/models.py). Three sources feed one ZSET per game (presence/lua/presence_update.lua):
game servers through the API, accepted scores (in the submit script), and the
open pages of signed-in users linked to a player. Anonymous pages only count as
"watching". Joins and leaves are queued in Redis and announced by the live
broadcaster once per tick (live/broadcaster.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core import clock, errors, keys
from core.config import GameConfig
from core.models import MAX_BATCH_ITEMS, PLAYER_ID_MESSAGE, Game, is_player_id
from core.redis import get_redis, run_sync

from . import scripts
from .selectors import PRESENCE_LAST_SEEN_KEEP_SECS, OnlinePlayer

# A game server may report at most this many players per request, as for score batches.
PRESENCE_BATCH_MAX = MAX_BATCH_ITEMS
# An open page heartbeats this often at most (a third of the timeout when that is
# shorter), so one late beat never makes a reader see its player offline.
PAGE_HEARTBEAT_MAX_SECS = 20.0
# Joins and leaves not announced within this long are dropped: the counts stay right,
# and a broadcaster that was down does not replay stale changes when it comes back.
PRESENCE_ANNOUNCE_TTL_MS = 60_000
# One prune call removes at most this many players: about 3.7 µs each inside Redis
# (bench/presence.py), so one call holds Redis for about 4 ms; the task calls again
# until a game has no more expired members.
PRUNE_BATCH_MAX = 1000
# Games whose presence the beat task prunes in one round trip: their scripts run back to back
# in Redis (an idle game's costs microseconds), so 500 hold Redis a few milliseconds at most.
PRUNE_GAMES_PER_PIPELINE = 500
# The broadcaster announces at most this many joins and this many leaves per game per
# tick; the rest go out on the next ticks.
ANNOUNCE_MAX_PER_TICK = 200
# One broadcaster at a time announces a game's presence; if it dies, another takes
# over this long after its last tick.
ANNOUNCER_LEASE_MS = 2000


def _timeout_ms(game: GameConfig) -> int:
    return game.presence_timeout_secs * 1000


def page_heartbeat_secs(game: GameConfig) -> float:
    return min(PAGE_HEARTBEAT_MAX_SECS, game.presence_timeout_secs / 3)


# --------------------------------------------------------------------------- game servers


@dataclass(frozen=True)
class Reported:
    online: int
    offline: int
    joined: int
    left: int


def _check_ids(ids: Sequence[object], field: str) -> list[str]:
    checked: list[str] = []
    for i, player_id in enumerate(ids):
        if not isinstance(player_id, str) or not is_player_id(player_id):
            raise errors.invalid(f"{field}[{i}]", PLAYER_ID_MESSAGE)
        checked.append(player_id)
    return list(dict.fromkeys(checked))


async def presence_changed(*, slug: str) -> None:
    """Tell the broadcaster that the game's presence changed (it announces changed games only)."""
    await get_redis().zadd(keys.live_presence_changes(), {slug: clock.now_ms()}, nx=True)


async def presence_report(*, game: GameConfig, online: Sequence[str], offline: Sequence[str]) -> Reported:
    """A game server's heartbeat for the players in ``online``; ``offline`` leave at once."""
    if len(online) + len(offline) > PRESENCE_BATCH_MAX:
        raise errors.invalid("online", f"At most {PRESENCE_BATCH_MAX} player ids in all.")
    online_ids, offline_ids = _check_ids(online, "online"), _check_ids(offline, "offline")
    both = set(online_ids) & set(offline_ids)
    if both:
        raise errors.invalid("offline", f"{sorted(both)[0]!r} is in both online and offline; send it in one.")
    if not online_ids and not offline_ids:
        return Reported(0, 0, 0, 0)
    update = await scripts.presence_server(
        get_redis(),
        slug=game.slug,
        now_ms=clock.now_ms(),
        timeout_ms=_timeout_ms(game),
        announce_ms=PRESENCE_ANNOUNCE_TTL_MS,
        online=online_ids,
        offline=offline_ids,
    )
    if update.joined or update.left:
        await presence_changed(slug=game.slug)
    return Reported(len(online_ids), len(offline_ids), update.joined, update.left)


# --------------------------------------------------------------------------- open pages


async def page_beat(*, game: GameConfig, player_id: str, socket_id: str) -> bool:
    """An open page of the user linked to ``player_id``; True if the player just came online."""
    joined = await scripts.presence_page_beat(
        get_redis(),
        slug=game.slug,
        player_id=player_id,
        socket_id=socket_id,
        now_ms=clock.now_ms(),
        timeout_ms=_timeout_ms(game),
        announce_ms=PRESENCE_ANNOUNCE_TTL_MS,
    )
    if joined:
        await presence_changed(slug=game.slug)
    return joined


async def page_leave(*, game: GameConfig, player_id: str, socket_id: str) -> str:
    """A linked user's page closed: 'left', 'stay' (another page or source keeps them) or 'gone'."""
    outcome = await scripts.presence_page_leave(
        get_redis(),
        slug=game.slug,
        player_id=player_id,
        socket_id=socket_id,
        now_ms=clock.now_ms(),
        timeout_ms=_timeout_ms(game),
        announce_ms=PRESENCE_ANNOUNCE_TTL_MS,
    )
    if outcome is scripts.PageLeave.LEFT:
        await presence_changed(slug=game.slug)
    return outcome.value


async def watcher_beat(*, game: GameConfig, socket_id: str) -> None:
    """An open page of a viewer who is not a listed player (counted as watching)."""
    if await get_redis().zadd(keys.presence_watching(game.slug), {socket_id: clock.now_ms()}):
        await presence_changed(slug=game.slug)


async def watcher_leave(*, game: GameConfig, socket_id: str) -> None:
    if await get_redis().zrem(keys.presence_watching(game.slug), socket_id):
        await presence_changed(slug=game.slug)


# --------------------------------------------------------------------------- pruning


async def presence_prune(*, game: GameConfig) -> list[str]:
    """Remove a game's expired members; returns the players removed (their leaves are queued)."""
    return await _prune_rest(scripts.PruneTarget(game.slug, _timeout_ms(game)), None, now_ms=clock.now_ms())


async def _prune_rest(target: scripts.PruneTarget, first: list[str] | None, *, now_ms: int) -> list[str]:
    """Prune a game on from its ``first`` batch (None: none taken yet) until a batch is not
    full, then announce the change once."""
    removed: list[str] = []
    batch = first
    while True:
        if batch is None:
            batch = await scripts.presence_prune(
                get_redis(),
                slug=target.slug,
                now_ms=now_ms,
                timeout_ms=target.timeout_ms,
                announce_ms=PRESENCE_ANNOUNCE_TTL_MS,
                batch=PRUNE_BATCH_MAX,
                keep_ms=PRESENCE_LAST_SEEN_KEEP_SECS * 1000,
            )
        removed += batch
        if len(batch) < PRUNE_BATCH_MAX:
            break
        batch = None
    if removed:
        await presence_changed(slug=target.slug)
    return removed


def presence_prune_all() -> int:
    """Prune every game, active or not (the beat task); returns how many players left.

    One query for the games' slugs and timeouts (not each game's whole config) and one round
    trip per PRUNE_GAMES_PER_PIPELINE games: a thousand idle games cost a few milliseconds.
    """
    targets = [
        scripts.PruneTarget(slug, timeout_secs * 1000)
        for slug, timeout_secs in Game.objects.values_list("slug", "presence_timeout_secs")
    ]
    return run_sync(_prune_games, targets)


async def _prune_games(targets: list[scripts.PruneTarget]) -> int:
    total = 0
    now_ms = clock.now_ms()
    for start in range(0, len(targets), PRUNE_GAMES_PER_PIPELINE):
        chunk = targets[start : start + PRUNE_GAMES_PER_PIPELINE]
        firsts = await scripts.presence_prune_many(
            get_redis(),
            chunk,
            now_ms=now_ms,
            announce_ms=PRESENCE_ANNOUNCE_TTL_MS,
            batch=PRUNE_BATCH_MAX,
            keep_ms=PRESENCE_LAST_SEEN_KEEP_SECS * 1000,
        )
        failed: Exception | None = None
        for target, first in zip(chunk, firsts, strict=True):
            if isinstance(first, Exception):
                failed = failed or first
            elif first:
                # Announced even when another game's call failed: its leaves are queued already.
                total += len(await _prune_rest(target, first, now_ms=now_ms))
        if failed is not None:
            raise failed
    return total


# --------------------------------------------------------------------------- announcements


@dataclass(frozen=True)
class Announcement:
    version: int
    online: int
    watching: int
    joined: list[OnlinePlayer]
    left: list[str]
    # When the counts next fall by themselves (a member's window ends), epoch ms; None if nobody is there.
    next_lapse_ms: int | None = None


async def presence_claim_changes(*, game: GameConfig, announcer: str) -> Announcement | None:
    """The broadcaster's claim of a game's unannounced joins and leaves (each to one caller).

    None when another broadcaster (``announcer`` is the caller's token) holds the lease.
    """
    claimed = await scripts.presence_announce(
        get_redis(),
        slug=game.slug,
        now_ms=clock.now_ms(),
        timeout_ms=_timeout_ms(game),
        max_changes=ANNOUNCE_MAX_PER_TICK,
        token=announcer,
        lease_ms=ANNOUNCER_LEASE_MS,
    )
    if claimed is None:
        return None
    joined = [OnlinePlayer(p.player_id, p.display_name, clock.from_ms(p.at_ms)) for p in claimed.joined]
    return Announcement(
        claimed.version, claimed.online, claimed.watching, joined, list(claimed.left), claimed.next_lapse_ms
    )
