"""Live writes: which players and cohorts open pages follow (so the broadcaster reads only those)."""

from __future__ import annotations

from collections.abc import Sequence

from core import clock, keys
from core.config import GameConfig
from core.redis import get_redis

# A live page's interest in a player lapses this long after its last refresh...
FOLLOW_TTL_MS = 60_000
# ...and an open page refreshes it this often, so a closed page stops costing the broadcaster.
FOLLOW_REFRESH_SECS = 20.0


async def live_follow(*, game: GameConfig, player_ids: Sequence[str]) -> None:
    """Tell the broadcaster a live page follows these players (for FOLLOW_TTL_MS)."""
    if player_ids:
        expires = clock.now_ms() + FOLLOW_TTL_MS
        await get_redis().zadd(keys.followed(game.slug), dict.fromkeys(player_ids, expires))


async def live_watch_cohorts(*, ref: str, window: str, indexes: Sequence[int], watcher: str) -> None:
    """Tell the broadcaster that live sockets of the process ``watcher`` (its hub's token) watch
    these cohorts of a board's window, for FOLLOW_TTL_MS as a follow: it reads only the cohorts
    someone watches. One member per process and cohort, however many of its sockets watch it,
    so the process's last watcher can take it back (live_unwatch_cohort) and a process that
    dies leaves nothing past FOLLOW_TTL_MS; the key goes with the last interest too."""
    if indexes:
        expires = clock.now_ms() + FOLLOW_TTL_MS
        # Two commands rather than a pipeline: a socket's commands coalesce with its
        # process's other sockets' (core.redis.coalescing), an explicit pipeline would not.
        client = get_redis()
        await client.zadd(keys.live_cohorts(ref), {f"{window}:{index}:{watcher}": expires for index in indexes})
        await client.pexpire(keys.live_cohorts(ref), FOLLOW_TTL_MS)


async def live_unwatch_cohort(*, ref: str, window: str, index: int, watcher: str) -> None:
    """The process ``watcher``'s last socket watching this cohort left it: the broadcaster stops
    reading it at once (unless another process watches it)."""
    await get_redis().zrem(keys.live_cohorts(ref), f"{window}:{index}:{watcher}")
