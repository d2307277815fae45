"""In-process caches of game config and API keys: the score path reads no database.

Public reads may see a change up to ``GAME_CONFIG_CACHE_SECS`` late. Writes see
it at once: every change bumps the game's config version in Redis (signals.py),
the rate-limit script returns that version with each request, and a mismatch
reloads the entry before the submission is applied.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import logging
from dataclasses import dataclass

from cachetools import TTLCache
from django.conf import settings

from . import board_rules, clock, competition_rules, keys
from .competition_rules import Competition
from .errors import DATABASE_ERRORS, UNAVAILABLE_ERRORS, report_unavailable
from .models import SLUG_MAX_CHARS, ApiKey, Game, Leaderboard
from .redis import get_redis

logger = logging.getLogger(__name__)
_DESC: str = str(Leaderboard.Order.DESC.value)


@dataclass(frozen=True)
class BoardConfig:
    """One leaderboard's settings, as the request path reads them (no database)."""

    id: int
    game_slug: str
    slug: str
    name: str
    description: str
    order: str
    mode: str
    windows: tuple[str, ...]
    cron: str
    timezone: str  # resolved: the board's own zone, else its game's
    starts_at: dt.datetime | None
    ends_at: dt.datetime | None
    ties: str
    subscore_order: str
    format: str
    min_score: int | None
    max_score: int | None
    active: bool
    # The last time the board was taken out of play and brought back (games/periods.py: a
    # period that held both continues as a new generation).
    closed_at: dt.datetime | None = None
    reopened_at: dt.datetime | None = None
    # Its competition settings as stored (issue 22), and the rules they make: None for a board
    # that does not compete.
    competition_window: str = ""
    entry: str = competition_rules.OPEN
    max_entrants: int | None = None
    entry_window_secs: int | None = None
    max_attempts: int | None = None
    cohort_size: int | None = None
    cohort_fill: str = competition_rules.FIRST_COME
    cohort_by: str = competition_rules.BY_NONE
    competition: Competition | None = None
    # The studio's own names of some windows ("custom" -> "Race week"), as pairs: a config is
    # hashed (sets of boards), so it holds no dict.
    window_label_pairs: tuple[tuple[str, str], ...] = ()

    @property
    def window_labels(self) -> dict[str, str]:
        return dict(self.window_label_pairs)

    def window_label(self, kind: str) -> str:
        return board_rules.window_label(self.window_labels, kind)

    @property
    def higher_is_better(self) -> bool:
        # Against the plain string: comparing with the enum member costs ten times as much, and
        # a settlement asks once per entrant.
        return self.order == _DESC

    @property
    def ref(self) -> str:
        """The board's name in Redis keys and live messages: 'game.board'."""
        return keys.board_ref(self.game_slug, self.slug)

    def is_open(self, at: dt.datetime) -> bool:
        """Whether the board takes scores at ``at``: active, and within its season if it has one."""
        if not self.active:
            return False
        return (self.starts_at is None or at >= self.starts_at) and (self.ends_at is None or at < self.ends_at)

    @property
    def has_subscore(self) -> bool:
        return self.ties == board_rules.SUBSCORE

    def sort_base(self, score: int) -> int:
        """Boards sort ascending (best first): the score, negated when higher is better
        (core/lua/prelude/entries.lua)."""
        return -score if self.higher_is_better else score

    def score_from_base(self, base: int) -> int:
        """The score of a sort base the scripts return."""
        return -base if self.higher_is_better else base

    def sub_oriented(self, subscore: int) -> int:
        """A subscore oriented like the base (ascending is better)."""
        return -subscore if self.subscore_order == Leaderboard.Order.DESC else subscore

    def subscore_of(self, sub: int) -> int | None:
        """The subscore of an oriented one, or None on a board without subscores."""
        if not self.has_subscore:
            return None
        return -sub if self.subscore_order == Leaderboard.Order.DESC else sub

    @classmethod
    def from_model(cls, board: Leaderboard, game: Game) -> BoardConfig:
        return cls(
            id=board.pk,
            game_slug=game.slug,
            slug=board.slug,
            name=board.name,
            description=board.description,
            order=board.order,
            mode=board.mode,
            windows=tuple(w for w in board_rules.WINDOWS if w in board.windows),
            window_label_pairs=tuple(
                (w, board.window_labels[w]) for w in board_rules.WINDOWS if w in (board.window_labels or {})
            ),
            cron=board.cron,
            timezone=board.timezone or game.timezone,
            starts_at=board.starts_at,
            ends_at=board.ends_at,
            ties=board.ties,
            subscore_order=board.subscore_order,
            format=board.format,
            min_score=board.min_score,
            max_score=board.max_score,
            active=board.active,
            closed_at=board.closed_at,
            reopened_at=board.reopened_at,
            competition_window=board.competition_window,
            entry=board.entry,
            max_entrants=board.max_entrants,
            entry_window_secs=board.entry_window_secs,
            max_attempts=board.max_attempts,
            cohort_size=board.cohort_size,
            cohort_fill=board.cohort_fill,
            cohort_by=board.cohort_by,
            competition=_competition(board, game),
        )


