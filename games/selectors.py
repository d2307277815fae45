"""Reads of the boards Redis keeps, for the API, the pages and admin. Async; sync callers
use run_sync. Named past periods are read through archive/selectors.py, which
serves them from the archive once it is complete and from here until then.

Ranks are competition ranks ("1224"): under ties 'shared' equal scores share a rank and
the next rank skips, and players are listed by player_id in byte order; under ties
'earliest' and 'subscore' every entry has a rank of its own (core/lua/prelude/entries.lua).
A board's keys and its game's names live on two hash tags, so a read is a board script
and then one HMGET of the names.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from core import clock, errors, keys, text
from core.config import BoardConfig, GameConfig
from core.models import is_player_id
from core.redis import get_redis

from . import periods
from .scripts import board as board_scripts
from .scripts import game as game_scripts


@dataclass(slots=True)
class Entry:
    rank: int
    player_id: str
    display_name: str
    score: int
    metadata: dict[str, Any] | None = None
    subscore: int | None = None  # on boards with ties 'subscore'


@dataclass(frozen=True)
class Board:
    period: periods.Period
    total: int
    offset: int
    entries: list[Entry]


@dataclass(slots=True)
class Standing:
    player_id: str
    display_name: str
    rank: int
    score: int
    total: int
    percentile: float  # share of the board ranked below this entry, in percent
    metadata: dict[str, Any] | None = None
    subscore: int | None = None  # on boards with ties 'subscore'


@dataclass(frozen=True)
class NamedPlayer:
    player_id: str
    display_name: str


@dataclass(frozen=True)
class RecentSubmission:
    player_id: str
    display_name: str
    score: int
    at: dt.datetime
    leaderboard: str


def board_or_404(*, game: GameConfig, slug: str) -> BoardConfig:
    """The game's board ``slug`` (deactivated ones too: their standings stay readable)."""
    board = game.board_named(slug)
    if board is None:
        raise errors.board_not_found(game=game, board=slug)
    return board


def resolve_period(*, board: BoardConfig, period: str, period_id: str | None = None) -> tuple[periods.Period, bool]:
    """The period asked for, and whether it is the current one. 404 if the board does not keep it."""
    if period not in periods.WINDOWS:
        raise errors.period_not_found(f"Unknown window {period!r}; use one of {', '.join(periods.WINDOWS)}.")
    if period not in board.windows:
        raise errors.period_not_found(f"This leaderboard keeps no {period} window.")
    try:
        current = periods.window_current(board, period, clock.now())
        if period_id is None or period_id == current.id:
            return current, True
        return periods.window_parse(board, period, period_id), False
    except periods.InvalidPeriod as error:
        raise errors.period_not_found(str(error)) from None


def _current(board: BoardConfig, period: str) -> periods.Period:
    return resolve_period(board=board, period=period)[0]


def metadata_of(raw: str) -> dict[str, Any] | None:
    """An entry's metadata as stored ('' for none)."""
    return json.loads(raw) if raw else None


async def names_of(*, game_slug: str, player_ids: Sequence[str]) -> list[str]:
    """Display names of the players (their id where none is stored), in order."""
    if not player_ids:
        return []
    found = cast("list[str | None]", await get_redis().hmget(keys.names(game_slug), list(player_ids)))
    return [name or player_id for player_id, name in zip(player_ids, found, strict=True)]


async def entries_of(board: BoardConfig, read: board_scripts.WindowRead) -> list[Entry]:
    """Entries from a board_window.lua read, with their names (one object per row, no more:
    the archive reads boards thousands of rows at a time)."""
    ids = read.player_ids
    if not ids:
        return []
    names = cast("list[str | None]", await get_redis().hmget(keys.names(board.game_slug), ids))
    sign = -1 if board.higher_is_better else 1
    # A player with no stored name shows their id (as names_of does).
    entries = [
        Entry(rank, player_id, name or player_id, sign * base, json.loads(meta) if meta else None)
        for rank, player_id, name, base, meta in zip(read.ranks, ids, names, read.bases, read.metadata, strict=True)
    ]
    if read.subs is not None:
        for entry, sub in zip(entries, read.subs, strict=True):
            entry.subscore = board.subscore_of(sub)
    return entries


def board_key(board: BoardConfig, period: periods.Period) -> str:
    return keys.board(board.ref, period.kind, period.id)


# --------------------------------------------------------------------------- any board Redis keeps


async def board_kept(*, board: BoardConfig, period: periods.Period) -> bool:
    """Whether Redis still holds this period's board (a past period's, until its retention ends)."""
    return bool(await get_redis().exists(keys.board(board.ref, period.kind, period.id)))


async def board_page(*, board: BoardConfig, period: periods.Period, offset: int = 0, limit: int = 50) -> Board:
    read = await board_scripts.board_window(
        get_redis(), board_key=board_key(board, period), ties=board.ties, view="page", at=offset, size=limit
    )
    return Board(period=period, total=read.total, offset=read.offset, entries=await entries_of(board, read))


async def board_around(*, board: BoardConfig, period: periods.Period, player_id: str, radius: int = 5) -> Board | None:
    """The player with up to ``radius`` neighbours each side; None if not on the board."""
    read = await board_scripts.board_window(
        get_redis(), board_key=board_key(board, period), ties=board.ties, view="around", at=player_id, size=radius
    )
    if not read.found:
        return None
    return Board(period=period, total=read.total, offset=read.offset, entries=await entries_of(board, read))


