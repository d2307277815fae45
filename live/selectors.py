"""Live reads: a board's top rows with their live version, and the players open pages follow."""

from __future__ import annotations

from core import clock, keys
from core.config import GameConfig
from core.redis import get_redis
from games import periods, scripts
from games.selectors import Board, entries_of


async def board_snapshot(
    *, game: GameConfig, period: periods.Period, limit: int, next_version: bool
) -> tuple[Board, int]:
    """The top ``limit`` of a current board with its live version.

    ``next_version`` takes a new version in the same script call as the read (the
    broadcaster), so versions follow the order of the snapshots; otherwise the
    current version is read (a new watcher's first view).
    """
    board_key = keys.board(game.slug, period.kind, period.id)
    raw = await scripts.BOARD_WINDOW(
        get_redis(),
        [board_key, keys.names(game.slug), keys.board_version(board_key)],
        ["page", 0, limit, "next" if next_version else "current"],
    )
    board = Board(period=period, total=int(raw[0]), offset=0, entries=entries_of(game, raw[4:]))
    return board, int(raw[3])


async def followed_players(*, game: GameConfig) -> list[str]:
    """Players some live page follows now; lapsed interest is dropped on the way (one script-free pipeline)."""
    pipe = get_redis().pipeline(transaction=True)
    pipe.zremrangebyscore(keys.followed(game.slug), "-inf", clock.now_ms())
    pipe.zrange(keys.followed(game.slug), 0, -1)
    _, players = await pipe.execute()
    return players
