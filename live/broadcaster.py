"""The live broadcaster: turns dirty boards into at most one message per board per tick.

Each accepted submission only marks its boards in the game's dirty ZSET (in the
submit script). Every tick the broadcaster pops a game's dirty boards (ZPOPMIN:
each mark is claimed by exactly one broadcaster, however many run), reads each
board's top rows once with a new version (in the same script call as the read,
so versions follow snapshot order), and sends one ``standings`` event per board,
then a ``player`` event per followed player whose score or rank moved, and the
game's latest submissions (``recent``) and home-page card (``top``). So the cost
per watcher follows the tick rate, not the submission rate. It also announces
each period rollover once (``reset``), and each game's presence changes
(``presence``: counts, joins and leaves, claimed so that each change goes out
once however many broadcasters run).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass, field
from typing import cast

from core import clock, config, keys
from core.errors import UNAVAILABLE_ERRORS
from core.heartbeat import heartbeat
from core.redis import get_redis
from games import periods
from games import selectors as board_reads
from presence import selectors as presence_selectors
from presence import services as presence_services

from . import events, scripts, selectors

logger = logging.getLogger(__name__)

# Boards one tick takes from a game's dirty set at most; the rest wait a tick.
MAX_BOARDS_PER_TICK = 1000
# After Redis or the database failed, the broadcaster waits this long before the next tick.
ERROR_BACKOFF_SECS = 1.0


@dataclass
class BroadcasterState:
    """What one broadcaster remembers between ticks: the (score, rank) it last sent per board and player."""

    last_sent: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)
    # game slug -> the (online, watching) counts it last sent
    presence_counts: dict[str, tuple[int, int]] = field(default_factory=dict)
    # Names this broadcaster when it holds a game's presence announcer lease.
    token: str = field(default_factory=lambda: uuid.uuid4().hex)


@dataclass
class TickReport:
    standings: int = 0
    players: int = 0
    resets: int = 0
    presence: int = 0
    recent: int = 0
    tops: int = 0


async def tick(*, state: BroadcasterState, games: list[config.GameConfig] | None = None) -> TickReport:
    now = clock.now()
    report = TickReport()
    live_boards: set[str] = set()
    for game in games if games is not None else await config.list_games():
        current = {kind: periods.current(kind, game.timezone, now) for kind in game.periods}
        live_boards.update(keys.board(game.slug, p.kind, p.id) for p in current.values())
        await _announce_rollovers(game, current, report)
        if await _announce_presence(game, state):
            report.presence += 1
        changed = await _changed_boards(game, current)
        if changed:
            await _announce_boards(game, changed, state, report)
            await _announce_recent(game)
            report.recent += 1
    # Forget boards that are no longer current, so memory stays bounded.
    for key in [k for k in state.last_sent if k[0] not in live_boards]:
        del state.last_sent[key]
    return report


async def _announce_rollovers(game: config.GameConfig, current: dict[str, periods.Period], report: TickReport) -> None:
    """One ``reset`` per period that rolled over (each claimed by one broadcaster), and the
    home page's card of the game emptied when its home board is the one that rolled."""
    ending = [p for p in current.values() if p.kind != periods.ALL_TIME]
    if not ending:
        return
    claim = [value for p in ending for value in (p.kind, p.id)]
    for kind in await scripts.PERIOD_STARTED(get_redis(), [keys.live_periods(game.slug)], claim):
        await events.send_reset(game.slug, current[kind])
        report.resets += 1
        if kind == selectors.home_period(game):
            empty = board_reads.Board(period=current[kind], total=0, offset=0, entries=[])
            await events.send_top(events.top(game.slug, empty, 0))


async def _changed_boards(game: config.GameConfig, current: dict[str, periods.Period]) -> list[periods.Period]:
    """The current boards marked changed since the last tick (the marks are claimed: one broadcaster each)."""
    by_key = {keys.board(game.slug, p.kind, p.id): p for p in current.values()}
    dirty = cast("list[tuple[str, float]]", await get_redis().zpopmin(keys.dirty(game.slug), MAX_BOARDS_PER_TICK))
    # Past periods' boards are dropped here: nobody watches those live.
    return [by_key[board_key] for board_key, _ in dirty if board_key in by_key]


