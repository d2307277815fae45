"""Reads of a competing period's cohorts (issue 22): the list with sizes, one cohort's standings,
a player's place in their cohort, the window around them and friends, all ranked within the
cohort. Served from Redis while it keeps the period's board.

A cohort is read whole (1,000 entrants at most, COHORT_SIZE_MAX) by cohort_read.lua and ranked
here, in the web worker, in the board's own order: ascending sort base, then the member's bytes
(core/lua/prelude/entries.lua), with competition ranks ("1224") under ties 'shared'. So a
cohort's order is always the board's order restricted to its entrants, whatever moved on the
board (a correction, a hide, an erasure): nothing is kept twice.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from core import board_rules, clock, competition_rules, errors, keys
from core.competition_rules import COHORT_STRIDE, Competition
from core.config import BoardConfig
from core.redis import get_redis
from games import periods
from games import selectors as board_reads
from games.scripts.board import WindowRead

from .. import scripts

# The sizes ZSET's score: tier place x this + entrants (core/lua/prelude/cohorts.lua).
_SIZE_SPAN = 2048


@dataclass(frozen=True)
class CohortSummary:
    cohort: str
    tier: str | None
    size: int  # entrants placed in it


@dataclass(frozen=True)
class Cohorts:
    period: periods.Period
    cohort_size: int  # the most a cohort takes
    entrants: int  # in the period
    held: int  # entrants waiting for a balanced split
    formed_at: dt.datetime | None  # when a balanced split is due (None: placed as they enter)
    total: int  # cohorts
    offset: int
    cohorts: list[CohortSummary]


@dataclass(frozen=True)
class CohortBoard:
    cohort: str
    tier: str | None
    size: int  # entrants in it, with a score or not
    board: board_reads.Board  # ranks within the cohort; total: its entrants with a score


@dataclass(frozen=True)
class CohortStanding:
    cohort: str
    tier: str | None
    rank: int | None  # within the cohort; None without a score
    size: int


def cohort_rules(board: BoardConfig, period: str) -> Competition:
    """The board's competition, when ``period`` is its competing window and it has cohorts."""
    competition = board.competition
    if competition is None or competition.cohort_size is None:
        raise errors.no_cohorts(board=board.slug, message="This leaderboard has no cohorts.")
    if period != competition.window:
        raise errors.no_cohorts(
            board=board.slug, message=f"Cohorts race in this leaderboard's {competition.window} window."
        )
    return competition


async def cohort_period(board: BoardConfig, period: str, period_id: str | None) -> periods.Period:
    """The period asked for: the current one, or a past one while Redis keeps its board."""
    resolved, is_current = board_reads.resolve_period(board=board, period=period, period_id=period_id)
    if not is_current and not await board_reads.board_kept(board=board, period=resolved):
        raise errors.period_not_found(f"No {resolved.kind} period {resolved.id} is kept for this leaderboard.")
    return resolved


def _ranked(board: BoardConfig, entries: Sequence[scripts.CohortEntry]) -> list[tuple[int, scripts.CohortEntry]]:
    """The cohort's entries in the board's order, each with its competition rank."""
    rows = sorted(entries, key=lambda e: (e.base, e.member))
    shared = board.ties == board_rules.SHARED
    ranks = competition_rules.ranks_in([(e.player_id, e.base, e.member) for e in rows], shared=shared)
    return [(ranks[e.player_id], e) for e in rows]


async def _entries(
    board: BoardConfig, rows: Sequence[tuple[int, scripts.CohortEntry]], total: int, offset: int
) -> list[board_reads.Entry]:
    subs = [board_rules.member_parts(board.ties, e.member).sub for _, e in rows] if board.has_subscore else None
    read = WindowRead(
        total=total,
        offset=offset,
        found=True,
        version=0,
        player_ids=[e.player_id for _, e in rows],
        bases=[e.base for _, e in rows],
        ranks=[rank for rank, _ in rows],
        metadata=[e.metadata for _, e in rows],
        subs=subs,
    )
    return await board_reads.entries_of(board, read)


def _name(index: int, competition: Competition) -> tuple[str, str | None]:
    return (
        competition_rules.cohort_name(index, competition.tiers),
        competition_rules.cohort_tier(index, competition.tiers),
    )


async def _read(
    board: BoardConfig, period: periods.Period, version: Literal["next", "current"] | None = None, **at: int | str
) -> scripts.CohortRead:
    return await scripts.cohort_read(
        get_redis(),
        board_key=board_reads.board_key(board, period),
        ties=board.ties,
        version=version,
        **at,  # type: ignore[arg-type]
    )


