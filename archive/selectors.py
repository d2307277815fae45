"""Reads of named periods (current or past) and of archived ones: final standings,
the list of finished periods, a player's placements.

A named period is read from where it lives (``period_*``): the current one and a
past one whose archive is not complete yet from Redis (games/selectors.py), a
past one with a complete archive from the database, anything else is a 404.

Final standings answer with the shapes and semantics of the live reads in
games/selectors.py (Board, Entry, Standing): competition ranks as archived,
equal scores listed by player_id in byte order, windows that shift at either end
of the board like games/lua/board_window.lua. Only COMPLETE archives are read: a
snapshot of an open period or an archive still being written is not a final record.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from django.db import connection
from django.db.models import Count, F, Q, QuerySet
from django.db.models.functions import Collate

from core import clock, errors
from core.config import BoardConfig, GameConfig
from games import periods
from games import selectors as board_reads
from games.selectors import Board, Entry, Standing

from .models import ArchivedPeriod, ArchivedStanding

# The windows whose periods close and get archived (all-time, too, on a board with a season).
ARCHIVED_KINDS: tuple[str, ...] = (periods.DAILY, periods.WEEKLY, periods.MONTHLY, periods.CUSTOM, periods.ALL_TIME)


@dataclass(frozen=True)
class Archived:
    """One complete archived period (the header of its final standings)."""

    pk: int
    leaderboard: str  # the board's slug
    period: periods.Period
    total: int
    archived_at: dt.datetime | None


@dataclass(frozen=True)
class Placement:
    """Where a player finished in one archived period."""

    leaderboard: str  # the board's slug
    period: periods.Period
    rank: int
    total: int
    score: int
    display_name: str


def _archived(row: ArchivedPeriod, board_slug: str) -> Archived:
    return Archived(
        pk=row.pk,
        leaderboard=board_slug,
        period=periods.Period(row.period, row.period_id, row.starts_at, row.ends_at),
        total=row.total,
        archived_at=row.archived_at,
    )


# The querysets below drop the models' default ordering, which orders by the related
# game / archived period and so would join their tables into every read.


def _complete(board: BoardConfig) -> QuerySet[ArchivedPeriod]:
    return ArchivedPeriod.objects.filter(leaderboard_id=board.id, status=ArchivedPeriod.Status.COMPLETE).order_by()


def _newest_first(rows: QuerySet, prefix: str = "") -> QuerySet:
    # Periods ending at the same instant (a month ending on a Sunday) list the
    # shortest first: it started last.
    return rows.order_by(f"-{prefix}ends_at", f"-{prefix}starts_at", f"{prefix}period")


def _byte_order(field: str) -> Collate | F:
    """``field`` compared byte by byte, as Redis orders the members of equal scores.

    PostgreSQL's default collation may be a locale's (en_US sorts 'a' before 'B'
    and ignores punctuation); "C" is byte order. SQLite's default is already binary.
    """
    return Collate(F(field), "C") if connection.vendor == "postgresql" else F(field)


def _standings(archive: Archived) -> QuerySet[ArchivedStanding]:
    return ArchivedStanding.objects.filter(archived_period_id=archive.pk).order_by()


def standings_in_order(archive: Archived) -> QuerySet[ArchivedStanding]:
    """An archive's standings in board order, with ``ordered_id`` (the player id compared in
    byte order) to filter on as well."""
    return _standings(archive).alias(ordered_id=_byte_order("player_id")).order_by("rank", "ordered_id")


def entry_of(
    player_id: str, rank: int, display_name: str, score: int, metadata: dict | None = None, subscore: int | None = None
) -> Entry:
    # The live board shows the player_id for a player with no stored name.
    return Entry(
        rank=rank,
        player_id=player_id,
        display_name=display_name or player_id,
        score=score,
        metadata=metadata,
        subscore=subscore,
    )


async def complete_period(*, board: BoardConfig, period: str, period_id: str) -> Archived | None:
    """The complete archive of one period, or None if there is none (yet)."""
    row = await _complete(board).filter(period=period, period_id=period_id).order_by("pk").afirst()
    return _archived(row, board.slug) if row is not None else None


async def _window(archive: Archived, start: int, stop: int) -> list[Entry]:
    """The entries at positions ``start``..``stop`` (0-based, inclusive) in board order.

    Seeks by rank on the (archived_period, rank, player_id) index instead of an
    OFFSET over every row before the page: with competition ranks an entry at
    position p has rank <= p + 1, so the page starts inside the tie group of the
    best rank <= start + 1, and only that group's rows before ``start`` are skipped.
    """
    if start >= archive.total or stop < start:
        return []
    standings = _standings(archive)
    first_rank = await standings.filter(rank__lte=start + 1).order_by("-rank").values_list("rank", flat=True).afirst()
    if first_rank is None:
        return []
    skip = start - (first_rank - 1)
    rows = (
        standings.filter(rank__gte=first_rank, rank__lte=stop + 1)
        .order_by("rank", _byte_order("player_id").asc())
        .values_list("player_id", "rank", "display_name", "score", "metadata", "subscore")[
            skip : skip + stop - start + 1
        ]
    )
    return [entry_of(*row) async for row in rows]


async def archived_page(*, archive: Archived, offset: int = 0, limit: int = 50) -> Board:
    entries = await _window(archive, offset, offset + limit - 1)
    return Board(period=archive.period, total=archive.total, offset=offset, entries=entries)


async def _position(archive: Archived, player_id: str) -> int | None:
    """The player's 0-based position in board order, or None if not on the board."""
    rank = await _standings(archive).filter(player_id=player_id).order_by("pk").values_list("rank", flat=True).afirst()
    if rank is None:
        return None
    ahead = (
        _standings(archive)
        .alias(player_bytes=_byte_order("player_id"))
        .filter(Q(rank__lt=rank) | Q(rank=rank, player_bytes__lt=player_id))
    )
    return await ahead.acount()


