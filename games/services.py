"""Board writes: submissions, hiding and renaming players, copying new players to the
database. Views, API endpoints, tasks, admin actions and commands adapt to these.

The score path (:func:`score_submit`, :func:`score_submit_many`) is async and
touches only Redis and the in-process config caches; everything else is sync
and reaches Redis through :func:`core.redis.run_sync`.
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
from typing import Any, Literal, cast

from django.conf import settings
from django.db import transaction

from core import clock, keys, metrics, text
from core.audit import SYSTEM, Action, Actor, audit_record, checked_reason
from core.config import BoardConfig, GameConfig
from core.deadletters import store_or_set_aside
from core.errors import ServiceError
from core.lua import ensure_loaded
from core.models import MAX_SAFE_SCORE, PLAYER_ID_MESSAGE, DeadLetter, Game, Leaderboard, Player, is_player_id
from core.redis import get_redis, run_sync, scripts_replicated
from core.worksets import queue_marks
from presence.services import PRESENCE_ANNOUNCE_TTL_MS

from . import periods, scripts, selectors

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
# One drain of new players writes at most this many rows in one INSERT.
PLAYER_SYNC_BATCH_SIZE = 1000
# Names per names_write call (each call holds Redis for about a millisecond).
NAMES_WRITE_CHUNK = 1000
# Names indexed per game and player-sync run while indexing names stored before the
# index existed: a million names are done in about seven minutes of runs 2 s apart.
NAMES_INDEX_BACKFILL_PER_RUN = 5000


# --------------------------------------------------------------------------- scores


@dataclass(frozen=True)
class PeriodStanding:
    period: str
    period_id: str
    score: int
    rank: int


@dataclass(frozen=True)
class Submitted:
    player_id: str
    display_name: str
    leaderboard: str
    periods: dict[str, PeriodStanding]
    metadata: dict[str, Any] | None
    replayed: bool


@dataclass(frozen=True)
class Submission:
    player_id: str
    score: int
    display_name: str | None = None
    metadata: dict[str, Any] | None = None
    # The board's slug; score_submit_many needs it, score_submit is given the board.
    leaderboard: str = ""


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


def _check(board: BoardConfig, item: Submission) -> None:
    if not is_player_id(item.player_id):
        raise ServiceError(422, "invalid", PLAYER_ID_MESSAGE, field="player_id")
    if type(item.score) is not int or abs(item.score) > MAX_SAFE_SCORE:  # bool and float included
        raise ServiceError(422, "invalid", "Must be an integer with |score| <= 2^53-1.", field="score")
    if board.min_score is not None and item.score < board.min_score:
        raise ServiceError(422, "out_of_bounds", f"Must be at least {board.min_score} on this board.", field="score")
    if board.max_score is not None and item.score > board.max_score:
        raise ServiceError(422, "out_of_bounds", f"Must be at most {board.max_score} on this board.", field="score")
    if item.display_name is not None and len(item.display_name) > 64:
        raise ServiceError(422, "invalid", "At most 64 characters.", field="display_name")
    if item.display_name is not None and text.has_control_characters(item.display_name):
        raise ServiceError(422, "invalid", text.CONTROL_MESSAGE, field="display_name")
    if item.metadata is not None:
        if not isinstance(item.metadata, dict):
            raise ServiceError(422, "invalid", "Must be a JSON object.", field="metadata")
        size = len(metadata_text(item.metadata).encode())
        if size > METADATA_MAX_BYTES:
            raise ServiceError(
                413,
                "metadata_too_large",
                f"Metadata is {size} bytes as compact JSON; at most {METADATA_MAX_BYTES}.",
                field="metadata",
            )


def board_closed(board: BoardConfig) -> ServiceError:
    """409 for a board that takes no scores now (outside its season, or deactivated)."""
    if not board.active:
        message = f"The leaderboard {board.slug!r} is closed: it takes no more scores; its standings stay readable."
    else:
        season = f"from {clock.iso(board.starts_at) if board.starts_at else 'the start'}"
        season += f" until {clock.iso(board.ends_at)}" if board.ends_at else " on"
        message = f"The leaderboard {board.slug!r} takes scores {season}."
    return ServiceError(409, "board_closed", message, field="leaderboard")


@dataclass(frozen=True)
class _Queued:
    """One valid submission on its way to the submit scripts."""

    index: int
    item: Submission
    board: BoardConfig
    idempotency: Idempotency | None


def board_write_keys(ref: str) -> list[str]:
    """The first KEYS of the board scripts that write scores (submit_score.lua, score_correct.lua):
    hidden copy, boards index, dirty set, close jobs, ledger."""
    return [keys.board_hidden(ref), keys.boards_index(ref), keys.dirty(ref), keys.close_jobs(ref), keys.ledger(ref)]


def window_args(board: BoardConfig, period: periods.Period) -> list[str | int]:
    """The six ARGV of one window in the board scripts (submit_score.lua, score_correct.lua)."""
    return [
        period.kind,
        period.id,
        "" if period.ends_at_ms is None else period.ends_at_ms,
        board.tie_bits(period.kind),
        board.max_abs(period.kind),
        0 if period.starts_at is None else clock.to_ms(period.starts_at),
    ]


def _board_call(
    board: BoardConfig, chunk: Sequence[_Queued], now_ms: int, current: Sequence[periods.Period], spam_limit: int
) -> tuple[list[str], list[str | int]]:
    """KEYS and ARGV of one submit_score.lua call (one board, one chunk)."""
    ref = board.ref
    key_list = board_write_keys(ref)
    args: list[str | int] = [
        board.mode,
        now_ms,
        spam_limit,
        PLAYER_SPAM_WINDOW_MS,
        settings.IDEMPOTENCY_TTL_SECS * 1000,
        len(current),
        settings.ARCHIVE_GRACE_SECS * 1000,
        settings.LEDGER_STREAM_MAXLEN,
    ]
    for p in current:
        board_key = keys.board(ref, p.kind, p.id)
        key_list += [board_key, keys.entry_meta(board_key)]
        args += window_args(board, p)
    placeholder = keys.idempotency(ref, "-", "-")
    call_id = uuid.uuid4().hex
    for queued in chunk:
        item, idem = queued.item, queued.idempotency
        key_list += [
            keys.player_spam(ref, item.player_id),
            keys.idempotency(ref, idem.key_prefix, idem.key, queued.index) if idem else placeholder,
            keys.player_idempotency(ref, item.player_id),
        ]
        args += [
            item.player_id,
            board.sort_base(item.score),
            f"{call_id}:{queued.index}",
            idem.fingerprint if idem else "",
            item.score,
            item.display_name or "",
            metadata_text(item.metadata),
        ]
    return key_list, args


def _game_call(
    game: GameConfig, applied: Sequence[tuple[_Queued, bool]], now_ms: int, heartbeat: bool
) -> tuple[list[str], list[str | int]]:
    """KEYS and ARGV of one submit_game.lua call: the game's part of the applied items."""
    slug = game.slug
    key_list = [
        keys.names(slug),
        keys.hidden(slug),
        keys.recent(slug),
        keys.pending_players(slug),
        keys.presence_online(slug),
        keys.presence_last_seen(slug),
        keys.presence_joined(slug),
        keys.presence_left(slug),
        keys.name_index(slug),
        keys.name_keys(slug),
    ]
    args: list[str | int] = [
        now_ms,
        settings.RECENT_SUBMISSIONS_MAX,
        game.presence_timeout_secs * 1000 if heartbeat else "",
        PRESENCE_ANNOUNCE_TTL_MS,
    ]
    for queued, fresh in applied:
        item = queued.item
        key_list.append(keys.presence_tabs(slug, item.player_id))
        recent = {"player_id": item.player_id, "score": item.score, "at": now_ms, "leaderboard": queued.board.slug}
        args += [
            item.player_id,
            item.display_name or "",
            text.search_key(item.display_name or item.player_id),
            json.dumps(recent),
            int(fresh),
        ]
    return key_list, args