async def cohort_page(
    *, board: BoardConfig, period: str, period_id: str | None = None, cohort: str, offset: int = 0, limit: int = 50
) -> CohortBoard:
    """A page of one cohort's standings (404 when the period has no such cohort)."""
    competition = cohort_rules(board, period)
    resolved = await cohort_period(board, period, period_id)
    index = competition_rules.cohort_index(cohort, competition.tiers)
    read = await _read(board, resolved, index=index) if index is not None else None
    if read is None or read.entrants == 0:
        raise errors.cohort_not_found(cohort=cohort, period_id=resolved.id)
    ranked = _ranked(board, read.entries)
    rows = ranked[offset : offset + limit]
    name, tier = _name(read.index or 0, competition)
    page = board_reads.Board(
        period=resolved, total=len(ranked), offset=offset, entries=await _entries(board, rows, len(ranked), offset)
    )
    return CohortBoard(cohort=name, tier=tier, size=read.entrants, board=page)


def _window(position: int, count: int, radius: int) -> tuple[int, int]:
    """[start, stop) of the window around ``position``, shifted at either end to stay 2r+1 long."""
    start, stop = position - radius, position + radius + 1
    if stop > count:
        start, stop = start - (stop - count), count
    if start < 0:
        start, stop = 0, min(count, stop - start)
    return start, stop


async def cohort_around(
    *, board: BoardConfig, period: str, period_id: str | None = None, player_id: str, radius: int = 5
) -> CohortBoard | None:
    """The player and up to ``radius`` neighbours each side within their cohort (None: they
    have no score, or no cohort yet)."""
    competition = cohort_rules(board, period)
    resolved = await cohort_period(board, period, period_id)
    read = await _read(board, resolved, player_id=player_id)
    ranked = _ranked(board, read.entries)
    position = next((i for i, (_, e) in enumerate(ranked) if e.player_id == player_id), None)
    if read.index is None or position is None:
        return None
    start, stop = _window(position, len(ranked), radius)
    name, tier = _name(read.index, competition)
    entries = await _entries(board, ranked[start:stop], len(ranked), start)
    page = board_reads.Board(period=resolved, total=len(ranked), offset=start, entries=entries)
    return CohortBoard(cohort=name, tier=tier, size=read.entrants, board=page)


@dataclass(frozen=True)
class RankedCohort:
    """A player's cohort read whole: every entrant with a score and their rank in it, best
    first; ``size`` counts those without a score too."""

    index: int
    cohort: str
    tier: str | None
    size: int
    ranked: list[tuple[int, scripts.CohortEntry]]


async def player_cohort(*, board: BoardConfig, period: periods.Period, player_id: str) -> RankedCohort | None:
    """The player's cohort in a competing period Redis keeps, ranked (None: the board has no
    cohorts there, or the player none yet)."""
    if not has_cohorts(board, period.kind):
        return None
    read = await _read(board, period, player_id=player_id)
    if read.index is None:
        return None
    name, tier = cohort_label(board, read.index)
    return RankedCohort(read.index, name, tier, read.entrants, _ranked(board, read.entries))


def standing_in(found: RankedCohort, player_id: str) -> CohortStanding:
    """The player's place in their cohort read whole (``player_cohort``)."""
    rank = next((r for r, e in found.ranked if e.player_id == player_id), None)
    return CohortStanding(cohort=found.cohort, tier=found.tier, rank=rank, size=found.size)


async def cohort_standing(*, board: BoardConfig, period: periods.Period, player_id: str) -> CohortStanding | None:
    """The player's cohort in a competing period Redis keeps, and their rank in it (None: the
    board has no cohorts there, or the player none)."""
    found = await player_cohort(board=board, period=period, player_id=player_id)
    return None if found is None else standing_in(found, player_id)


# --------------------------------------------------------------------------- live views


@dataclass(frozen=True)
class CohortSnapshot:
    """One cohort read whole for a live view (live/): its top rows, and every ranked entrant's
    rank so that followed players' places come from the same read."""

    index: int
    cohort: str
    tier: str | None
    size: int  # entrants in it, with a score or not
    version: int  # the board's live version, when the read asked for one (else 0)
    board: board_reads.Board  # the top ``limit``, ranked within the cohort; total: entrants with a score
    ranks: dict[str, int]  # player_id -> rank in the cohort, for every entrant with a score


def has_cohorts(board: BoardConfig, window: str) -> bool:
    """Whether ``window`` is the board's competing window and it races in cohorts."""
    competition = board.competition
    return competition is not None and competition.cohort_size is not None and window == competition.window


def cohort_index(board: BoardConfig, cohort: str) -> int | None:
    """The index of a cohort id on a board with cohorts (None: it names none, "x" or "gold-0")."""
    competition = board.competition
    return None if competition is None else competition_rules.cohort_index(cohort, competition.tiers)


def cohort_label(board: BoardConfig, index: int) -> tuple[str, str | None]:
    """A cohort's id and tier (on a board with cohorts)."""
    competition = board.competition
    assert competition is not None
    return _name(index, competition)