async def archived_around(*, archive: Archived, player_id: str, radius: int = 5) -> Board | None:
    """The player with up to ``radius`` neighbours each side; None if not on the board.

    The window shifts at either end to stay 2*radius+1 long, as board_window.lua does.
    """
    position = await _position(archive, player_id)
    if position is None:
        return None
    last = archive.total - 1
    offset, stop = position - radius, position + radius
    if stop > last:
        offset -= stop - last
        stop = last
    if offset < 0:
        stop = min(last, stop - offset)
        offset = 0
    return Board(
        period=archive.period, total=archive.total, offset=offset, entries=await _window(archive, offset, stop)
    )


async def player_page_number(*, archive: Archived, player_id: str, page_size: int) -> int | None:
    """The 1-based page of ``page_size`` entries that holds the player, or None if not on the board."""
    position = await _position(archive, player_id)
    return None if position is None else position // page_size + 1


async def archived_standings(*, archive: Archived, player_ids: Sequence[str]) -> list[Standing]:
    """The given players' final standings (those on the board), best first.

    Percentile as live: the share of the board with a strictly worse score. Equal
    scores share a rank, so ``total - (rank - 1) - entries of that rank`` is exact with ties.
    """
    rows = [
        row
        async for row in _standings(archive)
        .filter(player_id__in=list(player_ids))
        .values_list("player_id", "rank", "display_name", "score", "metadata", "subscore")
    ]
    if not rows:
        return []
    ranks = {row[1] for row in rows}
    equal = {
        row["rank"]: row["n"]
        async for row in _standings(archive).filter(rank__in=ranks).values("rank").annotate(n=Count("pk")).order_by()
    }
    total = archive.total
    found = [
        Standing(
            player_id=player_id,
            display_name=name or player_id,
            rank=rank,
            score=score,
            total=total,
            percentile=round(100 * (total - (rank - 1) - equal[rank]) / total, 2),
            metadata=metadata,
            subscore=subscore,
        )
        for player_id, rank, name, score, metadata, subscore in rows
    ]
    found.sort(key=lambda s: (s.rank, s.player_id.encode()))
    return found


async def archived_periods(
    *, game: GameConfig, board: BoardConfig | None = None, period: str | None = None, offset: int = 0, limit: int = 50
) -> tuple[int, list[Archived]]:
    """Complete archived periods of one board (or of every board of the game), of one window
    if ``period``, newest first, and how many."""
    if board is not None:
        rows = _complete(board)
    else:
        rows = ArchivedPeriod.objects.filter(game_id=game.id, status=ArchivedPeriod.Status.COMPLETE).order_by()
    if period is not None:
        rows = rows.filter(period=period)
    total = await rows.acount()
    if offset >= total:
        return total, []
    slugs = {b.id: b.slug for b in game.boards}
    page = [
        _archived(row, slugs.get(row.leaderboard_id, "")) async for row in _newest_first(rows)[offset : offset + limit]
    ]
    return total, page


async def winners(*, archives: Sequence[Archived]) -> dict[int, Entry]:
    """The first entry of each archive's final standings, by archive pk (empty boards have none)."""
    rows = (
        ArchivedStanding.objects.filter(archived_period_id__in=[a.pk for a in archives], rank=1)
        .order_by("archived_period_id", _byte_order("player_id").asc())
        .values_list("archived_period_id", "player_id", "rank", "display_name", "score")
    )
    first: dict[int, Entry] = {}
    async for archive_pk, player_id, rank, display_name, score in rows:
        first.setdefault(archive_pk, entry_of(player_id, rank, display_name, score))
    return first


