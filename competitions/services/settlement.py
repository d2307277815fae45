"""Settlement of a competing period (issue 22): when the period's close job archives it, the
same database transaction that marks the archive complete freezes every entrant's outcome in
their cohort (rank, tier move, reward), applies the league's moves, creates the grants and
writes their domain events (period.settled, tier.changed, reward.granted) to the outbox. So a
period settles exactly once: a close job killed before the commit leaves nothing, and its retry
settles it whole; one killed after leaves it settled, and the retry finds the archive complete.

The outcome is computed from what Redis holds of the period when the job runs (after the
review buffer, ``settle_delay_secs``): its entrants, cohorts, attempts and board, ranked in the
board's own order (core/competition_rules.ranks_in) and judged by the pure rules
(core/competition_rules.cohort_outcomes). The same computation, without writes, is the
preview of the current period.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import cast

from core import board_rules, bulk, clock, competition_rules, keys, outbox
from core.competition_rules import Outcome, Placed
from core.config import BoardConfig
from core.models import Leaderboard
from core.redis import get_redis, run_sync, scored_pairs, zrange_all_scored
from games import periods

from ..models import SettledEntry, Settlement
from . import cohorts as cohort_services
from . import league, rewards

# Rows per INSERT of a settlement's entries on SQLite (PostgreSQL streams them into one COPY):
# only one chunk's rows are held at a time.
SETTLED_ENTRY_BATCH = 5_000


@dataclass(frozen=True, slots=True)  # one per entrant: slots keep 100,000 of them small
class Settled:
    """One entrant's outcome, with where they finished."""

    outcome: Outcome
    cohort: str  # its id, "" on a board without cohorts
    score: int | None  # None: no score in the period


@dataclass(frozen=True)
class Plan:
    """What settling the period gives, entrant by entrant (cohort by cohort, best first)."""

    period: periods.Period
    entrants: int
    cohorts: int
    settled: list[Settled]

    @property
    def promoted(self) -> int:
        return sum(1 for s in self.settled if s.outcome.move > 0)

    @property
    def demoted(self) -> int:
        return sum(1 for s in self.settled if s.outcome.move < 0)

    @property
    def granted(self) -> int:
        return sum(1 for s in self.settled if s.outcome.reward is not None)


@dataclass(frozen=True)
class Field:
    """What Redis holds of a period when it settles, read in one round trip: its entrants, each
    cohort's members, the attempts each used, and each scorer's sort base and board member."""

    period: periods.Period
    entrants: int
    cohorts: dict[int, list[str]]  # by cohort index; one race of everyone (index 0) without cohorts
    tries: dict[str, str]
    bases: dict[str, tuple[int, str]]


async def _read(board_key: str) -> tuple[list[str], dict[int, list[str]], dict[str, str], list[tuple[str, float]]]:
    """The period's entrants (in entry order), cohorts, attempts used and board, in one round trip."""
    pipe = get_redis().pipeline(transaction=False)
    pipe.zrange(keys.entry_entrants(board_key), 0, -1)
    zrange_all_scored(pipe, keys.entry_cohorts(board_key))
    pipe.hgetall(keys.entry_tries(board_key))
    zrange_all_scored(pipe, board_key)
    entrants, placed, tries, board = await pipe.execute()
    cohorts: dict[int, list[str]] = {}
    for player_id, index in scored_pairs(placed):
        cohorts.setdefault(int(index), []).append(player_id)
    return cast("list[str]", entrants), cohorts, cast("dict[str, str]", tries), scored_pairs(board)


async def _with_held(board: BoardConfig, period: periods.Period, cohorts: dict[int, list[str]]) -> dict[int, list[str]]:
    """The cohorts with a balanced period's held entrants placed as its split would place them."""
    held = await cohort_services.held_entrants(board=board, period=period)
    if not held:
        return cohorts
    competition = board.competition
    assert competition is not None
    placed: dict[int, list[str]] = {index: list(members) for index, members in cohorts.items()}
    for player_id, index in competition_rules.balanced_split(held, competition).items():
        placed.setdefault(index, []).append(player_id)
    return placed