def _competition(board: Leaderboard, game: Game) -> Competition | None:
    try:
        return board.competition()
    except board_rules.RuleError as exc:
        # A saved board passed these rules; one that no longer does (a row written around the
        # model, rules made stricter since) competes in nothing rather than breaking its game's
        # config, which every score of the game reads.
        logger.error(
            "board %s.%s: competition settings refused (%s: %s); it does not compete",
            game.slug,
            board.slug,
            exc.field,
            exc,
        )
        return None


@dataclass(frozen=True)
class GameConfig:
    id: int
    slug: str
    name: str
    description: str
    timezone: str
    max_submissions_per_minute: int
    presence_timeout_secs: int
    active: bool
    version: str
    boards: tuple[BoardConfig, ...]
    # Branding and embedding (core/branding.py): "" where the studio set none.
    short_name: str = ""
    accent: str = ""
    logo_version: str = ""
    embed_origins: tuple[str, ...] = ()

    @property
    def shown_name(self) -> str:
        """The name where room is short: the short name, else the name."""
        return self.short_name or self.name

    def board_named(self, slug: str) -> BoardConfig | None:
        """The game's board with this slug (active or not), or None."""
        return self._by_slug.get(slug)

    @functools.cached_property
    def _by_slug(self) -> dict[str, BoardConfig]:
        # A batch looks a board up per item: one dict, not a scan of a game's many boards.
        return {b.slug: b for b in self.boards}

    @property
    def first_board(self) -> BoardConfig | None:
        """The board shown where none is named (pages, the home card, a socket's subscribe):
        the game's first active one."""
        return next((b for b in self.boards if b.active), None)

    @classmethod
    def from_model(cls, game: Game, version: str) -> GameConfig:
        """The config of ``game``; its boards are read from the database unless prefetched
        (``prefetch_related("leaderboards")``, as async callers do: then no query runs)."""
        boards = list(game.leaderboards.all())
        return cls(
            id=game.pk,
            slug=game.slug,
            name=game.name,
            description=game.description,
            timezone=game.timezone,
            max_submissions_per_minute=game.max_submissions_per_minute,
            presence_timeout_secs=game.presence_timeout_secs,
            active=game.active,
            version=version,
            boards=tuple(BoardConfig.from_model(b, game) for b in boards),
            short_name=game.short_name,
            accent=game.accent,
            logo_version=game.logo_version,
            embed_origins=tuple(game.embed_origins or ()),
        )


@dataclass(frozen=True)
class ApiKeyConfig:
    prefix: str
    secret_hash: str
    game_id: int
    game_slug: str
    scope: str
    revoked: bool
    requests_per_minute: int
    items_per_minute: int


# Entries each cache holds at most: a flood of unknown game slugs or key prefixes
# (each cached as "no such thing", so that it costs no database query) evicts the
# oldest instead of growing the process. Far more than the games and keys a
# process serves at once.
CONFIG_CACHE_MAX_ENTRIES = 10_000
# The game list is read again at least this often even if no change was announced (an
# announcement lost while Redis was down): a reload of thousands of boards costs a tick
# a few hundred ms, so not every GAME_CONFIG_CACHE_SECS.
GAME_LIST_MAX_AGE_SECS = 300
# Entries the config change log (keys.config_changes) keeps, about: a process whose list is
# older than that many changes reads the whole list again instead.
CONFIG_CHANGES_KEPT = 10_000
# Changes one reload of the game list takes in one by one at most; past it, the whole list is
# read again (as cheap by then).
CONFIG_CHANGES_READ_MAX = 1000


