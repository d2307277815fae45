"""Leagues (issue 22): what a settlement does to players' tiers when a league board's period
ends (docs/competitions.md, Leagues). ``tiers_apply`` writes, inside the settlement's own
transaction, the ``LeagueStanding`` (their tier now) of each player who moved up or down, and a
``tier.changed`` event for each. A player's history is their settled entries (each period's
tier, move and tier after: competitions/selectors/league.py), so a player who stays writes
nothing here: a settlement of 100,000 entrants writes the standings of its movers only.

Joins and first scores place a player in a cohort of their tier by Redis alone, from the
board's copy of the tiers (``keys.league_tiers``): ``tiers_apply`` copies the tiers it wrote
there once its transaction commits, and ``league_tiers_copy`` copies a whole board's again (a
copy an outage missed, a Redis that lost its data).

Sync, like the settlement that calls it. The time is the caller's ``now`` (core.clock).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from django.db import transaction

from core import bulk, clock, errors, keys, outbox
from core.competition_rules import RANK_MAX, Competition
from core.models import Leaderboard, erased_player_id, is_player_id
from core.redis import get_redis, run_sync

from ..models import COHORT_MAX_CHARS, LeagueStanding, SettledEntry
from .records import chunks, in_callers_transaction, period_id_check

logger = logging.getLogger("competitions.league")

# Standings per upsert (on PostgreSQL a COPY into a staging table): a league period of 100,000
# players moves tens of thousands, and only one chunk's rows are held at a time.
TIER_WRITE_BATCH = 5000
_STANDING_COLUMNS = bulk.columns_of(LeagueStanding, ["board", "player_id", "tier", "since_period_id", "updated_at"])
_STANDING_KEY = bulk.columns_of(LeagueStanding, ["board", "player_id"])
_STANDING_UPDATED = bulk.columns_of(LeagueStanding, ["tier", "since_period_id", "updated_at"])
# A standing whose tier stays keeps the period it has been in it since.
_STANDING_SINCE = {
    "since_period_id": "CASE WHEN {table}.tier = EXCLUDED.tier THEN {table}.since_period_id "
    "ELSE EXCLUDED.since_period_id END"
}
# Tiers per HSET of the Redis copy, all of a call's in one pipeline: no command holds Redis
# for more than a moment, however big the league.
TIERS_COPY_BATCH = 1000


@dataclass(frozen=True, slots=True)  # a settlement passes one per entrant
class TierMoveSpec:
    """One player's tier after a period, as the settlement computed it (competition_rules.
    tier_moves): ``from_tier`` the tier they played it in, ``to_tier`` the one they go to, ``move``
    +1 (up), -1 (down) or 0; their ``rank`` in their ``cohort`` (None: no score)."""

    player_id: str
    from_tier: str
    to_tier: str
    move: int
    cohort: str = ""
    rank: int | None = None


def league_of(board: Leaderboard) -> Competition:
    """The board's competition, when it has tiers (409 not_a_league otherwise)."""
    competition = board.competition()
    if competition is None or not competition.tiers:
        raise errors.not_a_league(board=board.slug)
    return competition


def _move_check(competition: Competition, spec: TierMoveSpec) -> None:
    where = f"tier move of {spec.player_id[:80]!r}"
    if not is_player_id(spec.player_id):
        raise ValueError(f"{where}: not a player id")
    slugs = [tier.slug for tier in competition.tiers]
    if spec.from_tier not in slugs or spec.to_tier not in slugs:
        raise ValueError(f"{where}: {spec.from_tier!r} -> {spec.to_tier!r}, but the tiers are {', '.join(slugs)}")
    if spec.move not in (-1, 0, 1) or slugs.index(spec.to_tier) - slugs.index(spec.from_tier) != spec.move:
        raise ValueError(f"{where}: move {spec.move!r} is not {spec.from_tier!r} -> {spec.to_tier!r}")
    if spec.rank is not None and (type(spec.rank) is not int or not 1 <= spec.rank <= RANK_MAX):
        raise ValueError(f"{where}: rank {spec.rank!r} is no rank from 1 to {RANK_MAX:,}")
    if len(spec.cohort) > COHORT_MAX_CHARS:
        raise ValueError(f"{where}: a cohort is at most {COHORT_MAX_CHARS} characters")


def _moves_check(competition: Competition, moves: Sequence[TierMoveSpec]) -> None:
    seen: set[str] = set()
    for spec in moves:
        _move_check(competition, spec)
        if spec.player_id in seen:
            raise ValueError(f"{spec.player_id!r} moves twice in one period")
        seen.add(spec.player_id)