async def board_standings(
    *, board: BoardConfig, period: periods.Period, player_ids: Sequence[str]
) -> tuple[int, list[Standing]]:
    """The board's size, and the given players' standings on it (those on it), best first."""
    total, rows = await board_scripts.players_rank(
        get_redis(), board_key=board_key(board, period), ties=board.ties, player_ids=player_ids
    )
    names = await names_of(game_slug=board.game_slug, player_ids=[row.player_id for row in rows])
    found = []
    for row, name in zip(rows, names, strict=True):
        worse = total - (row.rank - 1) - row.equal
        found.append(
            Standing(
                player_id=row.player_id,
                display_name=name,
                rank=row.rank,
                score=board.score_from_base(row.base),
                total=total,
                percentile=round(100 * worse / total, 2),
                metadata=metadata_of(row.metadata),
                subscore=board.subscore_of(row.sub),
            )
        )
    found.sort(key=lambda s: (s.rank, s.player_id.encode()))
    return total, found


def ranked_board(
    period: periods.Period, total: int, found: Sequence[Standing], asked: Sequence[str]
) -> tuple[Board, list[str]]:
    """The friends view of some standings: a board of those found, and the players not on it."""
    present = {s.player_id for s in found}
    entries = [
        Entry(
            rank=s.rank,
            player_id=s.player_id,
            display_name=s.display_name,
            score=s.score,
            metadata=s.metadata,
            subscore=s.subscore,
        )
        for s in found
    ]
    return Board(period=period, total=total, offset=0, entries=entries), [p for p in asked if p not in present]


# --------------------------------------------------------------------------- current boards


async def leaderboard_page(*, board: BoardConfig, period: str, offset: int = 0, limit: int = 50) -> Board:
    """A page of the current period of one of the board's windows."""
    return await board_page(board=board, period=_current(board, period), offset=offset, limit=limit)


async def players_around(*, board: BoardConfig, period: str, player_id: str, radius: int = 5) -> Board | None:
    return await board_around(board=board, period=_current(board, period), player_id=player_id, radius=radius)


async def player_standing(*, board: BoardConfig, period: str, player_id: str) -> Standing | None:
    _, found = await board_standings(board=board, period=_current(board, period), player_ids=[player_id])
    return found[0] if found else None


async def players_ranked(*, board: BoardConfig, period: str, player_ids: Sequence[str]) -> tuple[Board, list[str]]:
    """The given players ranked within the whole current board (friends view), and those not on it."""
    current = _current(board, period)
    unique = list(dict.fromkeys(player_ids))
    total, found = await board_standings(board=board, period=current, player_ids=unique)
    return ranked_board(current, total, found, unique)


async def player_overview(*, board: BoardConfig, player_id: str) -> dict[str, Standing | None]:
    """The player's standing in the current period of each of the board's windows."""
    overview: dict[str, Standing | None] = {}
    for period in current_periods(board=board):
        _, found = await board_standings(board=board, period=period, player_ids=[player_id])
        overview[period.kind] = found[0] if found else None
    return overview


async def player_profile(*, boards: Sequence[BoardConfig], player_id: str) -> dict[str, dict[str, Standing | None]]:
    """The player's standing on every window of these boards (a page of a profile screen)."""
    return {board.slug: await player_overview(board=board, player_id=player_id) for board in boards}


async def display_name(*, game: GameConfig, player_id: str) -> str | None:
    return cast("str | None", await get_redis().hget(keys.names(game.slug), player_id))


async def is_hidden(*, game: GameConfig, player_id: str) -> bool:
    return bool(await get_redis().sismember(keys.hidden(game.slug), player_id))


async def recent_submissions(*, game: GameConfig, limit: int = 20) -> list[RecentSubmission]:
    client = get_redis()
    rows = [json.loads(r) for r in await client.lrange(keys.recent(game.slug), 0, limit - 1)]
    if not rows:
        return []
    ids = [r["player_id"] for r in rows]
    pipe = client.pipeline(transaction=False)
    pipe.hmget(keys.names(game.slug), ids)
    pipe.smismember(keys.hidden(game.slug), ids)
    names, hidden = await pipe.execute()
    return [
        RecentSubmission(
            player_id=r["player_id"],
            display_name=name or r["player_id"],
            score=r["score"],
            at=clock.from_ms(r["at"]),
            leaderboard=r.get("leaderboard", ""),
        )
        for r, name, is_hidden in zip(rows, names, hidden, strict=True)
        if not is_hidden
    ]


def current_periods(*, board: BoardConfig) -> list[periods.Period]:
    return periods.board_current(board, clock.now())


async def standings_of(*, board: BoardConfig, period: periods.Period, player_ids: Sequence[str]) -> list[Standing]:
    """The given players' standings on one board (those on it)."""
    return (await board_standings(board=board, period=period, player_ids=player_ids))[1]


async def players_named(*, game: GameConfig, query: str, limit: int = 20) -> list[NamedPlayer]:
    """Players whose display name starts with ``query``, whatever its case or accents (hidden
    players left out); a player whose id is ``query`` exactly comes first. One script call
    on the name index: O(log n) at any number of players."""
    typed = query.strip()
    key = text.search_key(typed)
    exact = typed if is_player_id(typed) else ""
    if not key and not exact:
        return []
    found = await game_scripts.players_named(get_redis(), slug=game.slug, prefix=key, limit=limit, exact=exact)
    return [NamedPlayer(player_id=player_id, display_name=name) for player_id, name in found]