async def field_read(*, board: BoardConfig, period: periods.Period, preview: bool = False) -> Field:
    """The period's field as its settlement reads it. A balanced period whose split has not run
    is split first, so that every entrant races in a cohort; a preview (which writes nothing)
    places its held entrants in memory only, as the split would."""
    competition = board.competition
    assert competition is not None and period.kind == competition.window
    if not preview:
        await cohort_services.cohorts_split(board=board, period=period)
    entrants, cohorts, tries, rows = await _read(keys.board(board.ref, period.kind, period.id))
    if competition.cohort_size is None:
        cohorts = {0: entrants}  # one race: the whole field
    elif preview:
        cohorts = await _with_held(board, period, cohorts)
    bases: dict[str, tuple[int, str]] = {}
    for member, base in rows:
        bases[board_rules.member_parts(board.ties, member).player_id] = (int(base), member)
    return Field(period=period, entrants=len(entrants), cohorts=cohorts, tries=tries, bases=bases)


def field_settled(board: BoardConfig, field: Field) -> Iterator[Settled]:
    """Each entrant's outcome, cohort by cohort and best first, computed as it is asked for: the
    settlement writes each cohort's entries while it ranks the next (core/competition_rules:
    ranks in the board's own order, then the rules' outcomes)."""
    competition = board.competition
    assert competition is not None
    shared = board.ties == board_rules.SHARED
    bases, tries = field.bases, field.tries
    for index in sorted(field.cohorts):
        members = field.cohorts[index]
        scored = [(p, *bases[p]) for p in members if p in bases]
        ranks = competition_rules.ranks_in(scored, shared=shared)
        placed = [Placed(p, ranks.get(p), int(tries.get(p, 0))) for p in members]
        placed.sort(key=lambda p: (p.rank is None, p.rank or 0, p.player_id))
        tier = competition_rules.cohort_tier(index, competition.tiers) if competition.tiers else None
        name = competition_rules.cohort_name(index, competition.tiers) if competition.cohort_size else ""
        for outcome in competition_rules.cohort_outcomes(competition, tier=tier, cohort=placed):
            entry = bases.get(outcome.player_id)
            score = None if entry is None else board.score_from_base(entry[0])
            yield Settled(outcome=outcome, cohort=name, score=score)


async def settlement_plan(*, board: BoardConfig, period: periods.Period, preview: bool = False) -> Plan:
    """What the period's settlement gives, or (``preview``) would give if it ended now, writing
    nothing (``field_read``)."""
    field = await field_read(board=board, period=period, preview=preview)
    return Plan(
        period=period, entrants=field.entrants, cohorts=len(field.cohorts), settled=list(field_settled(board, field))
    )


_ENTRY_COLUMNS = bulk.columns_of(
    SettledEntry, ["settlement", "player_id", "cohort", "rank", "score", "tier", "move", "tier_after", "reward"]
)


def _entries(settlement: Settlement, settled: Iterator[Settled], kept: list[Settled]) -> None:
    """The entries as plain rows, streamed as ``settled`` computes them into one COPY on
    PostgreSQL (the settlement is new, so none of its entries can be there yet), so that the
    database stores each cohort while the next is ranked; a prepared INSERT a chunk at a time
    on SQLite. Each outcome is also kept in ``kept``, for the moves and grants."""

    def rows() -> Iterator[bulk.Row]:
        for s in settled:
            kept.append(s)
            yield (
                settlement.pk,
                s.outcome.player_id,
                s.cohort,
                s.outcome.rank,
                s.score,
                s.outcome.tier or "",
                s.outcome.move,
                s.outcome.tier_after or "",
                None if s.outcome.reward is None else json.dumps(s.outcome.reward),
            )

    bulk.copy_rows(model=SettledEntry, columns=_ENTRY_COLUMNS, rows=rows(), batch=SETTLED_ENTRY_BATCH)


