"""Score submissions: one, many (a batch, for any boards of the game), or imported as of a
past moment. Async, touching only Redis and the in-process config caches.

Each board's part is one atomic submit_score.lua call per chunk of items (the entries
prelude keys and ranks them); the game's part (names, recent list, presence) follows in a
second pipelined round trip, with the live change marks.
"""

from __future__ import annotations

import collections
import datetime as dt
import json
import math
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from django.conf import settings
from redis.asyncio.client import Pipeline

from core import clock, competition_rules, errors, keys, lua, metrics, text, worksets
from core.competition_rules import Competition
from core.config import BoardConfig, GameConfig
from core.errors import ServiceError
from core.models import MAX_SAFE_SCORE, PLAYER_ID_MESSAGE, is_player_id
from core.redis import get_redis, scripts_replicated
from presence.services import PRESENCE_ANNOUNCE_TTL_MS

from .. import periods, selectors
from ..scripts import board as board_scripts
from ..scripts import game as game_scripts

# The anti-spam window is a sliding minute, as the game setting says "per minute".
PLAYER_SPAM_WINDOW_MS = 60_000
# An entry's metadata, as compact JSON, at most: a car and a replay id fit many times over,
# and a board of a million entries stays within half a gigabyte of it.
METADATA_MAX_BYTES = 512
# Items per submit-script call in a batch: each call holds Redis for roughly
# this many times ~60 µs, so other clients wait a few ms at most.
SUBMIT_CHUNK_ITEMS = 100
# A refused submission (the ledger's database copy is behind) is worth retrying after
# about one drain interval.
LEDGER_FULL_RETRY_SECS = 5


PeriodStanding = board_scripts.PeriodStanding


@dataclass(slots=True)
class Submitted:
    player_id: str
    display_name: str
    leaderboard: str
    periods: dict[str, PeriodStanding]
    metadata: dict[str, Any] | None
    replayed: bool


class Submission(NamedTuple):
    """One score to apply (a tuple: a batch builds a thousand, and a frozen dataclass costs
    twice as much to build)."""

    player_id: str
    score: int
    display_name: str | None = None
    metadata: dict[str, Any] | None = None
    # The board's slug; score_submit_many needs it, score_submit is given the board.
    leaderboard: str = ""
    subscore: int | None = None


@dataclass(frozen=True)
class Idempotency:
    """An Idempotency-Key scoped to the API key, with a fingerprint of the request body."""

    key_prefix: str
    key: str
    fingerprint: str


