"""In-process caches of game config and API keys: the score path reads no database.

Public reads may see a change up to ``GAME_CONFIG_CACHE_SECS`` late. Writes see
it at once: every change bumps the game's config version in Redis (signals.py),
the rate-limit script returns that version with each request, and a mismatch
reloads the entry before the submission is applied.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from django.conf import settings

from . import keys
from .models import ApiKey, Game
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


@dataclass
class _Entry:
    value: object
    loaded_at: float


_games: dict[str, _Entry] = {}
_keys: dict[str, _Entry] = {}
_game_list: _Entry | None = None


def _fresh(entry: _Entry | None) -> bool:
    return entry is not None and time.monotonic() - entry.loaded_at < settings.GAME_CONFIG_CACHE_SECS


def invalidate() -> None:
    """Forget everything this process cached (after a local change, and in tests)."""
    global _game_list
    _games.clear()
    _keys.clear()
    _game_list = None


async def _version(slug: str) -> str:
    return await get_redis().get(keys.config_version(slug)) or "0"


async def get_game(slug: str, *, min_version: str | None = None) -> GameConfig | None:
    """The game's config, or None if no such game. ``min_version`` forces a reload if older."""
    entry = _games.get(slug)
    if _fresh(entry) and (min_version is None or entry.value is None or entry.value.version == min_version):  # type: ignore[union-attr]
        return entry.value  # type: ignore[union-attr,return-value]
    version = await _version(slug) if len(slug) <= 50 else "0"
    game = await Game.objects.filter(slug=slug).afirst() if len(slug) <= 50 else None
    config = GameConfig.from_model(game, version) if game else None
    _games[slug] = _Entry(config, time.monotonic())
    return config


async def list_games() -> list[GameConfig]:
    """Active games, by name."""
    global _game_list
    if _fresh(_game_list):
        return _game_list.value  # type: ignore[union-attr,return-value]
    configs = [GameConfig.from_model(g, "0") async for g in Game.objects.filter(active=True).order_by("name")]
    _game_list = _Entry(configs, time.monotonic())
    return configs


async def get_api_key(prefix: str, *, reload: bool = False) -> ApiKeyConfig | None:
    entry = _keys.get(prefix)
    if not reload and _fresh(entry):
        return entry.value  # type: ignore[union-attr,return-value]
    key = await ApiKey.objects.select_related("game").filter(prefix=prefix).afirst()
    config = (
        ApiKeyConfig(
            prefix=key.prefix,
            secret_hash=key.secret_hash,
            game_id=key.game_id,
            game_slug=key.game.slug,
            revoked=key.revoked,
            requests_per_minute=key.requests_per_minute,
        )
        if key
        else None
    )
    _keys[prefix] = _Entry(config, time.monotonic())
    return config
