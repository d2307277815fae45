"""Writes. Views, API endpoints, tasks, admin actions and commands adapt to these.

The score path (:func:`score_submit`, :func:`score_submit_many`) is async and
touches only Redis and the in-process config caches; everything else is sync
and reaches Redis through :func:`leaderboard_site.redis.run_sync`.
"""

from __future__ import annotations

import datetime as dt
import hmac
import json
import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from leaderboard_site.redis import get_redis, run_sync
from presence.services import PRESENCE_ANNOUNCE_TTL_MS

from . import config, keys, periods, scripts
from .config import ApiKeyConfig, GameConfig
from .errors import ServiceError
from .models import DEFAULT_PRESENCE_TIMEOUT_SECS, MAX_SAFE_SCORE, ApiKey, Game, Player, hash_secret, is_player_id

# The anti-spam window is a sliding minute, as the game setting says "per minute".
PLAYER_SPAM_WINDOW_MS = 60_000
# The API-key limit is expressed per minute too (RateLimit-Policy w=60).
API_RATE_WINDOW_MS = 60_000
# Items per submit-script call in a batch: each call holds Redis for roughly
# this many times ~60 µs, so other clients wait a few ms at most.
SUBMIT_CHUNK_ITEMS = 100
# A refused submission (the ledger's database copy is behind) is worth retrying after
# about one drain interval.
LEDGER_FULL_RETRY_SECS = 5
# One drain of new players writes at most this many rows in one INSERT.
PLAYER_SYNC_BATCH_SIZE = 1000


def _now_ms(now: dt.datetime) -> int:
    return int(now.timestamp() * 1000)


# --------------------------------------------------------------------------- API keys


@dataclass(frozen=True)
class Authorized:
    api_key: ApiKeyConfig
    game: GameConfig
    rate_headers: dict[str, str]


def _split_key(raw: str) -> tuple[str, str] | None:
    # The secret is URL-safe base64 and may itself contain "_".
    parts = raw.split("_", 2)
    if len(parts) != 3 or parts[0] != "lbk" or len(parts[1]) != 8:
        return None
    return parts[1], parts[2]


async def request_authorize(*, raw_key: str | None, game_slug: str, now: dt.datetime | None = None) -> Authorized:
    """Check an API key for a game and take one request from its rate limit.

    Raises ServiceError: 401 missing/unknown key, 403 revoked or other game,
    404 unknown game, 403 inactive game, 429 over the limit.
    """
    now = now or timezone.now()
    if not raw_key:
        raise ServiceError(401, "missing_api_key", "Send the API key as 'Authorization: Bearer <key>'.")
    split = _split_key(raw_key)
    key = await config.get_api_key(split[0]) if split else None
    if split is None or key is None or not hmac.compare_digest(key.secret_hash, hash_secret(split[1])):
        raise ServiceError(401, "invalid_api_key", "Unknown API key.")
    if key.revoked:
        raise ServiceError(403, "revoked_api_key", "This API key has been revoked.")
    game = await config.get_game(game_slug)
    if game is None:
        raise ServiceError(404, "game_not_found", f"No game {game_slug!r}.")
    if key.game_id != game.id:
        raise ServiceError(403, "wrong_game", "This API key belongs to another game.")

    limit = key.requests_per_minute
    allowed, remaining, retry_ms, reset_ms, version = await scripts.RATE_LIMIT(
        get_redis(),
        [keys.api_rate(game.slug, key.prefix), keys.api_last_used(game.slug), keys.config_version(game.slug)],
        [_now_ms(now), limit, API_RATE_WINDOW_MS, key.prefix],
    )
    if version != game.version:
        # Something changed since this process cached it: look again before going on.
        key = await config.get_api_key(key.prefix, reload=True)
        game = await config.get_game(game_slug, min_version=version)
        if key is None or game is None:
            raise ServiceError(401, "invalid_api_key", "Unknown API key.")
        if key.revoked:
            raise ServiceError(403, "revoked_api_key", "This API key has been revoked.")
    headers = {
        "RateLimit-Policy": f'"api-key";q={limit};w={API_RATE_WINDOW_MS // 1000}',
        "RateLimit": f'"api-key";r={remaining};t={math.ceil(reset_ms / 1000)}',
    }
    if not allowed:
        retry = str(max(1, math.ceil(retry_ms / 1000)))
        raise ServiceError(
            429,
            "rate_limited",
            f"This API key is limited to {limit} requests per minute; retry in {retry} s.",
            headers={**headers, "Retry-After": retry},
        )
    if not game.active:
        raise ServiceError(403, "game_inactive", "This game is not accepting scores.")
    return Authorized(api_key=key, game=game, rate_headers=headers)


