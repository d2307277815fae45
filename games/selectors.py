"""Reads of standings, for the API, the pages and admin. Async; sync callers use run_sync.

Ranks are competition ranks ("1224"): equal scores share a rank and the next
rank skips. Among equal scores, players are listed by player_id in byte order.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

from django.utils import timezone

from leaderboard_site.redis import get_redis

from . import keys, periods, scripts
from .config import GameConfig
from .errors import ServiceError

if TYPE_CHECKING:
    from archive.selectors import Archived


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
class RecentSubmission:
    player_id: str
    display_name: str
    score: int
    at: dt.datetime


def resolve_period(
    *, game: GameConfig, period: str, period_id: str | None = None, now: dt.datetime | None = None
) -> tuple[periods.Period, bool]:
    """The period asked for, and whether it is the current one. 404 if the game does not keep it."""
    if period not in periods.PERIODS:
        raise ServiceError(
            404, "period_not_found", f"Unknown period {period!r}; use one of {', '.join(periods.PERIODS)}."
        )
    if period not in game.periods:
        raise ServiceError(404, "period_not_found", f"This game keeps no {period} boards.")
    current = periods.current(period, game.timezone, now or timezone.now())
    if period_id is None or period_id == current.id:
        return current, True
    try:
        return periods.parse(period, period_id, game.timezone), False
    except periods.InvalidPeriod as error:
        raise ServiceError(404, "period_not_found", str(error)) from None


def _archived() -> ModuleType:
    """archive.selectors, imported on first use: the archive app builds on this module (Board, Entry, Standing)."""
    from archive import selectors

    return selectors


async def _board_period(
    game: GameConfig, period: str, period_id: str | None, now: dt.datetime | None
) -> tuple[periods.Period, Archived | None]:
    """The period to read, and its complete archive if it has one (read that instead of Redis).

    A past period without a complete archive is read from Redis while its board is kept (else 404).
    """
    resolved, is_current = resolve_period(game=game, period=period, period_id=period_id, now=now)
    if is_current:
        return resolved, None
    archive = await _archived().complete_period(game=game, period=resolved.kind, period_id=resolved.id)
    if archive is not None:
        return archive.period, archive
    if not await get_redis().exists(keys.board(game.slug, resolved.kind, resolved.id)):
        raise ServiceError(404, "period_not_found", f"No {resolved.kind} board {resolved.id} is kept for this game.")
    return resolved, None


def _entries(game: GameConfig, raw: Sequence) -> list[Entry]:
    return [
        Entry(
            rank=int(raw[i + 2]), player_id=raw[i], display_name=raw[i + 3], score=game.score_from_sort_key(raw[i + 1])
        )
        for i in range(0, len(raw), 4)
    ]


async def leaderboard_page(
    *,
    game: GameConfig,
    period: str,
    period_id: str | None = None,
    offset: int = 0,
    limit: int = 50,
    now: dt.datetime | None = None,
) -> Board:
    resolved, archive = await _board_period(game, period, period_id, now)
    if archive is not None:
        return await _archived().leaderboard_page(archive=archive, offset=offset, limit=limit)
    raw = await scripts.BOARD_WINDOW(
        get_redis(),
        [keys.board(game.slug, resolved.kind, resolved.id), keys.names(game.slug)],
        ["page", offset, limit],
    )
    return Board(period=resolved, total=int(raw[0]), offset=int(raw[1]), entries=_entries(game, raw[4:]))


async def players_around(
    *,
    game: GameConfig,
    period: str,
    player_id: str,
    radius: int = 5,
    period_id: str | None = None,
    now: dt.datetime | None = None,
) -> Board | None:
    """The player with up to ``radius`` neighbours each side; None if not on the board."""
    resolved, archive = await _board_period(game, period, period_id, now)
    if archive is not None:
        return await _archived().players_around(archive=archive, player_id=player_id, radius=radius)
    raw = await scripts.BOARD_WINDOW(
        get_redis(),
        [keys.board(game.slug, resolved.kind, resolved.id), keys.names(game.slug)],
        ["around", player_id, radius],
    )
    if not int(raw[2]):
        return None
    return Board(period=resolved, total=int(raw[0]), offset=int(raw[1]), entries=_entries(game, raw[4:]))


async def _rank_players(
    game: GameConfig, period: periods.Period, player_ids: Sequence[str]
) -> tuple[int, list[Standing]]:
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


async def player_standing(
    *, game: GameConfig, period: str, player_id: str, period_id: str | None = None, now: dt.datetime | None = None
) -> Standing | None:
    resolved, archive = await _board_period(game, period, period_id, now)
    if archive is not None:
        found = await _archived().standings_of(archive=archive, player_ids=[player_id])
    else:
        _, found = await _rank_players(game, resolved, [player_id])
    return found[0] if found else None


async def players_ranked(
    *,
    game: GameConfig,
    period: str,
    player_ids: Sequence[str],
    period_id: str | None = None,
    now: dt.datetime | None = None,
) -> tuple[Board, list[str]]:
    """The given players ranked within the whole board (friends view), and those not on it."""
    resolved, archive = await _board_period(game, period, period_id, now)
    unique = list(dict.fromkeys(player_ids))
    if archive is not None:
        resolved, total = archive.period, archive.total
        found = await _archived().standings_of(archive=archive, player_ids=unique)
    else:
        total, found = await _rank_players(game, resolved, unique)
    present = {s.player_id for s in found}
    entries = [Entry(rank=s.rank, player_id=s.player_id, display_name=s.display_name, score=s.score) for s in found]
    return Board(period=resolved, total=total, offset=0, entries=entries), [p for p in unique if p not in present]


async def player_overview(
    *, game: GameConfig, player_id: str, now: dt.datetime | None = None
) -> dict[str, Standing | None]:
    """The player's standing in each current period the game keeps."""
    now = now or timezone.now()
    overview: dict[str, Standing | None] = {}
    for kind in game.periods:
        period = periods.current(kind, game.timezone, now)
        _, found = await _rank_players(game, period, [player_id])
        overview[kind] = found[0] if found else None
    return overview


async def display_name(*, game: GameConfig, player_id: str) -> str | None:
    return await get_redis().hget(keys.names(game.slug), player_id)


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
            at=dt.datetime.fromtimestamp(r["at"] / 1000, tz=dt.UTC),
        )
        for r, name, is_hidden in zip(rows, names, hidden, strict=True)
        if not is_hidden
    ]


def current_periods(*, game: GameConfig, now: dt.datetime | None = None) -> list[periods.Period]:
    now = now or timezone.now()
    return [periods.current(kind, game.timezone, now) for kind in game.periods]


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
    board = Board(period=period, total=int(raw[0]), offset=0, entries=_entries(game, raw[4:]))
    return board, int(raw[3])


async def standings_of(*, game: GameConfig, period: periods.Period, player_ids: Sequence[str]) -> list[Standing]:
    """The given players' standings on one current board (those on it)."""
    return (await _rank_players(game, period, player_ids))[1]


async def followed_players(*, game: GameConfig, now: dt.datetime | None = None) -> list[str]:
    """Players some live page follows now; lapsed interest is dropped on the way (one script-free pipeline)."""
    now_ms = int((now or timezone.now()).timestamp() * 1000)
    pipe = get_redis().pipeline(transaction=True)
    pipe.zremrangebyscore(keys.followed(game.slug), "-inf", now_ms)
    pipe.zrange(keys.followed(game.slug), 0, -1)
    _, players = await pipe.execute()
    return players
