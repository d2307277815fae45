"""Balanced cohorts (issue 22): a competing period's entrants are held until its split time
(when entry closes, else after a short hold), then split into cohorts whose sizes differ by one
at most. The worker reads who is held and computes the split here, with the pure rules
(core/competition_rules.balanced_split); cohorts_split.lua places them and anyone who entered
meanwhile, once. First-come cohorts need none of this: the entry scripts place as they enter.

A beat task runs :func:`cohorts_split_due` every few seconds (leaderboard_site/schedule.py);
settlement runs :func:`cohorts_split` for a period first, so a period whose split the workers
missed is still settled in cohorts.
"""

from __future__ import annotations

import datetime as dt

from django.conf import settings

from core import clock, competition_rules, keys, worksets
from core.config import BoardConfig, list_games
from core.redis import get_redis, run_sync, scored_pairs, zrange_all_scored
from games import periods
from games.services.scores import cohort_gate

from .. import scripts


def _balanced(board: BoardConfig) -> bool:
    competition = board.competition
    return (
        competition is not None
        and competition.cohort_size is not None
        and competition.cohort_fill == competition_rules.BALANCED
    )


async def _held(board: BoardConfig, board_key: str) -> list[competition_rules.Held] | None:
    """Who waits for the split (None: the split ran already)."""
    competition = board.competition
    assert competition is not None
    client = get_redis()
    pipe = client.pipeline(transaction=False)
    pipe.hget(keys.entry_cohort_state(board_key), "placed")
    zrange_all_scored(pipe, keys.entry_entrants(board_key))
    pipe.hgetall(keys.entry_ratings(board_key))
    placed, reply, ratings = await pipe.execute()
    if placed == "1":
        return None
    entrants = scored_pairs(reply)
    places = [0] * len(entrants)
    if competition.cohort_by == competition_rules.BY_TIER and entrants:
        slugs = [t.slug for t in competition.tiers]
        start = slugs.index(competition.start_tier)
        tiers = await client.hmget(keys.league_tiers(board.ref), [p for p, _ in entrants])
        places = [slugs.index(t) if t in slugs else start for t in tiers]
    return [
        competition_rules.Held(
            player_id=player,
            entered_ms=int(entered),
            rating=int(ratings[player]) if player in ratings else None,
            tier_place=place,
        )
        for (player, entered), place in zip(entrants, places, strict=True)
    ]


async def held_entrants(*, board: BoardConfig, period: periods.Period) -> list[competition_rules.Held]:
    """A balanced period's entrants waiting for its split, read only (none once it ran)."""
    if not _balanced(board):
        return []
    return await _held(board, keys.board(board.ref, period.kind, period.id)) or []


async def cohorts_split(*, board: BoardConfig, period: periods.Period) -> scripts.Split | None:
    """Split the period's held entrants into balanced cohorts, once (None: the board's cohorts
    are not balanced). A second call, or one after the split ran, changes nothing."""
    competition = board.competition
    if competition is None or not _balanced(board):
        return None
    gate = cohort_gate(competition, period)
    assert gate is not None
    spot = scripts.PeriodSpot(board.ref, period.kind, period.id, period.ends_at_ms)
    held = await _held(board, spot.board_key)
    if held is None:
        return scripts.Split(done_before=True, placed=0, late=0)
    now_ms = clock.to_ms(clock.now())
    split = await scripts.cohorts_split(
        get_redis(),
        spot=spot,
        placed=competition_rules.balanced_split(held, competition),
        cohorts=gate,
        now_ms=now_ms,
        ledger_cap=settings.LEDGER_STREAM_MAXLEN,
    )
    if split.placed or split.late:
        await _changed(board, spot.board_key, now_ms)
    return split


async def _changed(board: BoardConfig, board_key: str, now_ms: int) -> None:
    """Mark the period board changed, as a score does: the split moves no score, but every
    entrant's cohort, which the live cohort views and followed players' places show; and its
    placements are ledger entries for the drain. A mark lost with a process that dies here
    waits for the board's next change (or the background's sweep)."""
    pipe = get_redis().pipeline(transaction=False)
    pipe.zadd(keys.dirty(board.ref), {board_key: now_ms}, nx=True)
    pipe.zadd(keys.live_changes(), {board.ref: now_ms}, nx=True)
    worksets.queue_marks(pipe, [board], clock.from_ms(now_ms), periods.board_current)
    await pipe.execute()


def _due(board: BoardConfig, now: dt.datetime) -> periods.Period | None:
    """The board's current competing period if its cohorts are balanced and its split time has
    passed (whether the split ran is Redis's to say)."""
    competition = board.competition
    if competition is None or not _balanced(board) or not board.is_open(now):
        return None
    period = periods.window_current(board, competition.window, now)
    formed = periods.cohorts_formed_at(period, competition)
    return period if formed is not None and now >= formed else None


async def _split_due() -> int:
    now = clock.now()
    due = [(board, period) for game in await list_games() for board in game.boards if (period := _due(board, now))]
    if not due:
        return 0
    # One round trip for every due board: most have split already, or have nobody to split.
    pipe = get_redis().pipeline(transaction=False)
    for board, period in due:
        board_key = keys.board(board.ref, period.kind, period.id)
        pipe.exists(keys.entry_entrants(board_key))
        pipe.hget(keys.entry_cohort_state(board_key), "placed")
    found = await pipe.execute()
    split = 0
    for (board, period), entrants, placed in zip(due, found[0::2], found[1::2], strict=True):
        if not entrants or placed == "1":
            continue  # nobody yet (the first entrant opens the cohorts itself), or split already
        result = await cohorts_split(board=board, period=period)
        split += 1 if result is not None and not result.done_before and not result.ledger_full else 0
    return split


def cohorts_split_due() -> int:
    """Split every balanced period whose split time has passed (the beat's task): how many now."""
    return run_sync(_split_due)
