"""Board writes: submissions, hiding and renaming players, copying new players to the
database. Views, API endpoints, tasks, admin actions and commands adapt to these.

The score path (:func:`score_submit`, :func:`score_submit_many`) is async and
touches only Redis and the in-process config caches; everything else is sync
and reaches Redis through :func:`core.redis.run_sync`.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, cast

from django.conf import settings
from django.db import transaction

from core import clock, keys, text
from core.audit import SYSTEM, Action, Actor, audit_record, checked_reason
from core.config import GameConfig
from core.deadletters import store_or_set_aside
from core.errors import ServiceError
from core.lua import ensure_loaded
from core.models import MAX_SAFE_SCORE, PLAYER_ID_MESSAGE, DeadLetter, Game, Player, is_player_id
from core.redis import get_redis, run_sync
from presence.services import PRESENCE_ANNOUNCE_TTL_MS

from . import periods, scripts

# The anti-spam window is a sliding minute, as the game setting says "per minute".
PLAYER_SPAM_WINDOW_MS = 60_000
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
    periods: dict[str, PeriodStanding]
    replayed: bool


@dataclass(frozen=True)
class Submission:
    player_id: str
    score: int
    display_name: str | None = None


@dataclass(frozen=True)
class Idempotency:
    """An Idempotency-Key scoped to the API key, with a fingerprint of the request body."""

    key_prefix: str
    key: str
    fingerprint: str


def _check(game: GameConfig, item: Submission) -> None:
    if not is_player_id(item.player_id):
        raise ServiceError(422, "invalid", PLAYER_ID_MESSAGE, field="player_id")
    if type(item.score) is not int or abs(item.score) > MAX_SAFE_SCORE:  # bool and float included
        raise ServiceError(422, "invalid", "Must be an integer with |score| <= 2^53-1.", field="score")
    if game.min_score is not None and item.score < game.min_score:
        raise ServiceError(422, "out_of_bounds", f"Must be at least {game.min_score} in this game.", field="score")
    if game.max_score is not None and item.score > game.max_score:
        raise ServiceError(422, "out_of_bounds", f"Must be at most {game.max_score} in this game.", field="score")
    if item.display_name is not None and len(item.display_name) > 64:
        raise ServiceError(422, "invalid", "At most 64 characters.", field="display_name")
    if item.display_name is not None and text.has_control_characters(item.display_name):
        raise ServiceError(422, "invalid", text.CONTROL_MESSAGE, field="display_name")


@dataclass(frozen=True)
class _Queued:
    """One valid submission on its way to the submit script."""

    index: int
    item: Submission
    idempotency: Idempotency | None


def _chunk_call(
    game: GameConfig,
    chunk: Sequence[_Queued],
    now: dt.datetime,
    current: Sequence[periods.Period],
    *,
    heartbeat: bool = True,
) -> tuple[list[str], list[str | int]]:
    """KEYS and ARGV of one submit-script call (see games/lua/submit_score.lua)."""
    now_ms = clock.to_ms(now)
    slug = game.slug
    key_list = [
        keys.names(slug),
        keys.hidden(slug),
        keys.recent(slug),
        keys.pending_players(slug),
        keys.boards_index(slug),
        keys.dirty(slug),
        keys.presence_online(slug),
        keys.presence_last_seen(slug),
        keys.presence_joined(slug),
        keys.presence_left(slug),
        keys.close_jobs(slug),
        keys.ledger(slug),
        keys.name_index(slug),
        keys.name_keys(slug),
        *(keys.board(slug, p.kind, p.id) for p in current),
    ]
    args: list[str | int] = [
        game.mode,
        now_ms,
        game.max_submissions_per_minute,
        PLAYER_SPAM_WINDOW_MS,
        settings.RECENT_SUBMISSIONS_MAX,
        settings.IDEMPOTENCY_TTL_SECS * 1000,
        MAX_SAFE_SCORE,
        len(current),
        game.presence_timeout_secs * 1000 if heartbeat else "",
        PRESENCE_ANNOUNCE_TTL_MS,
        settings.ARCHIVE_GRACE_SECS * 1000,
        settings.LEDGER_STREAM_MAXLEN,
    ]
    for p in current:
        args += [p.kind, p.id, "" if p.ends_at_ms is None else p.ends_at_ms]
    placeholder = keys.idempotency(slug, "-", "-")
    call_id = uuid.uuid4().hex
    for queued in chunk:
        item, idem = queued.item, queued.idempotency
        key_list += [
            keys.player_spam(slug, item.player_id),
            keys.idempotency(slug, idem.key_prefix, idem.key, queued.index) if idem else placeholder,
            keys.presence_tabs(slug, item.player_id),
            keys.player_idempotency(slug, item.player_id),
        ]
        args += [
            item.player_id,
            game.sort_key(item.score),
            item.display_name or "",
            f"{call_id}:{queued.index}",
            json.dumps({"player_id": item.player_id, "score": item.score, "at": now_ms}),
            idem.fingerprint if idem else "",
            item.score,
            text.search_key(item.display_name or item.player_id),
        ]
    return key_list, args


def _result(game: GameConfig, player_id: str, raw: list) -> Submitted:
    if raw[0] == "err":
        code, detail = raw[1], raw[2]
        if code == "hidden":
            message = "This player is hidden and cannot submit scores."
            raise ServiceError(403, "player_hidden", message, field="player_id")
        if code == "player_rate_limited":
            retry = str(max(1, math.ceil(int(detail) / 1000)))
            raise ServiceError(
                429,
                "player_rate_limited",
                f"This player may submit {game.max_submissions_per_minute} scores per minute; retry in {retry} s.",
                field="player_id",
                headers={"Retry-After": retry},
            )
        if code == "ledger_full":
            raise ServiceError(
                503,
                "ledger_full",
                "Scores are arriving faster than they can be recorded; nothing was applied. Retry shortly.",
                headers={"Retry-After": str(LEDGER_FULL_RETRY_SECS)},
            )
        if code == "overflow":
            raise ServiceError(
                422, "score_overflow", f"The {detail} total would pass 2^53-1 and stop being exact.", field="score"
            )
        raise ServiceError(
            422,
            "idempotency_mismatch",
            "This Idempotency-Key was used with a different request body.",
            field="Idempotency-Key",
        )
    standings = {}
    for i in range(3, len(raw), 4):
        kind, period_id, sort_key, rank = raw[i : i + 4]
        standings[kind] = PeriodStanding(kind, period_id, game.score_from_sort_key(sort_key), int(rank))
    return Submitted(player_id=player_id, display_name=raw[2], periods=standings, replayed=bool(int(raw[1])))


async def score_submit(
    *,
    game: GameConfig,
    player_id: str,
    score: int,
    display_name: str | None = None,
    idempotency: Idempotency | None = None,
) -> Submitted:
    """Apply one submission to every period board of the game in one atomic script."""
    item = Submission(player_id, score, display_name)
    _check(game, item)
    now = clock.now()
    current = [periods.current(kind, game.timezone, now) for kind in game.periods]
    key_list, args = _chunk_call(game, [_Queued(0, item, idempotency)], now, current)
    (raw,) = await scripts.SUBMIT_SCORE(get_redis(), key_list, args)
    return _result(game, player_id, raw)


async def score_submit_many(
    *,
    game: GameConfig,
    items: Sequence[Submission | ServiceError],
    idempotency: Idempotency | None = None,
    item_fingerprints: Sequence[str] | None = None,
) -> list[Submitted | ServiceError]:
    """Apply many submissions in one pipelined round trip; each is atomic on its own.

    Items go to Redis in chunks of SUBMIT_CHUNK_ITEMS per script call, so one call
    never holds Redis for long. Items already found invalid (a ServiceError) stay
    in place in the results. With an Idempotency-Key each item gets its own
    record, keyed by its position.
    """
    return await _submit_many(game, items, idempotency, item_fingerprints, clock.now())


async def score_import(
    *, game: GameConfig, items: Sequence[Submission], at: dt.datetime
) -> list[Submitted | ServiceError]:
    """Apply submissions as if made at ``at`` (history from elsewhere, the demo seed):
    they land on the boards of the periods that contain ``at``. Unlike a live score,
    an imported one does not show its player online."""
    return await _submit_many(game, items, None, None, at, heartbeat=False)


async def _submit_many(
    game: GameConfig,
    items: Sequence[Submission | ServiceError],
    idempotency: Idempotency | None,
    item_fingerprints: Sequence[str] | None,
    now: dt.datetime,
    *,
    heartbeat: bool = True,
) -> list[Submitted | ServiceError]:
    if not game.periods:
        raise ServiceError(
            404, "board_not_found", f"{game.name} has no leaderboard yet: create one with manage.py createleaderboard."
        )
    current = [periods.current(kind, game.timezone, now) for kind in game.periods]
    results: list[Submitted | ServiceError | None] = [None] * len(items)
    queued: list[_Queued] = []
    for i, item in enumerate(items):
        if isinstance(item, ServiceError):
            results[i] = item
            continue
        try:
            _check(game, item)
        except ServiceError as error:
            results[i] = error
            continue
        item_idem = (
            Idempotency(idempotency.key_prefix, idempotency.key, item_fingerprints[i])
            if idempotency and item_fingerprints
            else None
        )
        queued.append(_Queued(i, item, item_idem))
    if queued:
        client = get_redis()
        await ensure_loaded(client, scripts.SUBMIT_SCORE)
        pipe = client.pipeline(transaction=False)
        chunks = [queued[i : i + SUBMIT_CHUNK_ITEMS] for i in range(0, len(queued), SUBMIT_CHUNK_ITEMS)]
        for chunk in chunks:
            scripts.SUBMIT_SCORE.queue(pipe, *_chunk_call(game, chunk, now, current, heartbeat=heartbeat))
        for chunk, replies in zip(chunks, await pipe.execute(), strict=True):
            for queued_item, raw in zip(chunk, replies, strict=True):
                try:
                    results[queued_item.index] = _result(game, queued_item.item.player_id, raw)
                except ServiceError as error:
                    results[queued_item.index] = error
    return [r for r in results if r is not None]  # every position was filled above


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


async def _set_hidden(slug: str, player_id: str, hide: bool, now_ms: int) -> None:
    client = get_redis()
    while True:
        boards = cast("list[str]", await client.zrangebyscore(keys.boards_index(slug), now_ms, "+inf"))
        key_list = [keys.hidden(slug), keys.boards_index(slug), keys.dirty(slug)]
        for board in boards:
            key_list += [board, keys.hidden_stash(slug, board)]
        status, _ = await scripts.SET_PLAYER_HIDDEN(client, key_list, [player_id, "hide" if hide else "unhide", now_ms])
        if status == "ok":
            return


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
        run_sync(_set_hidden, game.slug, player_id, hidden, clock.to_ms(now))
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