# While the database is unreachable, the last game and key configs read are served for up to
# this long, so that scores (which go to Redis) keep flowing on what was known: a change made
# just before the outage may not be seen meanwhile, and nothing can be changed.
CONFIG_STALE_MAX_SECS = 3600


class _Caches:
    def __init__(self) -> None:
        ttl = settings.GAME_CONFIG_CACHE_SECS
        self.games: TTLCache[str, GameConfig | None] = TTLCache(CONFIG_CACHE_MAX_ENTRIES, ttl, timer=clock.monotonic)
        self.keys: TTLCache[str, ApiKeyConfig | None] = TTLCache(CONFIG_CACHE_MAX_ENTRIES, ttl, timer=clock.monotonic)
        # The last of each read, for a database outage (CONFIG_STALE_MAX_SECS).
        self.last_games: TTLCache[str, GameConfig | None] = TTLCache(
            CONFIG_CACHE_MAX_ENTRIES, CONFIG_STALE_MAX_SECS, timer=clock.monotonic
        )
        self.last_keys: TTLCache[str, ApiKeyConfig | None] = TTLCache(
            CONFIG_CACHE_MAX_ENTRIES, CONFIG_STALE_MAX_SECS, timer=clock.monotonic
        )
        # The game list with the config epoch it was read at.
        self.game_list: TTLCache[str, _GameList] = TTLCache(1, GAME_LIST_MAX_AGE_SECS, timer=clock.monotonic)


_caches = _Caches()


def invalidate() -> None:
    """Forget everything this process cached (after a local change, and in tests)."""
    global _caches
    _caches = _Caches()


async def _version(slug: str) -> str:
    version = await get_redis().get(keys.config_version(slug))
    return str(version) if version is not None else "0"


# Games with their boards in one more query, so that GameConfig.from_model runs none.
# The logo's bytes stay in the database: pages and the widget fetch it by its own URL.
_WITH_BOARDS = Game.objects.defer("logo").prefetch_related("leaderboards")


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
    try:
        game = await _WITH_BOARDS.filter(slug=slug).afirst()
    except DATABASE_ERRORS as error:
        if slug not in _caches.last_games:
            raise
        report_unavailable(error, during="a game's config reload (the last one read is served)")
        # Served as if read again: the next reload is one cache period away, not the next request.
        cache[slug] = last = _caches.last_games[slug]
        return last
    config = GameConfig.from_model(game, version) if game else None
    cache[slug] = _caches.last_games[slug] = config
    return config


@dataclass(frozen=True)
class _GameList:
    epoch: str  # the config epoch it was read at ('unknown' while Redis was down)
    last_change: str  # the id of the last config change-log entry it took in ('0-0': none)
    games: list[GameConfig]


async def list_games() -> list[GameConfig]:
    """Active games, by name (then id). Read again when any game's config changed (the config
    epoch in Redis moved): only the games and boards named in the change log since, unless
    that log cannot say (then all of them). Otherwise the list already read, the same object;
    and a game that did not change keeps its object in a new list (the broadcaster re-indexes
    only the games whose object is another one)."""
    cached = _caches.game_list.get("all")
    try:
        found = await get_redis().get(keys.config_epoch())
    except UNAVAILABLE_ERRORS:
        # Redis is down: the list comes from the database alone (kept until Redis answers).
        if cached is not None:
            return cached.games
        return await _list_all("unknown", "0-0", None)
    epoch = str(found) if found is not None else "0"
    if cached is not None and cached.epoch == epoch:
        return cached.games
    try:
        epoch, last_change, changes = await _changes_since(cached)
    except UNAVAILABLE_ERRORS:
        return cached.games if cached is not None else await _list_all("unknown", "0-0", None)
    if cached is None or changes is None:
        return await _list_all(epoch, last_change, cached)
    games = await _apply_changes(cached.games, changes)
    _caches.game_list["all"] = _GameList(epoch, last_change, games)
    return games