async def cohorts_of(*, board: BoardConfig, period: periods.Period, player_ids: Sequence[str]) -> dict[str, int]:
    """Each player's cohort index in the period (those in none left out), in one command."""
    if not player_ids:
        return {}
    key = keys.entry_cohorts(board_reads.board_key(board, period))
    found = await get_redis().zmscore(key, list(player_ids))
    return {p: int(index) for p, index in zip(player_ids, found, strict=True) if index is not None}


async def cohort_entrants(*, board: BoardConfig, period: periods.Period, index: int) -> int:
    """How many entrants a cohort of the period holds (0: there is no such cohort), in one command."""
    score = await get_redis().zscore(keys.entry_cohort_sizes(board_reads.board_key(board, period)), f"{index:012d}")
    return int(score or 0) % _SIZE_SPAN


async def cohort_snapshot(
    *,
    board: BoardConfig,
    period: periods.Period,
    index: int,
    limit: int,
    version: Literal["next", "current"] | None = None,
) -> CohortSnapshot | None:
    """One cohort of a competing period read whole, ranked in the board's order (None: the period
    has no such cohort); with ``version``, the board's live version taken in the same call."""
    competition = board.competition
    assert competition is not None
    read = await _read(board, period, version, index=index)
    if read.entrants == 0:
        return None
    ranked = _ranked(board, read.entries)
    name, tier = _name(index, competition)
    top = ranked[:limit]
    page = board_reads.Board(
        period=period, total=len(ranked), offset=0, entries=await _entries(board, top, len(ranked), 0)
    )
    ranks = {entry.player_id: rank for rank, entry in ranked}
    return CohortSnapshot(index, name, tier, read.entrants, read.version, page, ranks)


@dataclass(frozen=True)
class CohortFriends:
    board: board_reads.Board  # each found player's entry, ranked within their own cohort
    cohorts: dict[str, str]  # player_id -> their cohort
    missing: list[str]  # asked for, but with no score or no cohort


async def cohort_friends(
    *, board: BoardConfig, period: str, period_id: str | None = None, player_ids: Sequence[str]
) -> CohortFriends:
    """The given players, each ranked within their own cohort (best rank first)."""
    competition = cohort_rules(board, period)
    resolved = await cohort_period(board, period, period_id)
    unique = list(dict.fromkeys(player_ids))
    found: list[tuple[int, scripts.CohortEntry]] = []
    cohorts: dict[str, str] = {}
    reads: dict[int, scripts.CohortRead] = {}
    for player_id in unique:
        if player_id in cohorts:
            continue
        read = await _read(board, resolved, player_id=player_id)
        if read.index is None or read.index in reads:
            continue
        reads[read.index] = read
        wanted = set(unique)
        for rank, entry in _ranked(board, read.entries):
            if entry.player_id in wanted:
                found.append((rank, entry))
                cohorts[entry.player_id] = _name(read.index, competition)[0]
    found.sort(key=lambda row: (row[0], row[1].player_id))
    entries = await _entries(board, found, len(found), 0)
    page = board_reads.Board(period=resolved, total=len(found), offset=0, entries=entries)
    return CohortFriends(board=page, cohorts=cohorts, missing=[p for p in unique if p not in cohorts])


async def cohorts_list(
    *, board: BoardConfig, period: str, period_id: str | None = None, offset: int = 0, limit: int = 50
) -> Cohorts:
    """The period's cohorts in order (by tier, bottom first, then number), with their sizes."""
    competition = cohort_rules(board, period)
    resolved = await cohort_period(board, period, period_id)
    board_key = board_reads.board_key(board, resolved)
    client = get_redis()
    pipe = client.pipeline(transaction=False)
    pipe.hgetall(keys.entry_cohort_state(board_key))
    pipe.zcard(keys.entry_entrants(board_key))
    pipe.zcard(keys.entry_cohorts(board_key))
    state, entrants, placed = await pipe.execute()
    made = sorted((int(k[2:]), int(v)) for k, v in state.items() if k.startswith("n:"))
    indexes = [place * COHORT_STRIDE + n for place, count in made for n in range(1, count + 1)]
    shown = indexes[offset : offset + limit]
    sizes = await client.zmscore(keys.entry_cohort_sizes(board_key), [f"{i:012d}" for i in shown]) if shown else []
    summaries = [
        CohortSummary(*_name(index, competition), size=int(score or 0) % _SIZE_SPAN)
        for index, score in zip(shown, sizes, strict=True)
    ]
    return Cohorts(
        period=resolved,
        cohort_size=competition.cohort_size or 0,
        entrants=int(entrants),
        held=int(entrants) - int(placed),
        formed_at=periods.cohorts_formed_at(resolved, competition),
        total=len(indexes),
        offset=offset,
        cohorts=summaries,
    )


def formed(cohorts: Cohorts) -> bool:
    """Whether the period's entrants are all placed (a balanced split may still be to come)."""
    return cohorts.held == 0 and (cohorts.formed_at is None or clock.now() >= cohorts.formed_at)
