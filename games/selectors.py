"""Reads of the boards Redis keeps, for the API, the pages and admin. Async; sync callers
use run_sync. Named past periods are read through archive/selectors.py, which
serves them from the archive once it is complete and from here until then.

Ranks are competition ranks ("1224"): equal scores share a rank and the next
rank skips. Among equal scores, players are listed by player_id in byte order.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from core import clock, keys, text
from core.config import GameConfig
from core.errors import ServiceError
from core.models import is_player_id
from core.redis import get_redis

from . import periods, scripts


@dataclass(frozen=True)
class Entry:
    rank: int
    player_id: str
    display_name: str
    score: int


@dataclass(frozen=True)
class Board:
    period: periods.Period
    total: int
    offset: int
    entries: list[Entry]


@dataclass(frozen=True)
class Standing:
    player_id: str
    display_name: str
    rank: int
    score: int
    total: int
    percentile: float  # share of the board with a strictly worse score, in percent


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


def resolve_period(*, game: GameConfig, period: str, period_id: str | None = None) -> tuple[periods.Period, bool]:
    """The period asked for, and whether it is the current one. 404 if the game does not keep it."""
    if period not in periods.PERIODS:
        raise ServiceError(
            404, "period_not_found", f"Unknown period {period!r}; use one of {', '.join(periods.PERIODS)}."
        )
    if period not in game.periods:
        raise ServiceError(404, "period_not_found", f"This game keeps no {period} boards.")
    current = periods.current(period, game.timezone, clock.now())
    if period_id is None or period_id == current.id:
        return current, True
    try:
        return periods.parse(period, period_id, game.timezone), False
    except periods.InvalidPeriod as error:
        raise ServiceError(404, "period_not_found", str(error)) from None


def _current(game: GameConfig, period: str) -> periods.Period:
    return resolve_period(game=game, period=period)[0]


def entries_of(game: GameConfig, raw: Sequence) -> list[Entry]:
    """Entries from board_window.lua's (id, sort key, rank, name) rows."""
    return [
        Entry(
            rank=int(raw[i + 2]), player_id=raw[i], display_name=raw[i + 3], score=game.score_from_sort_key(raw[i + 1])
        )
        for i in range(0, len(raw), 4)
    ]


# --------------------------------------------------------------------------- any board Redis keeps


async def board_kept(*, game: GameConfig, period: periods.Period) -> bool:
    """Whether Redis still holds this period's board (a past period's, until its retention ends)."""
    return bool(await get_redis().exists(keys.board(game.slug, period.kind, period.id)))


async def board_page(*, game: GameConfig, period: periods.Period, offset: int = 0, limit: int = 50) -> Board:
    raw = await scripts.BOARD_WINDOW(
        get_redis(),
        [keys.board(game.slug, period.kind, period.id), keys.names(game.slug)],
        ["page", offset, limit],
    )
    return Board(period=period, total=int(raw[0]), offset=int(raw[1]), entries=entries_of(game, raw[4:]))


async def board_around(*, game: GameConfig, period: periods.Period, player_id: str, radius: int = 5) -> Board | None:
    """The player with up to ``radius`` neighbours each side; None if not on the board."""
    raw = await scripts.BOARD_WINDOW(
        get_redis(),
        [keys.board(game.slug, period.kind, period.id), keys.names(game.slug)],
        ["around", player_id, radius],
    )
    if not int(raw[2]):
        return None
    return Board(period=period, total=int(raw[0]), offset=int(raw[1]), entries=entries_of(game, raw[4:]))


async def board_standings(
    *, game: GameConfig, period: periods.Period, player_ids: Sequence[str]
) -> tuple[int, list[Standing]]:
    """The board's size, and the given players' standings on it (those on it), best first."""
    raw = await scripts.PLAYERS_RANK(
        get_redis(), [keys.board(game.slug, period.kind, period.id), keys.names(game.slug)], list(player_ids)
    )
    total = int(raw[0])
    found = []
    for i in range(1, len(raw), 5):
        player_id, sort_key, rank, equal, name = raw[i : i + 5]
        if sort_key == "":
            continue
        worse = total - (int(rank) - 1) - int(equal)
        found.append(
            Standing(
                player_id=player_id,
                display_name=name,
                rank=int(rank),
                score=game.score_from_sort_key(sort_key),
                total=total,
                percentile=round(100 * worse / total, 2),
            )
        )
    found.sort(key=lambda s: (s.rank, s.player_id.encode()))
    return total, found


def ranked_board(
    period: periods.Period, total: int, found: Sequence[Standing], asked: Sequence[str]
) -> tuple[Board, list[str]]:
    """The friends view of some standings: a board of those found, and the players not on it."""
    present = {s.player_id for s in found}
    entries = [Entry(rank=s.rank, player_id=s.player_id, display_name=s.display_name, score=s.score) for s in found]
    return Board(period=period, total=total, offset=0, entries=entries), [p for p in asked if p not in present]


# --------------------------------------------------------------------------- current boards


async def leaderboard_page(*, game: GameConfig, period: str, offset: int = 0, limit: int = 50) -> Board:
    """A page of the current board of a period kind."""
    return await board_page(game=game, period=_current(game, period), offset=offset, limit=limit)


async def players_around(*, game: GameConfig, period: str, player_id: str, radius: int = 5) -> Board | None:
    return await board_around(game=game, period=_current(game, period), player_id=player_id, radius=radius)


async def player_standing(*, game: GameConfig, period: str, player_id: str) -> Standing | None:
    _, found = await board_standings(game=game, period=_current(game, period), player_ids=[player_id])
    return found[0] if found else None


async def players_ranked(*, game: GameConfig, period: str, player_ids: Sequence[str]) -> tuple[Board, list[str]]:
    """The given players ranked within the whole current board (friends view), and those not on it."""
    current = _current(game, period)
    unique = list(dict.fromkeys(player_ids))
    total, found = await board_standings(game=game, period=current, player_ids=unique)
    return ranked_board(current, total, found, unique)


async def player_overview(*, game: GameConfig, player_id: str) -> dict[str, Standing | None]:
    """The player's standing in each current period the game keeps."""
    overview: dict[str, Standing | None] = {}
    for period in current_periods(game=game):
        _, found = await board_standings(game=game, period=period, player_ids=[player_id])
        overview[period.kind] = found[0] if found else None
    return overview


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
        )
        for r, name, is_hidden in zip(rows, names, hidden, strict=True)
        if not is_hidden
    ]


def current_periods(*, game: GameConfig) -> list[periods.Period]:
    now = clock.now()
    return [periods.current(kind, game.timezone, now) for kind in game.periods]


async def standings_of(*, game: GameConfig, period: periods.Period, player_ids: Sequence[str]) -> list[Standing]:
    """The given players' standings on one board (those on it)."""
    return (await board_standings(game=game, period=period, player_ids=player_ids))[1]


async def players_named(*, game: GameConfig, query: str, limit: int = 20) -> list[NamedPlayer]:
    """Players whose display name starts with ``query``, whatever its case or accents (hidden
    players left out); a player whose id is ``query`` exactly comes first. One script call
    on the name index: O(log n) at any number of players."""
    typed = query.strip()
    key = text.search_key(typed)
    exact = typed if is_player_id(typed) else ""
    if not key and not exact:
        return []
    slug = game.slug
    raw = await scripts.PLAYERS_NAMED(
        get_redis(), [keys.name_index(slug), keys.names(slug), keys.hidden(slug)], [key, limit, exact]
    )
    return [NamedPlayer(player_id=raw[i], display_name=raw[i + 1]) for i in range(0, len(raw), 2)]