def _grants(plan: Plan) -> list[rewards.GrantSpec]:
    return [
        rewards.GrantSpec(
            player_id=s.outcome.player_id,
            rank=s.outcome.rank,
            reward=s.outcome.reward,
            cohort=s.cohort,
            tier=s.outcome.tier or "",
        )
        for s in plan.settled
        if s.outcome.reward is not None and s.outcome.rank is not None
    ]


def _moves(plan: Plan) -> list[league.TierMoveSpec]:
    """The league's movers, up and down."""
    return [
        league.TierMoveSpec(
            player_id=s.outcome.player_id,
            from_tier=s.outcome.tier or "",
            to_tier=s.outcome.tier_after or "",
            move=s.outcome.move,
            cohort=s.cohort,
            rank=s.outcome.rank,
        )
        for s in plan.settled
        if s.outcome.move  # a player who stays changes no league record: their entry says it
    ]


def period_settle(
    *, board: Leaderboard, config: BoardConfig, period: periods.Period, now: dt.datetime
) -> Settlement | None:
    """Settle a finished competing period: call it inside the transaction that completes the
    period's archive (archive/services/period_archive.py). None for a period that does not
    compete; the period's settlement if it has one already (nothing is written twice)."""
    competition = config.competition
    if competition is None or period.kind != competition.window:
        return None
    # One settling writer of a board at a time (its row, locked until this commits): a second
    # settlement of the period waits here, then finds the first's row; a board's league applies
    # its periods one after another. SQLite writes one transaction at a time anyway.
    list(Leaderboard.objects.select_for_update().filter(pk=board.pk).values_list("pk", flat=True))
    existing = Settlement.objects.filter(board=board, window=period.kind, period_id=period.id).first()
    if existing is not None:
        return existing
    field = run_sync(lambda: field_read(board=config, period=period))
    settlement = Settlement.objects.create(
        board=board,
        window=period.kind,
        period_id=period.id,
        settled_at=now,
        entrants=field.entrants,
        cohorts=len(field.cohorts),
        promoted=0,
        demoted=0,
        granted=0,
    )
    settled: list[Settled] = []
    _entries(settlement, field_settled(config, field), settled)
    plan = Plan(period=period, entrants=field.entrants, cohorts=len(field.cohorts), settled=settled)
    del field  # what Redis held is in the entries now
    settlement.promoted, settlement.demoted, settlement.granted = plan.promoted, plan.demoted, plan.granted
    settlement.save(update_fields=["promoted", "demoted", "granted"])
    if competition.tiers:
        league.tiers_apply(board=board, period_id=period.id, moves=_moves(plan), now=now)
    grants = _grants(plan)
    if grants:
        rewards.grants_create(board=board, window=period.kind, period_id=period.id, grants=grants, now=now)
    # tiers_apply copies the new tiers to Redis once this commits (the next period's cohorts).
    outbox.event_emit(_settled_event(config, plan, settlement))
    return settlement


def _settled_event(config: BoardConfig, plan: Plan, settlement: Settlement) -> outbox.PeriodSettled:
    period = plan.period
    return outbox.PeriodSettled(
        game=config.game_slug,
        leaderboard=config.slug,
        window=period.kind,
        period_id=period.id,
        entrants=plan.entrants,
        cohorts=plan.cohorts,
        promoted=plan.promoted,
        demoted=plan.demoted,
        granted=plan.granted,
        settled_at=clock.iso(settlement.settled_at),
        settlement=settlement_path(config, period),
    )


def settlement_path(config: BoardConfig, period: periods.Period) -> str:
    return f"/api/v1/games/{config.game_slug}/leaderboards/{config.slug}/{period.kind}/{period.id}/settlement"


def settled_of(plan: Plan, *, cohort: str | None = None, player_ids: Sequence[str] = ()) -> list[Settled]:
    """The plan's entrants, optionally of one cohort or some players only."""
    wanted = set(player_ids)
    return [
        s
        for s in plan.settled
        if (cohort is None or s.cohort == cohort) and (not wanted or s.outcome.player_id in wanted)
    ]
