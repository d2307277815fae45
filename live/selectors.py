"""Live reads: a board's top rows and the recent submissions with their live versions, and
the players open pages follow."""

from __future__ import annotations

from core import clock, keys
from core.config import BoardConfig, GameConfig
from core.redis import get_redis
from games import periods
from games.scripts import board as board_scripts
from games.selectors import Board, RecentSubmission, entries_of

from . import scripts as live_scripts


async def board_snapshot(
    *, board: BoardConfig, period: periods.Period, limit: int, next_version: bool
) -> tuple[Board, int]:
    """The top ``limit`` of a current board with its live version.

    ``next_version`` takes a new version in the same script call as the read (the
    broadcaster), so versions follow the order of the snapshots; otherwise the
    current version is read (a new watcher's first view).
    """
    read = await board_scripts.board_window(
        get_redis(),
        board_key=keys.board(board.ref, period.kind, period.id),
        ties=board.ties,
        view="page",
        at=0,
        size=limit,
        version="next" if next_version else "current",
    )
    page = Board(period=period, total=read.total, offset=0, entries=await entries_of(board, read))
    return page, read.version


async def recent_snapshot(*, game: GameConfig, limit: int, next_version: bool) -> tuple[list[RecentSubmission], int]:
    """A game's latest submissions (hidden players left out) with the live version.

    ``next_version`` takes a new version in the same call as the read (the broadcaster);
    otherwise the current one is read (a new watcher's first view).
    """
    version, rows = await live_scripts.recent_snapshot(
        get_redis(), slug=game.slug, limit=limit, take="next" if next_version else "current"
    )
    submissions = [
        RecentSubmission(
            player_id=row.entry["player_id"],
            display_name=row.name or row.entry["player_id"],
            score=row.entry["score"],
            at=clock.from_ms(row.entry["at"]),
            leaderboard=row.entry.get("leaderboard", ""),
        )
        for row in rows
    ]
    return submissions, version


async def followed_players(*, game: GameConfig) -> list[str]:
    """Players some live page follows now; lapsed interest is dropped on the way (one script-free pipeline)."""
    pipe = get_redis().pipeline(transaction=True)
    pipe.zremrangebyscore(keys.followed(game.slug), "-inf", clock.now_ms())
    pipe.zrange(keys.followed(game.slug), 0, -1)
    _, players = await pipe.execute()
    return players


def home_period(board: BoardConfig) -> str:
    """The window a board shows on the home page: today's if it keeps one."""
    return periods.DAILY if periods.DAILY in board.windows else board.windows[0]
