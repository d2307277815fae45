"""In-process caches of game config and API keys: the score path reads no database.

Public reads may see a change up to ``GAME_CONFIG_CACHE_SECS`` late. Writes see
it at once: every change bumps the game's config version in Redis (signals.py),
the rate-limit script returns that version with each request, and a mismatch
reloads the entry before the submission is applied.
"""

from __future__ import annotations

from dataclasses import dataclass

from cachetools import TTLCache
from django.conf import settings

from . import clock, keys
from .models import SLUG_MAX_CHARS, ApiKey, Game
from .redis import get_redis


@dataclass(frozen=True)
class GameConfig:
    id: int
    slug: str
    name: str
    description: str
    order: str
    mode: str
    periods: tuple[str, ...]
    timezone: str
    min_score: int | None
    max_score: int | None
    max_submissions_per_minute: int
    presence_timeout_secs: int
    active: bool
    version: str

    @property
    def higher_is_better(self) -> bool:
        return self.order == Game.Order.DESC

    def sort_key(self, score: int) -> int:
        """Boards store ascending sort keys (best first): negate when higher is better."""
        return -score if self.higher_is_better else score

    def score_from_sort_key(self, raw: str) -> int:
        value = int(raw) if raw.lstrip("-").isdigit() else int(float(raw))
        return -value if self.higher_is_better else value

    @classmethod
    def from_model(cls, game: Game, version: str) -> GameConfig:
        return cls(
            id=game.pk,
            slug=game.slug,
            name=game.name,
            description=game.description,
            order=game.order,
            mode=game.mode,
            periods=tuple(p for p in ("daily", "weekly", "monthly", "all-time") if p in game.periods),
            timezone=game.timezone,
            min_score=game.min_score,
            max_score=game.max_score,
            max_submissions_per_minute=game.max_submissions_per_minute,
            presence_timeout_secs=game.presence_timeout_secs,
            active=game.active,
            version=version,
        )


@dataclass(frozen=True)
class ApiKeyConfig:
    prefix: str
    secret_hash: str
    game_id: int
    game_slug: str
    revoked: bool
    requests_per_minute: int
    items_per_minute: int


# Entries each cache holds at most: a flood of unknown game slugs or key prefixes
# (each cached as "no such thing", so that it costs no database query) evicts the
# oldest instead of growing the process. Far more than the games and keys a
# process serves at once.
CONFIG_CACHE_MAX_ENTRIES = 10_000


class _Caches:
    def __init__(self) -> None:
        ttl = settings.GAME_CONFIG_CACHE_SECS
        self.games: TTLCache[str, GameConfig | None] = TTLCache(CONFIG_CACHE_MAX_ENTRIES, ttl, timer=clock.monotonic)
        self.keys: TTLCache[str, ApiKeyConfig | None] = TTLCache(CONFIG_CACHE_MAX_ENTRIES, ttl, timer=clock.monotonic)
        self.game_list: TTLCache[str, list[GameConfig]] = TTLCache(1, ttl, timer=clock.monotonic)


_caches = _Caches()


def invalidate() -> None:
    """Forget everything this process cached (after a local change, and in tests)."""
    global _caches
    _caches = _Caches()


async def _version(slug: str) -> str:
    version = await get_redis().get(keys.config_version(slug))
    return str(version) if version is not None else "0"


async def get_game(slug: str, *, min_version: str | None = None) -> GameConfig | None:
    """The game's config, or None if no such game. ``min_version`` forces a reload if older."""
    if len(slug) > SLUG_MAX_CHARS:
        return None
    cache = _caches.games
    if slug in cache:
        cached = cache[slug]
        if min_version is None or cached is None or cached.version == min_version:
            return cached
    version = await _version(slug)
    game = await Game.objects.filter(slug=slug).afirst()
    config = GameConfig.from_model(game, version) if game else None
    cache[slug] = config
    return config


async def list_games() -> list[GameConfig]:
    """Active games, by name."""
    cache = _caches.game_list
    if "all" not in cache:
        cache["all"] = [GameConfig.from_model(g, "0") async for g in Game.objects.filter(active=True).order_by("name")]
    return cache["all"]


async def get_api_key(prefix: str, *, reload: bool = False) -> ApiKeyConfig | None:
    cache = _caches.keys
    if not reload and prefix in cache:
        return cache[prefix]
    key = await ApiKey.objects.select_related("game").filter(prefix=prefix).afirst()
    config = (
        ApiKeyConfig(
            prefix=key.prefix,
            secret_hash=key.secret_hash,
            game_id=key.game_id,
            game_slug=key.game.slug,
            revoked=key.revoked,
            requests_per_minute=key.requests_per_minute,
            items_per_minute=key.items_per_minute,
        )
        if key
        else None
    )
    cache[prefix] = config
    return config