def _refused(board: BoardConfig, game: GameConfig, raw: list) -> ServiceError:
    code, detail = raw[1], raw[2]
    if code == "hidden":
        message = "This player is hidden and cannot submit scores."
        return ServiceError(403, "player_hidden", message, field="player_id")
    if code == "player_rate_limited":
        retry = str(max(1, math.ceil(int(detail) / 1000)))
        return ServiceError(
            429,
            "player_rate_limited",
            f"This player may submit {game.max_submissions_per_minute} scores per minute to a board; "
            f"retry in {retry} s.",
            field="player_id",
            headers={"Retry-After": retry},
        )
    if code == "ledger_full":
        return ServiceError(
            503,
            "ledger_full",
            "Scores are arriving faster than they can be recorded; nothing was applied. Retry shortly.",
            headers={"Retry-After": str(LEDGER_FULL_RETRY_SECS)},
        )
    if code == "overflow":
        limit = board.max_abs(detail)
        return ServiceError(
            422, "score_overflow", f"The {detail} total would pass ±{limit:,} and stop being exact.", field="score"
        )
    return ServiceError(
        422,
        "idempotency_mismatch",
        "This Idempotency-Key was used with a different request body.",
        field="Idempotency-Key",
    )


def _standings(board: BoardConfig, raw: list) -> dict[str, PeriodStanding]:
    standings = {}
    for i in range(2, len(raw), 4):
        kind, period_id, base, rank = raw[i : i + 4]
        standings[kind] = PeriodStanding(kind, period_id, board.score_from_base(base), int(rank))
    return standings