async def _announce_boards(
    game: config.GameConfig, changed: list[periods.Period], state: BroadcasterState, report: TickReport
) -> None:
    """A ``standings`` message per changed board (and the home page's ``top`` for the home board),
    then a ``player`` message per followed player whose score or rank moved."""
    followed = await selectors.followed_players(game=game)
    home = selectors.home_period(game)
    moved: dict[str, dict[str, tuple[str, board_reads.Standing]]] = {}
    for period in changed:
        board, version = await selectors.board_snapshot(
            game=game, period=period, limit=events.LIVE_LIMIT_MAX, next_version=True
        )
        online = await presence_selectors.online_among(game=game, player_ids=[e.player_id for e in board.entries])
        await events.send_standings(game.slug, board, version, online)
        report.standings += 1
        if period.kind == home and game.active:
            await events.send_top(events.top(game.slug, board, version, online))
            report.tops += 1
        if followed:
            _note_moves(
                game,
                period,
                await board_reads.standings_of(game=game, period=period, player_ids=followed),
                state,
                moved,
            )
    for player_id, changes in moved.items():
        name = next(iter(changes.values()))[1].display_name
        await events.send_player(game.slug, events.player(player_id, name, changes))
        report.players += 1


def _note_moves(
    game: config.GameConfig,
    period: periods.Period,
    standings: list[board_reads.Standing],
    state: BroadcasterState,
    moved: dict[str, dict[str, tuple[str, board_reads.Standing]]],
) -> None:
    """Record the followed players whose (score, rank) on this board differs from what was last sent."""
    board_key = keys.board(game.slug, period.kind, period.id)
    for standing in standings:
        seen = (standing.score, standing.rank)
        if state.last_sent.get((board_key, standing.player_id)) != seen:
            state.last_sent[(board_key, standing.player_id)] = seen
            moved.setdefault(standing.player_id, {})[period.kind] = (period.id, standing)


async def _announce_recent(game: config.GameConfig) -> None:
    """The game's latest submissions, after a tick in which any arrived."""
    submissions, version = await selectors.recent_snapshot(game=game, limit=events.RECENT_LIVE_LIMIT, next_version=True)
    await events.send_recent(game.slug, events.recent(version, submissions))


async def _announce_presence(game: config.GameConfig, state: BroadcasterState) -> bool:
    """One ``presence`` message if anyone joined or left, or the counts moved (expiry moves them too)."""
    changes = await presence_services.presence_claim_changes(game=game, announcer=state.token)
    if changes is None:
        state.presence_counts.pop(game.slug, None)  # another broadcaster announces; resend on takeover
        return False
    counts = (changes.online, changes.watching)
    if not changes.joined and not changes.left and state.presence_counts.get(game.slug) == counts:
        return False
    state.presence_counts[game.slug] = counts
    payload = events.presence(
        version=changes.version,
        online=changes.online,
        watching=changes.watching,
        joined=changes.joined,
        left=changes.left,
    )
    await events.send_presence(game.slug, payload)
    return True


async def run(*, tick_ms: int, stop: asyncio.Event) -> None:
    state = BroadcasterState()
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        started = loop.time()
        delay = tick_ms / 1000
        heartbeat("broadcast")  # the loop turns (the container's health check reads it)
        try:
            await tick(state=state)
        except UNAVAILABLE_ERRORS as error:
            # Redis or the database (the game list) is briefly unreachable: a tick is lost, not the process.
            logger.warning("broadcaster: %s: %s; retrying in %g s", type(error).__name__, error, ERROR_BACKOFF_SECS)
            delay = ERROR_BACKOFF_SECS
        remaining = delay - (loop.time() - started)
        if remaining > 0:
            try:
                await asyncio.wait_for(stop.wait(), remaining)
            except TimeoutError:
                pass
