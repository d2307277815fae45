"""Live reads: a board's top rows and the recent submissions with their live versions, the
players and cohorts open pages follow, and followed players' places in their cohorts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from competitions.selectors import cohorts as cohort_reads
from core import clock, keys
from core.config import BoardConfig, GameConfig
from core.redis import get_redis
from games import periods
from games.scripts import board as board_scripts
from games.selectors import Board, RecentSubmission, entries_of

from . import scripts as live_scripts


async def board_snapshot(
    *, board: BoardConfig, period: periods.Period, limit: int, next_version: bool, offset: int = 0
) -> tuple[Board, int]:
    """``limit`` rows of a current board from ``offset`` (its top by default) with its live version.

    ``next_version`` takes a new version in the same script call as the read (the
    broadcaster), so versions follow the order of the snapshots; otherwise the
    current version is read (a new watcher's first view).
    """
    read = await board_scripts.board_window(
        get_redis(),
        board_key=keys.board(board.ref, period.kind, period.id),
        ties=board.ties,
        view="page",
        at=offset,
        size=limit,
        version="next" if next_version else "current",
    )
    page = Board(period=period, total=read.total, offset=read.offset, entries=await entries_of(board, read))
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


async def watched_cohorts(*, board: BoardConfig, window: str) -> list[int]:
    """The cohorts of a board's window some live socket watches now (their indexes); lapsed
    interest is dropped on the way (one script-free transaction)."""
    pipe = get_redis().pipeline(transaction=True)
    pipe.zremrangebyscore(keys.live_cohorts(board.ref), "-inf", clock.now_ms())
    pipe.zrange(keys.live_cohorts(board.ref), 0, -1)
    _, members = await pipe.execute()
    # Members are '<window>:<index>:<process>' (live.services.live_watch_cohorts).
    parts = (member.split(":") for member in members)
    return sorted({int(index) for kind, index, _ in parts if kind == window})


@dataclass(frozen=True)
class CohortPlace:
    """A player's place in their cohort, as ``player`` messages carry it (all None: in no
    cohort yet, e.g. held for a balanced split)."""

    cohort: str | None = None
    rank: int | None = None
    size: int | None = None
    tier: str | None = None


async def cohort_places(
    *,
    board: BoardConfig,
    period: periods.Period,
    player_ids: Sequence[str],
    known: Mapping[int, cohort_reads.CohortSnapshot],
) -> tuple[dict[str, CohortPlace], int]:
    """Each player's place in their cohort of a competing period, and how many cohorts were
    read for it: a player found in a cohort of ``known`` (read this tick already) costs
    nothing; the others' cohorts are looked up in one command and each read once, whole."""
    snapshots = dict(known)
    located = {p: index for index, snap in known.items() for p in player_ids if p in snap.ranks}
    rest = [p for p in player_ids if p not in located]
    located.update(await cohort_reads.cohorts_of(board=board, period=period, player_ids=rest))
    reads = 0
    for index in sorted(set(located.values()) - snapshots.keys()):
        found = await cohort_reads.cohort_snapshot(board=board, period=period, index=index, limit=0)
        reads += 1
        if found is not None:
            snapshots[index] = found
    places: dict[str, CohortPlace] = {}
    for player_id in player_ids:
        snap = snapshots.get(located.get(player_id, -1))
        places[player_id] = (
            CohortPlace(snap.cohort, snap.ranks.get(player_id), snap.size, snap.tier) if snap else CohortPlace()
        )
    return places, reads