def api_key_create(*, game: Game, name: str = "", requests_per_minute: int | None = None) -> tuple[ApiKey, str]:
    """Create a key; returns it with the full secret, which is never shown again."""
    raw, prefix, secret_hash = ApiKey.generate()
    api_key = ApiKey(game=game, name=name, prefix=prefix, secret_hash=secret_hash)
    if requests_per_minute is not None:
        api_key.requests_per_minute = requests_per_minute
    api_key.full_clean()
    api_key.save()
    return api_key, raw


def api_key_revoke(*, api_key: ApiKey) -> None:
    if api_key.revoked_at is None:
        api_key.revoked_at = timezone.now()
        api_key.save(update_fields=["revoked_at"])


async def _last_used_times(slug: str) -> dict[str, str]:
    return await get_redis().hgetall(keys.api_last_used(slug))


def api_keys_sync_last_used() -> int:
    """Copy last-used times recorded by the rate-limit script into the database."""

    updated = 0
    for game in Game.objects.only("id", "slug"):
        for prefix, ms in run_sync(_last_used_times, game.slug).items():
            used = dt.datetime.fromtimestamp(int(ms) / 1000, tz=dt.UTC)
            updated += (
                ApiKey.objects.filter(game=game, prefix=prefix)
                .exclude(last_used_at__gte=used)
                .update(last_used_at=used)
            )
    return updated


# --------------------------------------------------------------------------- games


def game_create(
    *,
    slug: str,
    name: str,
    mode: str = Game.Mode.BEST,
    order: str = Game.Order.DESC,
    periods_kept: Sequence[str] = periods.PERIODS,
    timezone_name: str = "UTC",
    description: str = "",
    min_score: int | None = None,
    max_score: int | None = None,
    max_submissions_per_minute: int = 60,
    presence_timeout_secs: int = DEFAULT_PRESENCE_TIMEOUT_SECS,
) -> Game:
    game = Game(
        slug=slug,
        name=name,
        description=description,
        mode=mode,
        order=order,
        periods=list(periods_kept),
        timezone=timezone_name,
        min_score=min_score,
        max_score=max_score,
        max_submissions_per_minute=max_submissions_per_minute,
        presence_timeout_secs=presence_timeout_secs,
    )
    game.full_clean()
    game.save()
    return game


def config_changed(*, slug: str) -> None:
    """Tell every process that a game's config or keys changed (after commit)."""
    config.invalidate()
    run_sync(lambda: get_redis().incr(keys.config_version(slug)))


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
        raise ServiceError(422, "invalid", "1-64 characters of A-Z a-z 0-9 _ . : -", field="player_id")
    if isinstance(item.score, bool) or not isinstance(item.score, int) or abs(item.score) > MAX_SAFE_SCORE:
        raise ServiceError(422, "invalid", "Must be an integer with |score| <= 2^53-1.", field="score")
    if game.min_score is not None and item.score < game.min_score:
        raise ServiceError(422, "out_of_bounds", f"Must be at least {game.min_score} in this game.", field="score")
    if game.max_score is not None and item.score > game.max_score:
        raise ServiceError(422, "out_of_bounds", f"Must be at most {game.max_score} in this game.", field="score")
    if item.display_name is not None and len(item.display_name) > 64:
        raise ServiceError(422, "invalid", "At most 64 characters.", field="display_name")


@dataclass(frozen=True)
class _Queued:
    """One valid submission on its way to the submit script."""

    index: int
    item: Submission
    idempotency: Idempotency | None


def _chunk_call(
    game: GameConfig, chunk: Sequence[_Queued], now: dt.datetime, current: Sequence[periods.Period]
) -> tuple[list[str], list[str | int]]:
    """KEYS and ARGV of one submit-script call (see games/lua/submit_score.lua)."""
    now_ms = _now_ms(now)
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
        game.presence_timeout_secs * 1000,
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
        ]
        args += [
            item.player_id,
            game.sort_key(item.score),
            item.display_name or "",
            f"{call_id}:{queued.index}",
            json.dumps({"player_id": item.player_id, "score": item.score, "at": now_ms}),
            idem.fingerprint if idem else "",
            item.score,
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
    now: dt.datetime | None = None,
) -> Submitted:
    """Apply one submission to every period board of the game in one atomic script."""
    item = Submission(player_id, score, display_name)
    _check(game, item)
    now = now or timezone.now()
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
    now: dt.datetime | None = None,
) -> list[Submitted | ServiceError]:
    """Apply many submissions in one pipelined round trip; each is atomic on its own.

    Items go to Redis in chunks of SUBMIT_CHUNK_ITEMS per script call, so one call
    never holds Redis for long. Items already found invalid (a ServiceError) stay
    in place in the results. With an Idempotency-Key each item gets its own
    record, keyed by its position.
    """
    now = now or timezone.now()
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
        await scripts.ensure_loaded(client, scripts.SUBMIT_SCORE)
        pipe = client.pipeline(transaction=False)
        chunks = [queued[i : i + SUBMIT_CHUNK_ITEMS] for i in range(0, len(queued), SUBMIT_CHUNK_ITEMS)]
        for chunk in chunks:
            scripts.SUBMIT_SCORE.queue(pipe, *_chunk_call(game, chunk, now, current))
        for chunk, replies in zip(chunks, await pipe.execute(), strict=True):
            for queued_item, raw in zip(chunk, replies, strict=True):
                try:
                    results[queued_item.index] = _result(game, queued_item.item.player_id, raw)
                except ServiceError as error:
                    results[queued_item.index] = error
    return results  # type: ignore[return-value]