async def score_submit(
    *,
    game: GameConfig,
    board: BoardConfig,
    player_id: str,
    score: int,
    display_name: str | None = None,
    metadata: dict[str, Any] | None = None,
    idempotency: Idempotency | None = None,
) -> Submitted:
    """Apply one submission to every window of the board in one atomic script (then the
    game's names, recent list and presence in a second)."""
    item = Submission(player_id, score, display_name, metadata, board.slug)
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
    placed = [Submission(i.player_id, i.score, i.display_name, i.metadata, board.slug) for i in items]
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


def not_replicated() -> ServiceError:
    return ServiceError(
        503,
        "not_replicated",
        f"No replica confirmed this score within {settings.SCORE_ACK_TIMEOUT_MS} ms (SCORE_ACK=replica), so it "
        "is not acknowledged as stored. Retry with the same Idempotency-Key: it is applied exactly once.",
        headers={"Retry-After": "1"},
    )


async def _apply_to_boards(
    game: GameConfig,
    queued: Sequence[_Queued],
    now: dt.datetime,
    results: list[Submitted | ServiceError | None],
    unreplicated: set[int],
) -> list[tuple[_Queued, list]]:
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
    applied: list[tuple[_Queued, list]] = []
    for chunk, (replies, held) in zip(chunks, await _run_board_calls(calls), strict=True):
        for q, raw in zip(chunk, replies, strict=True):
            if raw[0] == "err":
                results[q.index] = _refused(q.board, game, raw)
            else:
                applied.append((q, raw))
                if not held:
                    # Applied on the primary, so the game's part still follows; only the answer
                    # differs, and a retry with the same Idempotency-Key replays it.
                    unreplicated.add(q.index)
    applied.sort(key=lambda pair: pair[0].index)
    return applied


async def _run_board_calls(calls: Sequence[tuple[list[str], list[str | int]]]) -> list[tuple[list, bool]]:
    """submit_score.lua per call, pipelined; with SCORE_ACK=replica each reply counts as held
    only once a replica has the call's writes (core/redis.py: scripts_replicated)."""
    started = time.perf_counter()
    if settings.SCORE_ACK == "replica":
        held = await scripts_replicated(
            scripts.SUBMIT_SCORE, calls, replicas=1, timeout_ms=settings.SCORE_ACK_TIMEOUT_MS
        )
    else:
        client = get_redis()
        await ensure_loaded(client, scripts.SUBMIT_SCORE, keys=[call_keys[0] for call_keys, _ in calls])
        pipe = client.pipeline(transaction=False)
        for call in calls:
            scripts.SUBMIT_SCORE.queue(pipe, *call)
        held = [(replies, True) for replies in await pipe.execute()]
    metrics.SUBMIT_SCRIPT_SECONDS.observe(time.perf_counter() - started)
    return held