def tiers_apply(*, board: Leaderboard, period_id: str, moves: Sequence[TierMoveSpec], now: dt.datetime) -> int:
    """Apply one period's tier moves of a league board; returns how many players moved.

    Call it inside the settlement's ``transaction.atomic()``, once per period (the settlement's
    own row makes that so: competitions/services/settlement.py): it commits nothing itself, and
    a second call for a period would emit its events again. A spec that stays (``move`` 0) is
    checked and changes nothing: the settled entry is its record. Apply a board's periods in
    their order: each sets the players' tiers. A move that does not fit the board's tiers is a
    bug of the caller: ValueError, and nothing is written. 409 not_a_league for a board
    without tiers.
    """
    in_callers_transaction("tiers_apply")
    competition = league_of(board)
    period_id_check(period_id)
    _moves_check(competition, moves)
    moved = [spec for spec in moves if spec.move]
    if not moved:
        return 0
    _standings_write(board, period_id, moved, now)
    game_slug = board.game.slug
    outbox.events_emit([_changed(game_slug, board.slug, period_id, spec, now) for spec in moved])
    ref = keys.board_ref(game_slug, board.slug)
    tiers = {spec.player_id: spec.to_tier for spec in moved}
    # After the commit only: a settlement that rolls back must leave Redis's copy as it was.
    transaction.on_commit(lambda: _copy_or_log(ref, tiers))
    return len(moved)


def _standings_write(board: Leaderboard, period_id: str, moves: Sequence[TierMoveSpec], now: dt.datetime) -> None:
    """Each mover's tier now; ``since_period_id`` moves only when their tier does. One upsert of
    plain rows a chunk at a time, which keeps a standing's ``since`` in the database itself (on
    PostgreSQL a COPY into a staging table and one INSERT ... ON CONFLICT): reading the players'
    standings first cost four times the write."""
    for chunk in chunks(moves, TIER_WRITE_BATCH):
        rows = [(board.pk, spec.player_id, spec.to_tier, period_id, now) for spec in chunk]
        bulk.insert_rows(
            model=LeagueStanding,
            columns=_STANDING_COLUMNS,
            rows=rows,
            conflict=_STANDING_KEY,
            update=_STANDING_UPDATED,
            update_sql=_STANDING_SINCE,
        )


async def _tiers_write(ref: str, tiers: Mapping[str, str]) -> None:
    pipe = get_redis().pipeline(transaction=False)
    items = list(tiers.items())
    for chunk in chunks(items, TIERS_COPY_BATCH):
        pipe.hset(keys.league_tiers(ref), mapping=dict(chunk))
    await pipe.execute()


def _copy_or_log(ref: str, tiers: Mapping[str, str]) -> None:
    try:
        run_sync(_tiers_write, ref, tiers)
    except errors.REDIS_FAILURES as error:
        # The database has them; until league_tiers_copy runs, a join places these players by
        # the tier Redis last had for them (or the start tier).
        errors.report_unavailable(error, during=f"the copy of {len(tiers):,} league tiers of {ref}")
        logger.error("%s: %d league tiers not copied to Redis; run league_tiers_copy for the board", ref, len(tiers))


def league_tiers_copy(*, board: Leaderboard) -> int:
    """Copy every player's tier on ``board`` from the database to Redis, where joins read them
    (a copy an outage missed, or a Redis that lost its data); returns how many."""
    tiers = dict(LeagueStanding.objects.filter(board=board).values_list("player_id", "tier"))
    if tiers:
        run_sync(_tiers_write, keys.board_ref(board.game.slug, board.slug), tiers)
    return len(tiers)


def _changed(game: str, board: str, period_id: str, spec: TierMoveSpec, now: dt.datetime) -> outbox.TierChanged:
    return outbox.TierChanged(
        game=game,
        leaderboard=board,
        period_id=period_id,
        player_id=spec.player_id,
        from_tier=spec.from_tier,
        to_tier=spec.to_tier,
        move=1 if spec.move > 0 else -1,
        cohort=spec.cohort,
        rank=spec.rank,
        changed_at=clock.iso(now),
    )


def player_league_forget(*, game_id: int, player_id: str) -> int:
    """An erased player's league tiers go, and their settled entries, on every board of the
    game, keep their place under a stand-in id (the cohort's ranks stay whole, as archived
    standings do): moderation's erasure, in its transaction. Returns how many rows changed."""
    standings, _ = LeagueStanding.objects.filter(board__game_id=game_id, player_id=player_id).delete()
    entries = SettledEntry.objects.filter(settlement__board__game_id=game_id, player_id=player_id)
    anonymised = 0
    # One row at a time: each gets its own stand-in (a player has one entry per period).
    for entry in entries.only("pk"):
        entry.player_id = erased_player_id()
        entry.save(update_fields=["player_id"])
        anonymised += 1
    return standings + anonymised
