"""The drain: every board's ledger stream copied to the ScoreEvent table (a beat task).

Through one consumer group: read, bulk insert (PostgreSQL COPY, SQLite executemany:
core/bulk.py), acknowledge. At least once: an
entry read but not acknowledged (a crash) is delivered again, and the unique
(game, event id) keeps the table free of duplicates. What the table holds leaves
the stream, so the stream's length is the backlog the submit script caps.

A run visits only the boards marked in the ledger work set (``keys.work_ledger``,
core/worksets.py): every writer of an entry marks its board after writing it, and the
drain unmarks a board once drained, then looks at its stream again and marks it again if
anything is left, so an idle board costs a run nothing and no entry waits unmarked.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from redis.exceptions import ResponseError

from core import bulk, clock, keys, metrics
from core.deadletters import set_aside, store_or_set_aside
from core.models import DeadLetter, Game, Leaderboard
from core.redis import get_redis, run_soon, run_sync
from core.worksets import leaderboards_of, ledger_marked, settle

from .. import scripts
from ..models import ScoreEvent
from .erasure import player_forget
from .events import EVENT_FIELDS, LEDGER_GROUP, Erasure, EventValues, MalformedEntry, entry_values, logger

# Entries per XREADGROUP and per COPY (one transaction): large enough that a commit
# and a round trip per batch cost little against the rows (bench/archive.py), small
# enough that a batch is a few hundred KiB in memory.
LEDGER_DRAIN_BATCH = 5000
_COLUMNS = bulk.columns_of(ScoreEvent, EVENT_FIELDS)
_UNIQUE = bulk.columns_of(ScoreEvent, ["leaderboard", "stream_ms", "stream_seq"])
_EVENT_ID = EVENT_FIELDS.index("event_id")
# An entry another consumer has held unacknowledged this long is taken over: a
# drain run takes well under a second per batch, so that consumer has died.
LEDGER_CLAIM_MIN_IDLE_MS = 60_000
# At most this many batches are taken over per run (the rest on the next run): a
# run's length stays bounded however much a dead consumer held.
LEDGER_CLAIM_BATCHES_PER_RUN = 100
# Consumers idle this long with nothing pending are dropped from the group: each
# drain process has its own (host-pid), so restarts would leave them piling up.
LEDGER_CONSUMER_IDLE_DROP_MS = 24 * 3600 * 1000
# Marked boards one run drains at most, longest marked first: a run stays seconds long when
# many boards wait at once (a backlog after an outage); the rest are the next run's.
LEDGER_BOARDS_PER_RUN = 1000


def default_consumer() -> str:
    """This process's consumer name: its pending entries are its own to re-read after a crash."""
    return f"{socket.gethostname()}-{os.getpid()}"


async def ensure_group(ref: str) -> None:
    # From the start of the stream: after Redis lost its data, every new entry is read.
    try:
        await get_redis().xgroup_create(keys.ledger(ref), LEDGER_GROUP, id="0", mkstream=True)
    except ResponseError as error:
        if "BUSYGROUP" not in str(error):
            raise


async def _with_group(ref: str, call: Callable[[], Awaitable[Any]]) -> Any:
    """Run a group command; if the stream or its group vanished, recreate them and run it again."""
    try:
        return await call()
    except ResponseError as error:
        if "NOGROUP" not in str(error):
            raise
    # A new board's first drain, or Redis lost the stream: either way, start it afresh.
    logger.info("ledger group of %s was missing: created", ref)
    await ensure_group(ref)
    return await call()


async def _claim_stale(
    ref: str, consumer: str, min_idle_ms: int, start: str, count: int
) -> tuple[str, list[tuple[str, dict[str, str]]]]:
    """Take over entries other consumers held this long: (cursor for the next call, '0-0' when done; entries)."""
    stream = keys.ledger(ref)

    def call() -> Awaitable[Any]:
        return get_redis().xautoclaim(
            stream, LEDGER_GROUP, consumer, min_idle_time=min_idle_ms, start_id=start, count=count
        )

    cursor, entries = (await _with_group(ref, call))[:2]
    return cursor, [(event_id, fields) for event_id, fields in entries if event_id is not None]


async def _read(ref: str, consumer: str, after: str, count: int) -> list[tuple[str, dict[str, str]]]:
    """Entries after ``after`` of this consumer's pending list ('0'), or new ones ('>')."""
    stream = keys.ledger(ref)

    def call() -> Awaitable[Any]:
        return get_redis().xreadgroup(LEDGER_GROUP, consumer, {stream: after}, count=count)

    reply = await _with_group(ref, call)
    return list(reply[0][1]) if reply else []


async def _ack(ref: str, ids: Sequence[str]) -> None:
    await get_redis().xack(keys.ledger(ref), LEDGER_GROUP, *ids)


async def _prune_consumers(ref: str, consumer: str) -> int:
    return await scripts.ledger_consumers_prune(
        get_redis(), ref=ref, group=LEDGER_GROUP, idle_ms=LEDGER_CONSUMER_IDLE_DROP_MS, consumer=consumer
    )