async def _apply_to_game(
    game: GameConfig,
    applied: Sequence[tuple[_Queued, list]],
    now: dt.datetime,
    heartbeat: bool,
    results: list[Submitted | ServiceError | None],
) -> None:
    """The game's script for the applied items (names, recent list, presence), and the
    broadcaster's note of the boards that changed, in one pipelined round trip."""
    now_ms = clock.to_ms(now)
    client = get_redis()
    await ensure_loaded(client, scripts.SUBMIT_GAME, keys=[keys.names(game.slug)])
    pipe = client.pipeline(transaction=False)
    chunks = [applied[i : i + SUBMIT_CHUNK_ITEMS] for i in range(0, len(applied), SUBMIT_CHUNK_ITEMS)]
    for chunk in chunks:
        marks = [(q, not int(raw[1])) for q, raw in chunk]
        scripts.SUBMIT_GAME.queue(pipe, *_game_call(game, marks, now_ms, heartbeat))
    changed = {q.board.ref for q, raw in applied if not int(raw[1])}
    if changed:
        pipe.zadd(keys.live_changes(), dict.fromkeys(changed, now_ms), nx=True)
        queue_marks(pipe, {q.board for q, raw in applied if not int(raw[1])}, now, periods.board_current)
        if heartbeat:
            # A score is a heartbeat: a player may have come online.
            pipe.zadd(keys.live_presence_changes(), {game.slug: now_ms}, nx=True)
    replies = await pipe.execute()
    for chunk, names in zip(chunks, replies, strict=False):  # marks' replies come after the chunks
        for (q, raw), name in zip(chunk, names, strict=True):
            results[q.index] = Submitted(
                player_id=q.item.player_id,
                display_name=name,
                leaderboard=q.board.slug,
                periods=_standings(q.board, raw),
                metadata=q.item.metadata,
                replayed=bool(int(raw[1])),
            )


# --------------------------------------------------------------------------- players


async def _pending_players_read(slug: str, batch_size: int) -> list[str]:
    return await scripts.PENDING_PLAYERS_READ(get_redis(), [keys.pending_players(slug), keys.names(slug)], [batch_size])


async def _pending_players_ack(slug: str, ack: list[str]) -> list[str]:
    """Acknowledge; returns the players erased meanwhile, whose rows the sync must delete again."""
    reply = await scripts.PENDING_PLAYERS_ACK(get_redis(), [keys.pending_players(slug), keys.erased(slug)], ack)
    return cast("list[str]", reply[1:])


def players_sync_pending(*, batch_size: int = PLAYER_SYNC_BATCH_SIZE) -> int:
    """Create or refresh Player rows for players first seen (or renamed) in Redis.

    At-least-once: rows are upserted, then acknowledged only if not marked again
    meanwhile, so a crash between the two repeats a harmless upsert. A player the
    database refuses (a name with a NUL, stored before names were checked) becomes
    a dead letter and is acknowledged too: it never blocks the others.
    """
    written = 0
    for game in Game.objects.only("id", "slug"):
        while True:
            raw = run_sync(_pending_players_read, game.slug, batch_size)
            if not raw:
                break
            rows = [raw[i : i + 3] for i in range(0, len(raw), 3)]
            players = [
                Player(game=game, player_id=player_id, display_name=name[:64], first_seen_at=clock.from_ms(marked))
                for player_id, marked, name in rows
            ]
            store_or_set_aside(
                game=game,
                source=DeadLetter.Source.PLAYERS,
                rows=players,
                store=_upsert_players,
                describe=lambda player: (player.player_id, {"display_name": player.display_name}),
            )
            ack: list[str] = [value for player_id, marked, _ in rows for value in (player_id, marked)]
            erased = run_sync(_pending_players_ack, game.slug, ack)
            if erased:
                Player.objects.filter(game=game, player_id__in=erased).delete()
            written += len(rows)
            if len(rows) < batch_size:
                break
    return written


def _upsert_players(players: Sequence[Player]) -> None:
    Player.objects.bulk_create(
        players, update_conflicts=True, unique_fields=["game", "player_id"], update_fields=["display_name"]
    )


async def _set_hidden(game_slug: str, board_slugs: Sequence[str], player_id: str, hide: bool, now_ms: int) -> None:
    """Hide or restore the player on each board (one script per board, on its hash tag) and in
    the game's master set; every board is written before this returns."""
    client = get_redis()
    if hide:
        await client.sadd(keys.hidden(game_slug), player_id)
    else:
        await client.srem(keys.hidden(game_slug), player_id)
    for board_slug in board_slugs:
        ref = keys.board_ref(game_slug, board_slug)
        while True:
            boards = cast("list[str]", await client.zrangebyscore(keys.boards_index(ref), now_ms, "+inf"))
            key_list = [keys.board_hidden(ref), keys.boards_index(ref), keys.dirty(ref)]
            for board in boards:
                key_list += [board, keys.hidden_stash(board)]
            status, changed = await scripts.SET_PLAYER_HIDDEN(
                client, key_list, [player_id, "hide" if hide else "unhide", now_ms]
            )
            if status == "ok":
                break
        if int(changed):
            await client.zadd(keys.live_changes(), {ref: now_ms}, nx=True)