def metadata_text(metadata: dict[str, Any] | None) -> str:
    """How an entry's metadata is stored: compact JSON ('' for none)."""
    if metadata is None:
        return ""
    return json.dumps(metadata, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def _integer(value: object, field: str) -> None:
    if type(value) is not int or abs(value) > MAX_SAFE_SCORE:  # bool and float included
        raise errors.invalid(field, f"Must be an integer with |{field}| <= 2^53-1.")


def _check(board: BoardConfig, item: Submission) -> None:
    if not is_player_id(item.player_id):
        raise errors.invalid("player_id", PLAYER_ID_MESSAGE)
    _integer(item.score, "score")
    if board.min_score is not None and item.score < board.min_score:
        raise errors.out_of_bounds(field="score", minimum=board.min_score)
    if board.max_score is not None and item.score > board.max_score:
        raise errors.out_of_bounds(field="score", maximum=board.max_score)
    if item.subscore is not None:
        if not board.has_subscore:
            raise errors.invalid("subscore", "This leaderboard has no subscores (its ties are not 'subscore').")
        _integer(item.subscore, "subscore")
    if item.display_name is not None and len(item.display_name) > 64:
        raise errors.invalid("display_name", "At most 64 characters.")
    if item.display_name is not None and text.has_control_characters(item.display_name):
        raise errors.invalid("display_name", text.CONTROL_MESSAGE)
    if item.metadata is not None:
        if not isinstance(item.metadata, dict):
            raise errors.invalid("metadata", "Must be a JSON object.")
        size = len(metadata_text(item.metadata).encode())
        if size > METADATA_MAX_BYTES:
            raise errors.metadata_too_large(size=size, limit=METADATA_MAX_BYTES)


def board_closed(board: BoardConfig) -> ServiceError:
    """409 for a board that takes no scores now (outside its season, or deactivated)."""
    return errors.board_closed(board=board.slug, active=board.active, starts_at=board.starts_at, ends_at=board.ends_at)


def not_replicated() -> ServiceError:
    return errors.not_replicated(timeout_ms=settings.SCORE_ACK_TIMEOUT_MS)


class _Queued(NamedTuple):
    """One valid submission on its way to the submit scripts."""

    position: int  # in the request's items
    item: Submission
    board: BoardConfig
    idempotency: Idempotency | None


def window_periods(current: Sequence[periods.Period]) -> list[board_scripts.WindowPeriod]:
    """The board scripts' view of the current periods."""
    return [board_scripts.WindowPeriod(p.kind, p.id, p.ends_at_ms) for p in current]


def board_rules(board: BoardConfig) -> board_scripts.BoardRules:
    return board_scripts.BoardRules(
        board.ref,
        board.mode,
        board.ties,
        sign=board.sort_base(1),
        sub_sign=board.sub_oriented(1),
    )


def _board_call(
    board: BoardConfig, chunk: Sequence[_Queued], now_ms: int, current: Sequence[periods.Period], spam_limit: int
) -> lua.Call:
    """One submit_score.lua call (one board, one chunk)."""
    call_id = uuid.uuid4().hex
    # The board's orientation once per call, not per item: a chunk has a hundred.
    sign, sub_sign, has_subscore = board.sort_base(1), board.sub_oriented(1), board.has_subscore
    items = []
    for queued in chunk:
        item, idem = queued.item, queued.idempotency
        subscore = item.subscore if has_subscore else None
        items.append(
            board_scripts.SubmitItem(
                player_id=item.player_id,
                value=sign * item.score,
                sub=sub_sign * (subscore or 0),
                spam_member=f"{call_id}:{queued.position}",
                score=item.score,
                subscore=subscore,
                display_name=item.display_name or "",
                metadata=metadata_text(item.metadata),
                idempotency=(idem.key_prefix, idem.key, queued.position, idem.fingerprint) if idem else None,
            )
        )
    limits = board_scripts.SubmitLimits(
        now_ms=now_ms,
        spam_limit=spam_limit,
        spam_window_ms=PLAYER_SPAM_WINDOW_MS,
        idem_ttl_ms=settings.IDEMPOTENCY_TTL_SECS * 1000,
        grace_ms=settings.ARCHIVE_GRACE_SECS * 1000,
        ledger_cap=settings.LEDGER_STREAM_MAXLEN,
    )
    return board_scripts.submit_score_call(
        board=board_rules(board),
        limits=limits,
        periods=window_periods(current),
        items=items,
        gate=entry_gate(board, current),
    )


def entry_gate(board: BoardConfig, current: Sequence[periods.Period]) -> board_scripts.EntryGate | None:
    """A competing board's entry rules for the current period of its competing window."""
    competition = board.competition
    if competition is None:
        return None
    period = next((p for p in current if p.kind == competition.window), None)
    if period is None:
        return None
    closes = periods.entry_closes_at(period, competition.entry_window_secs)
    return board_scripts.EntryGate(
        window=competition.window,
        entry=competition.entry,
        max_entrants=competition.max_entrants,
        closes_ms=None if closes is None else clock.to_ms(closes),
        max_attempts=competition.max_attempts,
        cohorts=cohort_gate(competition, period),
    )


def cohort_gate(competition: Competition, period: periods.Period) -> board_scripts.CohortGate | None:
    """Where the period's new entrants go (None: the board has no cohorts)."""
    if competition.cohort_size is None:
        return None
    formed = periods.cohorts_formed_at(period, competition)
    by_tier = competition.cohort_by == competition_rules.BY_TIER
    return board_scripts.CohortGate(
        size=competition.cohort_size,
        first_come=competition.cohort_fill == competition_rules.FIRST_COME,
        formed_ms=None if formed is None else clock.to_ms(formed),
        tier_slugs=tuple(t.slug for t in competition.tiers) if by_tier else (),
        start_tier=competition.start_tier if by_tier else "",
    )


def _game_call(game: GameConfig, applied: Sequence[tuple[_Queued, bool]], now_ms: int, heartbeat: bool) -> lua.Call:
    """One submit_game.lua call: the game's part of the applied items."""
    items = []
    for queued, fresh in applied:
        item = queued.item
        # Ids and slugs are [A-Za-z0-9_.:-]: nothing in them needs escaping.
        recent = (
            f'{{"player_id":"{item.player_id}","score":{item.score},"at":{now_ms},"leaderboard":"{queued.board.slug}"}}'
        )
        name = item.display_name or ""
        items.append(game_scripts.GameItem(item.player_id, name, text.search_key(name) if name else "", recent, fresh))
    return game_scripts.submit_game_call(
        slug=game.slug,
        now_ms=now_ms,
        recent_cap=settings.RECENT_SUBMISSIONS_MAX,
        presence_timeout_ms=game.presence_timeout_secs * 1000 if heartbeat else None,
        announce_ttl_ms=PRESENCE_ANNOUNCE_TTL_MS,
        items=items,
    )


def _refused(board: BoardConfig, game: GameConfig, refusal: board_scripts.Refused) -> ServiceError:
    code = refusal.code
    if code is board_scripts.Refusal.HIDDEN:
        return errors.player_hidden(message="This player is hidden and cannot submit scores.")
    if code is board_scripts.Refusal.PLAYER_RATE_LIMITED:
        retry = max(1, math.ceil(int(refusal.detail) / 1000))
        return errors.player_rate_limited(per_minute=game.max_submissions_per_minute, retry_secs=retry)
    if code is board_scripts.Refusal.LEDGER_FULL:
        return errors.ledger_full(retry_secs=LEDGER_FULL_RETRY_SECS)
    if code is board_scripts.Refusal.OVERFLOW:
        return errors.score_overflow(window=refusal.detail, limit=MAX_SAFE_SCORE, field="score")
    if code is board_scripts.Refusal.IDEMPOTENCY_MISMATCH:
        return errors.idempotency_mismatch()
    return _entry_refused(board, refusal)


def _entry_refused(board: BoardConfig, refusal: board_scripts.Refused) -> ServiceError:
    """A competing board's refusal: its detail is numbers, then the period id."""
    *numbers, period_id = refusal.detail.split(" ")
    if refusal.code is board_scripts.Refusal.NOT_ENTERED:
        return errors.not_entered(board=board.slug, period_id=period_id)
    if refusal.code is board_scripts.Refusal.ENTRY_CLOSED:
        return errors.entry_closed(period_id=period_id, closed_at=clock.from_ms(numbers[0]))
    if refusal.code is board_scripts.Refusal.BOARD_FULL:
        return errors.board_full(period_id=period_id, max_entrants=int(numbers[0]))
    return errors.attempts_exhausted(period_id=period_id, used=int(numbers[0]), allowed=int(numbers[1]))


async def score_submit(
    *,
    game: GameConfig,
    board: BoardConfig,
    player_id: str,
    score: int,
    subscore: int | None = None,
    display_name: str | None = None,
    metadata: dict[str, Any] | None = None,
    idempotency: Idempotency | None = None,
) -> Submitted:
    """Apply one submission to every window of the board in one atomic script (then the
    game's names, recent list and presence in a second)."""
    item = Submission(player_id, score, display_name, metadata, board.slug, subscore)
    fingerprints = [idempotency.fingerprint] if idempotency else None
    (result,) = await _submit_many(game, [item], idempotency, fingerprints, clock.now())
    if isinstance(result, ServiceError):
        raise result
    return result


async def score_submit_many(
    *,
    game: GameConfig,
    items: Sequence[Submission | ServiceError],
    idempotency: Idempotency | None = None,
    item_fingerprints: Sequence[str] | None = None,
) -> list[Submitted | ServiceError]:
    """Apply many submissions, for any boards of the game, in two pipelined round trips;
    each is atomic on its own.

    Items go to Redis in chunks of SUBMIT_CHUNK_ITEMS per board and script call, so one
    call never holds Redis for long. Items already found invalid (a ServiceError) stay
    in place in the results. With an Idempotency-Key each item gets its own record,
    keyed by its position.
    """
    metrics.BATCH_ITEMS.observe(len(items))
    return await _submit_many(game, items, idempotency, item_fingerprints, clock.now())


async def score_import(
    *, game: GameConfig, board: BoardConfig, items: Sequence[Submission], at: dt.datetime
) -> list[Submitted | ServiceError]:
    """Apply submissions to ``board`` as if made at ``at`` (history from elsewhere, the demo
    seed): they land on the periods that contain ``at``. Unlike a live score, an imported
    one does not show its player online, and the board's season is not checked."""
    placed = [Submission(i.player_id, i.score, i.display_name, i.metadata, board.slug, i.subscore) for i in items]
    return await _submit_many(game, placed, None, None, at, heartbeat=False)


def _queue(
    game: GameConfig,
    items: Sequence[Submission | ServiceError],
    idempotency: Idempotency | None,
    item_fingerprints: Sequence[str] | None,
    now: dt.datetime,
    *,
    check_season: bool,
) -> tuple[list[Submitted | ServiceError | None], list[_Queued]]:
    """Each item's board and checks: the refused ones in place, the others queued."""
    results: list[Submitted | ServiceError | None] = [None] * len(items)
    queued: list[_Queued] = []
    for i, item in enumerate(items):
        if isinstance(item, ServiceError):
            results[i] = item
            continue
        try:
            board = selectors.board_or_404(game=game, slug=item.leaderboard)
            if check_season and not board.is_open(now):
                raise board_closed(board)
            _check(board, item)
        except ServiceError as error:
            results[i] = error
            continue
        item_idem = (
            Idempotency(idempotency.key_prefix, idempotency.key, item_fingerprints[i])
            if idempotency and item_fingerprints
            else None
        )
        queued.append(_Queued(i, item, board, item_idem))
    return results, queued


async def _submit_many(
    game: GameConfig,
    items: Sequence[Submission | ServiceError],
    idempotency: Idempotency | None,
    item_fingerprints: Sequence[str] | None,
    now: dt.datetime,
    *,
    heartbeat: bool = True,
) -> list[Submitted | ServiceError]:
    results, queued = _queue(game, items, idempotency, item_fingerprints, now, check_season=heartbeat)
    if queued:
        unreplicated: set[int] = set()
        applied = await _apply_to_boards(game, queued, now, results, unreplicated)
        if applied:
            await _apply_to_game(game, applied, now, heartbeat, results)
        for index in unreplicated:
            results[index] = not_replicated()
    done = [r for r in results if r is not None]  # every position was filled above
    if heartbeat:  # a live submission, not an import
        _count_outcomes(game, done)
    return done


def _count_outcomes(game: GameConfig, results: Sequence[Submitted | ServiceError]) -> None:
    # Tallied first: one counter update per outcome, not per item of a 1,000-item batch.
    tally = collections.Counter(
        ("refused", r.code) if isinstance(r, ServiceError) else ("accepted", "replayed" if r.replayed else "ok")
        for r in results
    )
    labels = metrics.game_labels(game.slug)
    for (outcome, code), count in tally.items():
        metrics.SUBMISSIONS.labels(outcome=outcome, code=code, **labels).inc(count)
    if tally[("refused", "player_rate_limited")]:
        metrics.RATE_LIMITED.labels(limit="player").inc(tally[("refused", "player_rate_limited")])


async def _apply_to_boards(
    game: GameConfig,
    queued: Sequence[_Queued],
    now: dt.datetime,
    results: list[Submitted | ServiceError | None],
    unreplicated: set[int],
) -> list[tuple[_Queued, board_scripts.Applied]]:
    """The board scripts of every queued item, pipelined; returns the items they applied
    (or replayed) with their replies, records the refusals in ``results``, and the items no
    replica confirmed (SCORE_ACK=replica) in ``unreplicated``."""
    now_ms = clock.to_ms(now)
    by_board: dict[str, list[_Queued]] = {}
    for q in queued:
        by_board.setdefault(q.board.slug, []).append(q)
    chunks: list[list[_Queued]] = []
    calls = []
    for board_items in by_board.values():
        board = board_items[0].board
        current = periods.board_current(board, now)
        for i in range(0, len(board_items), SUBMIT_CHUNK_ITEMS):
            chunk = board_items[i : i + SUBMIT_CHUNK_ITEMS]
            chunks.append(chunk)
            calls.append(_board_call(board, chunk, now_ms, current, game.max_submissions_per_minute))
    applied: list[tuple[_Queued, board_scripts.Applied]] = []
    for chunk, (raw, held) in zip(chunks, await _run_board_calls(calls), strict=True):
        for q, reply in zip(chunk, board_scripts.submit_replies(board_rules(chunk[0].board), raw), strict=True):
            if isinstance(reply, board_scripts.Refused):
                results[q.position] = _refused(q.board, game, reply)
                continue
            applied.append((q, reply))
            if not held:
                # Applied on the primary, so the game's part still follows; only the answer
                # differs, and a retry with the same Idempotency-Key replays it.
                unreplicated.add(q.position)
    applied.sort(key=lambda pair: pair[0].position)
    return applied


async def _run_board_calls(calls: Sequence[lua.Call]) -> list[tuple[Any, bool]]:
    """submit_score.lua per call, pipelined; with SCORE_ACK=replica each reply counts as held
    only once a replica has the call's writes (core/redis.py: scripts_replicated)."""
    started = time.perf_counter()
    if settings.SCORE_ACK == "replica":
        held = await scripts_replicated(
            board_scripts.SUBMIT_SCORE, calls, replicas=1, timeout_ms=settings.SCORE_ACK_TIMEOUT_MS
        )
    else:
        replies = await lua.pipelined(get_redis(), [(board_scripts.SUBMIT_SCORE, call) for call in calls])
        held = [(reply, True) for reply in replies]
    metrics.SUBMIT_SCRIPT_SECONDS.observe(time.perf_counter() - started)
    return held


async def _apply_to_game(
    game: GameConfig,
    applied: Sequence[tuple[_Queued, board_scripts.Applied]],
    now: dt.datetime,
    heartbeat: bool,
    results: list[Submitted | ServiceError | None],
) -> None:
    """The game's script for the applied items (names, recent list, presence), and the
    broadcaster's note of the boards that changed, in one pipelined round trip."""
    now_ms = clock.to_ms(now)
    chunks = [applied[i : i + SUBMIT_CHUNK_ITEMS] for i in range(0, len(applied), SUBMIT_CHUNK_ITEMS)]
    calls = [_game_call(game, [(q, not reply.replayed) for q, reply in chunk], now_ms, heartbeat) for chunk in chunks]
    # Replays mark their boards too: their first attempt may have died before it marked them
    # (a mark is idempotent; a board marked for nothing costs its consumer one look).
    changed = {q.board.ref for q, _ in applied}

    def marks(pipe: Pipeline) -> None:
        if changed:
            pipe.zadd(keys.live_changes(), dict.fromkeys(changed, now_ms), nx=True)
            # The background runs' work sets: ledger entries to store, close jobs to run.
            worksets.queue_marks(pipe, {q.board for q, _ in applied}, now, periods.board_current)
            if heartbeat:
                # A score is a heartbeat: a player may have come online.
                pipe.zadd(keys.live_presence_changes(), {game.slug: now_ms}, nx=True)

    replies = await lua.pipelined(get_redis(), [(game_scripts.SUBMIT_GAME, call) for call in calls], then=marks)
    marked = False
    for chunk, raw in zip(chunks, replies, strict=True):
        reply = game_scripts.submit_game_reply(raw, len(chunk))
        marked = marked or reply.marked
        for (q, applied_reply), name in zip(chunk, reply.names, strict=True):
            results[q.position] = Submitted(
                player_id=q.item.player_id,
                display_name=name,
                leaderboard=q.board.slug,
                periods=applied_reply.periods,
                metadata=q.item.metadata,
                replayed=applied_reply.replayed,
            )
    if marked:
        await get_redis().zadd(keys.work_players(), {game.slug: now_ms}, nx=True)
