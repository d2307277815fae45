"""API keys: authorize a request (the key, its game, its rate limit), create, revoke,
and copy last-used times to the database.

The request path reads no database when caches are warm (core/config.py): one
script call checks the rate limit, records the key's use and returns the game's
config version, so a revocation or a change applies to the very next request.
"""

from __future__ import annotations

import hmac
import math
from dataclasses import dataclass
from typing import cast

from . import clock, config, errors, keys, metrics, scripts
from .audit import Actor
from .config import ApiKeyConfig, GameConfig
from .models import ApiKey, Game, hash_secret
from .redis import get_redis, run_sync

# The API-key limit is expressed per minute (RateLimit-Policy w=60).
API_RATE_WINDOW_MS = 60_000


@dataclass(frozen=True)
class Authorized:
    api_key: ApiKeyConfig
    game: GameConfig
    rate_headers: dict[str, str]

    @property
    def actor(self) -> Actor:
        """Who acts, in the audit trail: the key, by its public prefix."""
        return Actor(name=f"API key lbk_{self.api_key.prefix}")


def _split_key(raw: str) -> tuple[str, str] | None:
    # The secret is URL-safe base64 and may itself contain "_".
    parts = raw.split("_", 2)
    if len(parts) != 3 or parts[0] != "lbk" or len(parts[1]) != 8:
        return None
    return parts[1], parts[2]


async def request_authorize(*, raw_key: str | None, game_slug: str, items: int = 1) -> Authorized:
    """Check an API key for a game and take one request, and ``items`` items, from its budgets.

    Raises ServiceError: 401 missing/unknown key, 403 revoked or other game,
    404 unknown game, 403 inactive game, 429 over the limit.
    """
    if not raw_key:
        raise errors.missing_api_key()
    split = _split_key(raw_key)
    key = await config.get_api_key(split[0]) if split else None
    if split is None or key is None or not hmac.compare_digest(key.secret_hash, hash_secret(split[1])):
        raise errors.invalid_api_key()
    if key.revoked:
        raise errors.revoked_api_key()
    game = await config.get_game(game_slug)
    if game is None:
        raise errors.game_not_found(slug=game_slug)
    if key.game_id != game.id:
        raise errors.wrong_game()

    taken = await scripts.rate_limit(
        get_redis(),
        slug=game.slug,
        prefix=key.prefix,
        now_ms=clock.now_ms(),
        window_ms=API_RATE_WINDOW_MS,
        requests_per_window=key.requests_per_minute,
        items_per_window=key.items_per_minute,
        items=items,
    )
    version = taken.config_version
    if version != game.version:
        # Something changed since this process cached it: look again before going on.
        reloaded_key = await config.get_api_key(key.prefix, reload=True)
        reloaded_game = await config.get_game(game_slug, min_version=version)
        if reloaded_key is None or reloaded_game is None:
            raise errors.invalid_api_key()
        if reloaded_key.revoked:
            raise errors.revoked_api_key()
        key, game = reloaded_key, reloaded_game
    window = API_RATE_WINDOW_MS // 1000
    headers = {
        "RateLimit-Policy": f'"api-key";q={key.requests_per_minute};w={window}, '
        f'"items";q={key.items_per_minute};w={window}',
        "RateLimit": f'"api-key";r={taken.requests_left};t={math.ceil(taken.requests_reset_ms / 1000)}, '
        f'"items";r={taken.items_left};t={math.ceil(taken.items_reset_ms / 1000)}',
    }
    if taken.refused_by is not None:
        retry_secs = max(1, math.ceil(taken.retry_ms / 1000))
        if taken.refused_by is scripts.Budget.ITEMS:
            message = (
                f"This API key may send {key.items_per_minute} items (scores, player ids) per minute; "
                f"retry in {retry_secs} s."
            )
        else:
            message = (
                f"This API key is limited to {key.requests_per_minute} requests per minute; retry in {retry_secs} s."
            )
        metrics.RATE_LIMITED.labels(limit="items" if taken.refused_by is scripts.Budget.ITEMS else "api-key").inc()
        raise errors.rate_limited(message, retry_secs=retry_secs, headers=headers)
    if not game.active:
        raise errors.game_inactive()
    return Authorized(api_key=key, game=game, rate_headers=headers)


def api_key_create(
    *,
    game: Game,
    name: str = "",
    scope: str = ApiKey.Scope.SUBMIT,
    requests_per_minute: int | None = None,
    items_per_minute: int | None = None,
) -> tuple[ApiKey, str]:
    """Create a key; returns it with the full secret, which is never shown again."""
    raw, prefix, secret_hash = ApiKey.generate()
    api_key = ApiKey(game=game, name=name, scope=scope, prefix=prefix, secret_hash=secret_hash)
    if requests_per_minute is not None:
        api_key.requests_per_minute = requests_per_minute
    if items_per_minute is not None:
        api_key.items_per_minute = items_per_minute
    api_key.full_clean()
    api_key.save()
    return api_key, raw


def api_key_revoke(*, api_key: ApiKey) -> None:
    if api_key.revoked_at is None:
        api_key.revoked_at = clock.now()
        api_key.save(update_fields=["revoked_at"])


# Games whose last-used hashes the sync reads in one round trip.
LAST_USED_GAMES_PER_PIPELINE = 500
# The sync remembers, per process, the last-used time it last copied for this many keys at most
# (past it, it starts again: each key is then compared in the database once more).
LAST_USED_MEMORY_MAX_KEYS = 100_000

# (game id, key prefix) -> the last-used time (epoch ms, as Redis holds it) already copied, so
# a key not used since costs no query: the sync's cost follows the keys in use, not all keys.
_copied: dict[tuple[int, str], str] = {}


async def _last_used_times(slugs: list[str]) -> list[dict[str, str]]:
    replies: list[dict[str, str]] = []
    for start in range(0, len(slugs), LAST_USED_GAMES_PER_PIPELINE):
        pipe = get_redis().pipeline(transaction=False)
        for slug in slugs[start : start + LAST_USED_GAMES_PER_PIPELINE]:
            pipe.hgetall(keys.api_last_used(slug))
        replies += cast("list[dict[str, str]]", await pipe.execute())
    return replies


def api_keys_sync_last_used() -> int:
    """Copy last-used times recorded by the rate-limit script into the database.

    One query for the games and one round trip per LAST_USED_GAMES_PER_PIPELINE games; an
    update only for a key used since this process last copied its time.
    """
    games = list(Game.objects.values_list("id", "slug"))
    if len(_copied) > LAST_USED_MEMORY_MAX_KEYS:
        _copied.clear()
    updated = 0
    for (game_id, _slug), times in zip(games, run_sync(_last_used_times, [slug for _, slug in games]), strict=True):
        for prefix, ms in times.items():
            if _copied.get((game_id, prefix)) == ms:
                continue
            used = clock.from_ms(ms)
            updated += (
                ApiKey.objects.filter(game_id=game_id, prefix=prefix)
                .exclude(last_used_at__gte=used)
                .update(last_used_at=used)
            )
            _copied[(game_id, prefix)] = ms
    return updated