async def player_placements(
    *,
    game: GameConfig,
    player_id: str,
    board: BoardConfig | None = None,
    period: str | None = None,
    limit: int = 30,
) -> list[Placement]:
    """The player's final placements in complete archived periods of one board (or of every
    board of the game), of one window if ``period``, newest first."""
    rows = ArchivedStanding.objects.filter(
        player_id=player_id,
        archived_period__game_id=game.id,
        archived_period__status=ArchivedPeriod.Status.COMPLETE,
    )
    if board is not None:
        rows = rows.filter(archived_period__leaderboard_id=board.id)
    if period is not None:
        rows = rows.filter(archived_period__period=period)
    rows = _newest_first(rows, "archived_period__").select_related("archived_period")[:limit]
    slugs = {b.id: b.slug for b in game.boards}
    return [
        Placement(
            leaderboard=slugs.get(row.archived_period.leaderboard_id, ""),
            period=_archived(row.archived_period, "").period,
            rank=row.rank,
            total=row.archived_period.total,
            score=row.score,
            display_name=row.display_name or player_id,
        )
        async for row in rows
    ]


async def has_placements(*, game: GameConfig, player_id: str) -> bool:
    """Whether the player finished in any complete archived period of the game."""
    return (
        await ArchivedStanding.objects.filter(
            player_id=player_id,
            archived_period__game_id=game.id,
            archived_period__status=ArchivedPeriod.Status.COMPLETE,
        )
        .order_by()
        .aexists()
    )


# --------------------------------------------------------------------------- named periods


async def named_period(
    board: BoardConfig, period: str, period_id: str | None
) -> tuple[periods.Period, Archived | None]:
    """The period to read (the current one if ``period_id`` is None), and its complete archive
    if it has one (read that instead of Redis).

    The current period of an active board is read from Redis. A past period, the last one of
    a deactivated board, or a season that is over, is read from its complete archive, else
    from Redis while its board is kept (else 404).
    """
    resolved, is_current = board_reads.resolve_period(board=board, period=period, period_id=period_id)
    ended = resolved.ends_at is not None and clock.now() >= resolved.ends_at  # a season that is over
    if is_current and board.active and not ended:
        return resolved, None
    archive = await complete_period(board=board, period=resolved.kind, period_id=resolved.id)
    if archive is not None:
        return archive.period, archive
    if not is_current and not await board_reads.board_kept(board=board, period=resolved):
        raise errors.period_not_found(f"No {resolved.kind} period {resolved.id} is kept for this leaderboard.")
    return resolved, None


async def period_page(
    *, board: BoardConfig, period: str, period_id: str | None = None, offset: int = 0, limit: int = 50
) -> Board:
    resolved, archive = await named_period(board, period, period_id)
    if archive is not None:
        return await archived_page(archive=archive, offset=offset, limit=limit)
    return await board_reads.board_page(board=board, period=resolved, offset=offset, limit=limit)


async def period_around(
    *, board: BoardConfig, period: str, period_id: str | None = None, player_id: str, radius: int = 5
) -> Board | None:
    resolved, archive = await named_period(board, period, period_id)
    if archive is not None:
        return await archived_around(archive=archive, player_id=player_id, radius=radius)
    return await board_reads.board_around(board=board, period=resolved, player_id=player_id, radius=radius)


async def period_standing(
    *, board: BoardConfig, period: str, period_id: str | None = None, player_id: str
) -> Standing | None:
    resolved, archive = await named_period(board, period, period_id)
    if archive is not None:
        found = await archived_standings(archive=archive, player_ids=[player_id])
    else:
        _, found = await board_reads.board_standings(board=board, period=resolved, player_ids=[player_id])
    return found[0] if found else None


async def period_ranked(
    *, board: BoardConfig, period: str, period_id: str | None = None, player_ids: Sequence[str]
) -> tuple[Board, list[str]]:
    """The given players ranked within a named period's whole board, and those not on it."""
    resolved, archive = await named_period(board, period, period_id)
    unique = list(dict.fromkeys(player_ids))
    if archive is not None:
        found = await archived_standings(archive=archive, player_ids=unique)
        return board_reads.ranked_board(archive.period, archive.total, found, unique)
    total, found = await board_reads.board_standings(board=board, period=resolved, player_ids=unique)
    return board_reads.ranked_board(resolved, total, found, unique)