async def _changes_since(cached: _GameList | None) -> tuple[str, str, list[tuple[str, str]] | None]:
    """The epoch now, the last change-log entry's id, and the (game, board) changes since
    ``cached`` was read (None when the log cannot say: no list yet, a log trimmed past it, an
    epoch that went back, too many). One transaction: entries and epoch move together."""
    since = cached if cached is not None and cached.epoch.isdigit() else None
    pipe = get_redis().pipeline(transaction=True)
    pipe.get(keys.config_epoch())
    if since is not None:
        pipe.xrange(keys.config_changes(), min=f"({since.last_change}", count=CONFIG_CHANGES_READ_MAX + 1)
    else:
        pipe.xrevrange(keys.config_changes(), count=1)
    found, entries = await pipe.execute()
    epoch = str(found) if found is not None else "0"
    if since is None:
        return epoch, str(entries[0][0]) if entries else "0-0", None
    last_change = str(entries[-1][0]) if entries else since.last_change
    moved = int(epoch) - int(since.epoch) if epoch.isdigit() else -1
    if moved < 0 or moved != len(entries) or moved > CONFIG_CHANGES_READ_MAX:
        return epoch, last_change, None
    return epoch, last_change, [(fields.get("game", ""), fields.get("board", "")) for _, fields in entries]


async def _list_all(epoch: str, last_change: str, cached: _GameList | None) -> list[GameConfig]:
    """Every active game from the database (a game equal to the one cached keeps that object)."""
    known = {g.slug: g for g in cached.games} if cached is not None else {}
    games = []
    async for model in _WITH_BOARDS.filter(active=True):
        game = GameConfig.from_model(model, "0")
        games.append(known[game.slug] if known.get(game.slug) == game else game)
    games.sort(key=_by_name)
    _caches.game_list["all"] = _GameList(epoch, last_change, games)
    return games


def _by_name(game: GameConfig) -> tuple[str, int]:
    return game.name, game.id


async def _apply_changes(games: list[GameConfig], changes: list[tuple[str, str]]) -> list[GameConfig]:
    """A new list: the games named whole read again, the boards named read again into their
    game; every other game keeps its object."""
    whole = {slug for slug, board in changes if not board}
    boards: dict[str, set[str]] = {}
    for slug, board in changes:
        if board and slug not in whole:
            boards.setdefault(slug, set()).add(board)
    by_slug = {g.slug: g for g in games}
    if whole:
        loaded = [GameConfig.from_model(g, "0") async for g in _WITH_BOARDS.filter(slug__in=whole, active=True)]
        ids = {g.id for g in loaded}
        by_slug = {slug: g for slug, g in by_slug.items() if slug not in whole and g.id not in ids}  # renamed too
        by_slug.update((g.slug, g) for g in loaded)
    for slug, board_slugs in boards.items():
        game = by_slug.get(slug)
        if game is not None:  # else out of play or gone: its boards do not show
            by_slug[slug] = await _with_boards_read(game, board_slugs)
    return sorted(by_slug.values(), key=_by_name)


async def _with_boards_read(game: GameConfig, board_slugs: set[str]) -> GameConfig:
    """``game`` with these boards read again (a board gone from the database leaves it)."""
    rows = Leaderboard.objects.select_related("game").filter(game_id=game.id, slug__in=board_slugs)
    fresh = {b.pk: BoardConfig.from_model(b, b.game) async for b in rows}
    kept = [b for b in game.boards if b.slug not in board_slugs and b.id not in fresh]
    return dataclasses.replace(game, boards=tuple(sorted([*kept, *fresh.values()], key=lambda b: b.id)))


async def get_api_key(prefix: str, *, reload: bool = False) -> ApiKeyConfig | None:
    cache = _caches.keys
    if not reload and prefix in cache:
        return cache[prefix]
    try:
        key = await ApiKey.objects.select_related("game").filter(prefix=prefix).afirst()
    except DATABASE_ERRORS as error:
        if prefix not in _caches.last_keys:
            raise
        report_unavailable(error, during="an API key's config reload (the last one read is served)")
        cache[prefix] = last_key = _caches.last_keys[prefix]  # as for a game (get_game)
        return last_key
    config = (
        ApiKeyConfig(
            prefix=key.prefix,
            secret_hash=key.secret_hash,
            game_id=key.game_id,
            game_slug=key.game.slug,
            scope=key.scope,
            revoked=key.revoked,
            requests_per_minute=key.requests_per_minute,
            items_per_minute=key.items_per_minute,
        )
        if key
        else None
    )
    cache[prefix] = _caches.last_keys[prefix] = config
    return config