def hidden_restore(*, game_slug: str, player_ids: Sequence[str]) -> int:
    """The game's hidden players back into Redis where it lost them (the rebuild); the boards'
    copies come back with their swap."""
    if not player_ids:
        return 0
    return int(run_sync(lambda: scripts.HIDDEN_RESTORE(get_redis(), [keys.hidden(game_slug)], list(player_ids))))


def player_set_hidden(*, game: Game, player_id: str, hidden: bool, by: Actor = SYSTEM, reason: str = "") -> Player:
    """Hide a player from every board at once (and refuse their scores), or restore them."""
    reason = checked_reason(reason)
    now = clock.now()
    with transaction.atomic():
        player, _ = Player.objects.get_or_create(
            game=game, player_id=player_id, defaults={"display_name": player_id, "first_seen_at": now}
        )
        player.hidden = hidden
        player.save(update_fields=["hidden"])
        action = Action.HIDE if hidden else Action.UNHIDE
        audit_record(action=action, game_slug=game.slug, player_id=player_id, by=by, reason=reason)
        board_slugs = list(Leaderboard.objects.filter(game=game).values_list("slug", flat=True))
        run_sync(_set_hidden, game.slug, board_slugs, player_id, hidden, clock.to_ms(now))
    return player


def player_rename(*, player: Player, display_name: str, by: Actor = SYSTEM, reason: str = "") -> None:
    """An admin's correction of a display name, shown on every board at once (and findable by it)."""
    reason = checked_reason(reason)
    slug = player.game.slug
    with transaction.atomic():
        before = Player.objects.filter(pk=player.pk).values_list("display_name", flat=True).first()
        player.display_name = display_name
        player.full_clean()
        player.save(update_fields=["display_name"])
        detail = {"from": before or player.player_id, "to": display_name or player.player_id}
        audit_record(
            action=Action.RENAME, game_slug=slug, player_id=player.player_id, by=by, reason=reason, detail=detail
        )
        name = display_name or player.player_id
        run_sync(lambda: names_write(slug=slug, mode="set", names=[(player.player_id, name, False)]))


async def names_write(
    *, slug: str, mode: Literal["set", "restore", "index"], names: Sequence[tuple[str, str, bool]]
) -> int:
    """Set (``mode='set'``) or restore (``'restore'``: only names Redis lost) display names, with
    the name index in step; each is (player_id, name, mark the player for the player sync)."""
    written = 0
    for i in range(0, len(names), NAMES_WRITE_CHUNK):
        args: list[str | int] = [mode, clock.now_ms()]
        for player_id, name, mark in names[i : i + NAMES_WRITE_CHUNK]:
            args += [player_id, name, text.search_key(name), int(mark)]
        key_list = [
            keys.names(slug),
            keys.pending_players(slug),
            keys.name_index(slug),
            keys.name_keys(slug),
            keys.erased(slug),
        ]
        written += int(await scripts.NAMES_WRITE(get_redis(), key_list, args))
    return written


async def _index_some_names(slug: str, budget: int) -> bool:
    """Index up to ``budget`` names stored before the name index existed; True once all are."""
    client = get_redis()
    progress = await client.get(keys.name_index_progress(slug))
    if progress == "done":
        return True
    cursor = int(progress or 0)
    while budget > 0:
        cursor, found = await client.hscan(keys.names(slug), cursor, count=NAMES_WRITE_CHUNK)
        names = cast("dict[str, str]", found)
        await names_write(slug=slug, mode="index", names=[(p, n, False) for p, n in names.items()])
        budget -= len(names)
        if cursor == 0:
            await client.set(keys.name_index_progress(slug), "done")
            return True
    await client.set(keys.name_index_progress(slug), str(cursor))
    return False


def names_index_backfill(*, budget: int = NAMES_INDEX_BACKFILL_PER_RUN) -> int:
    """Index, a bounded number per game and run, the names stored before the name index
    existed (the player-sync beat task); returns how many games are not done yet."""
    pending = 0
    for game in Game.objects.only("slug"):
        if not run_sync(_index_some_names, game.slug, budget):
            pending += 1
    return pending
