"""Live writes: which players open pages follow (so the broadcaster reads only those)."""

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