def _store(board: Leaderboard, entries: Sequence[tuple[str, dict[str, str]]], *, fresh: bool) -> int:
    """Insert the rows of some entries (re-deliveries are skipped by the unique event id);
    returns how many entries were handled. The caller acks them after. ``fresh``: entries
    read for the first time (bulk.py then tries a plain COPY first).

    An entry the database refuses (a NUL on PostgreSQL, a number past a column), or
    that the scripts did not write, is set aside as a dead letter: it never blocks
    the entries behind it, and the stream stays below its cap.
    """
    game = board.game
    game_pk, board_pk = game.pk, board.pk
    rows: list[EventValues] = []
    erasures: list[Erasure] = []
    fields_of: dict[str, dict[str, str]] = {}
    for event_id, fields in entries:
        if not fields:
            # Gone from the stream before it was stored: only a manual XTRIM or DEL does that.
            logger.error("ledger entry %s of %s was trimmed before it was stored", event_id, board)
            continue
        try:
            entry = entry_values(game_pk, board_pk, event_id, fields)
        except MalformedEntry as error:
            set_aside(game=game, source=DeadLetter.Source.LEDGER, key=event_id, payload=fields, error=str(error))
            continue
        if isinstance(entry, Erasure):
            erasures.append(entry)
        else:
            rows.append(entry)
            fields_of[event_id] = fields
    if rows:
        # No SELECT to count the truly new ones: it cost a fifth of the drain (bench/archive.py).
        store_or_set_aside(
            game=game,
            source=DeadLetter.Source.LEDGER,
            rows=rows,
            store=lambda batch: bulk.insert_rows(
                model=ScoreEvent, columns=_COLUMNS, rows=batch, conflict=_UNIQUE, fresh=fresh
            ),
            describe=lambda row: (row[_EVENT_ID], fields_of[row[_EVENT_ID]]),
        )
    # After the rows: those of an erased player stored just now go too (the erasure's
    # own pass ran before they reached the table).
    for erasure in erasures:
        player_forget(
            game=game,
            board=board,
            player_id=erasure.player_id,
            before=erasure.stream_id,
            ended_by=clock.from_ms(erasure.at_ms),
        )
    return len(rows) + len(erasures)


def _drain_board(board: Leaderboard, *, batch_size: int, consumer: str, claim_min_idle_ms: int) -> int:
    ref = keys.board_ref(board.game.slug, board.slug)
    stored = 0
    # Entries a dead consumer held: stored and acknowledged here, a batch at a time.
    start = "0-0"
    for _ in range(LEDGER_CLAIM_BATCHES_PER_RUN):
        start, entries = run_sync(_claim_stale, ref, consumer, claim_min_idle_ms, start, batch_size)
        if entries:
            stored += _store(board, entries, fresh=False)
            run_sync(_ack, ref, [event_id for event_id, _ in entries])
        if start == "0-0":
            break
    # This consumer's pending entries (a crash between read and ack), then new ones.
    # Each batch is stored, then acknowledged: never acknowledged unstored. The next
    # batch is read while this one is stored (a crash leaves it pending: read again).
    for origin in ("0", ">"):
        ahead = run_soon(_read, ref, consumer, origin, batch_size)
        while True:
            entries = ahead.result()
            full = len(entries) >= batch_size
            if full:
                ahead = run_soon(_read, ref, consumer, ">" if origin == ">" else entries[-1][0], batch_size)
            if entries:
                # Never delivered before ('>'): none can be stored yet, short of a replay.
                stored += _store(board, entries, fresh=origin == ">")
                run_sync(_ack, ref, [event_id for event_id, _ in entries])
            if not full:
                break
    run_sync(_prune_consumers, ref, consumer)
    # What the table holds leaves the stream, so its length is the backlog the submit script caps.
    run_sync(lambda: scripts.ledger_trim(get_redis(), ref=ref, group=LEDGER_GROUP))
    metrics.LEDGER_DRAINED.inc(stored)
    return stored


async def _settle(ref: str) -> bool:
    """Unmark a drained board, then mark it again if its stream still holds entries not stored
    (written meanwhile, or held by another consumer): the drain looks again next run."""

    async def remaining() -> bool:
        return bool(await get_redis().xlen(keys.ledger(ref)))

    return await settle(keys.work_ledger(), ref, remaining=remaining, now_ms=clock.now_ms())


async def _forget(refs: list[str]) -> None:
    # Boards gone (deleted with their game and its keys): nothing left to store.
    if refs:
        await get_redis().zrem(keys.work_ledger(), *refs)


def ledger_drain(
    *,
    batch_size: int = LEDGER_DRAIN_BATCH,
    consumer: str | None = None,
    game: Game | None = None,
    claim_min_idle_ms: int = LEDGER_CLAIM_MIN_IDLE_MS,
) -> int:
    """Copy the unstored ledger entries of the marked boards (or of every board of ``game``)
    to ScoreEvent; returns entries handled."""
    consumer = consumer or default_consumer()
    if game is None:
        refs = run_sync(lambda: ledger_marked(limit=LEDGER_BOARDS_PER_RUN))
        found = leaderboards_of(refs)
        run_sync(_forget, [ref for ref in refs if ref not in found])
        boards = {ref: found[ref] for ref in refs if ref in found}
    else:
        boards = {keys.board_ref(game.slug, b.slug): b for b in Leaderboard.objects.filter(game=game)}
        for board in boards.values():
            board.game = game
    stored = 0
    for ref, board in boards.items():
        stored += _drain_board(board, batch_size=batch_size, consumer=consumer, claim_min_idle_ms=claim_min_idle_ms)
        run_sync(_settle, ref)
    return stored