# --------------------------------------------------------------------------- players


async def _pending_players_read(slug: str, batch_size: int) -> list[str]:
    return await scripts.PENDING_PLAYERS_READ(get_redis(), [keys.pending_players(slug), keys.names(slug)], [batch_size])


async def _pending_players_ack(slug: str, ack: list[str]) -> int:
    return await scripts.PENDING_PLAYERS_ACK(get_redis(), [keys.pending_players(slug)], ack)


def players_sync_pending(*, batch_size: int = PLAYER_SYNC_BATCH_SIZE) -> int:
    """Create or refresh Player rows for players first seen (or renamed) in Redis.

    At-least-once: rows are upserted, then acknowledged only if not marked again
    meanwhile, so a crash between the two repeats a harmless upsert.
    """
    written = 0
    for game in Game.objects.only("id", "slug"):
        while True:
            raw = run_sync(_pending_players_read, game.slug, batch_size)
            if not raw:
                break
            rows = [raw[i : i + 3] for i in range(0, len(raw), 3)]
            Player.objects.bulk_create(
                [
                    Player(
                        game=game,
                        player_id=player_id,
                        display_name=name[:64],
                        first_seen_at=dt.datetime.fromtimestamp(int(float(marked)) / 1000, tz=dt.UTC),
                    )
                    for player_id, marked, name in rows
                ],
                update_conflicts=True,
                unique_fields=["game", "player_id"],
                update_fields=["display_name"],
            )
            ack: list[str] = [value for player_id, marked, _ in rows for value in (player_id, marked)]
            run_sync(_pending_players_ack, game.slug, ack)
            written += len(rows)
            if len(rows) < batch_size:
                break
    return written


async def _set_hidden(slug: str, player_id: str, hide: bool, now_ms: int) -> None:
    client = get_redis()
    while True:
        boards = await client.zrangebyscore(keys.boards_index(slug), now_ms, "+inf")
        key_list = [keys.hidden(slug), keys.boards_index(slug), keys.dirty(slug)]
        for board in boards:
            key_list += [board, keys.hidden_stash(slug, board)]
        status, _ = await scripts.SET_PLAYER_HIDDEN(client, key_list, [player_id, "hide" if hide else "unhide", now_ms])
        if status == "ok":
            return


def player_set_hidden(*, game: Game, player_id: str, hidden: bool, now: dt.datetime | None = None) -> Player:
    """Hide a player from every board at once (and refuse their scores), or restore them."""
    now = now or timezone.now()
    with transaction.atomic():
        player, _ = Player.objects.get_or_create(
            game=game, player_id=player_id, defaults={"display_name": player_id, "first_seen_at": now}
        )
        player.hidden = hidden
        player.save(update_fields=["hidden"])
        run_sync(_set_hidden, game.slug, player_id, hidden, _now_ms(now))
    return player


def player_rename(*, player: Player, display_name: str) -> None:
    """An admin's correction of a display name, shown on every board at once."""
    slug = player.game.slug
    with transaction.atomic():
        player.display_name = display_name
        player.full_clean()
        player.save(update_fields=["display_name"])
        run_sync(lambda: get_redis().hset(keys.names(slug), player.player_id, display_name or player.player_id))


# --------------------------------------------------------------------------- live pages

# A live page's interest in a player lapses this long after its last refresh...
FOLLOW_TTL_MS = 60_000
# ...and an open page refreshes it this often, so a closed page stops costing the broadcaster.
FOLLOW_REFRESH_SECS = 20.0


async def live_follow(*, game: GameConfig, player_ids: Sequence[str], now: dt.datetime | None = None) -> None:
    """Tell the broadcaster a live page follows these players (for FOLLOW_TTL_MS)."""
    if player_ids:
        expires = _now_ms(now or timezone.now()) + FOLLOW_TTL_MS
        await get_redis().zadd(keys.followed(game.slug), dict.fromkeys(player_ids, expires))
