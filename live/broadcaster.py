"""The live broadcaster: turns changed boards into at most one message per window per tick.

Each accepted submission marks its period boards in its leaderboard's dirty ZSET (in
the submit script) and the leaderboard in one global change set (``keys.live_changes``,
right after). Every tick the broadcaster pops the changed leaderboards (ZPOPMIN: each
mark is claimed by exactly one broadcaster, however many run) and, for each, its dirty
windows; it reads each window's top rows once with a new version (in the same script
call as the read, so versions follow snapshot order), and sends one ``standings``
event per window, then a ``player`` event per followed player whose score or rank
moved, and the game's latest submissions (``recent``) and home-page card (``top``).
Rollovers come from a schedule of every window's next end, kept in memory (``reset``,
each claimed once). So a tick's cost follows what changed: idle boards cost nothing,
and the cost per watcher follows the tick rate, not the submission rate. Presence
changes (``presence``: counts, joins and leaves, claimed so that each change goes out
once however many broadcasters run) are announced for the games marked in
``keys.live_presence_changes`` (a join, a leave, a watcher come or gone, a prune).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import heapq
import logging
import uuid
from dataclasses import dataclass, field
from typing import cast

from competitions.selectors import cohorts as cohort_reads
from core import clock, config, keys, lua, metrics
from core.errors import UNAVAILABLE_ERRORS, report_unavailable
from core.heartbeat import heartbeat
from core.redis import get_redis
from games import periods
from games import selectors as board_reads
from presence import selectors as presence_selectors
from presence import services as presence_services

from . import events, rollovers, scripts, selectors
from .rollovers import Schedule

logger = logging.getLogger(__name__)

# Leaderboards one tick takes from the change set (and windows from each board's dirty
# set) at most; the rest wait a tick.
MAX_BOARDS_PER_TICK = 1000
# Games whose presence changed that one tick announces at most; the rest wait a tick.
MAX_GAMES_PER_TICK = 1000
# Followed players' last sent standings kept at most; past it the memory starts again
# (each player is then sent once more).
LAST_SENT_MAX_ENTRIES = 100_000
# After Redis or the database failed, the broadcaster waits this long before the next tick.
ERROR_BACKOFF_SECS = 1.0


# What was last sent of a followed player on one board: score, rank, and their cohort and
# rank in it (None, None on a window without cohorts, or while they are in none).
Sent = tuple[int, int, str | None, int | None]
# A followed player's moves on one board: window -> (period id, standing, place in their cohort
# or None where the window has no cohorts).
Moves = dict[str, tuple[str, board_reads.Standing, selectors.CohortPlace | None]]


@dataclass
class BroadcasterState:
    """What one broadcaster remembers between ticks."""

    # (board key, player) -> the (score, rank, cohort, cohort rank) last sent for a followed player
    last_sent: dict[tuple[str, str], Sent] = field(default_factory=dict)
    # game slug -> the (online, watching) counts it last sent
    presence_counts: dict[str, tuple[int, int]] = field(default_factory=dict)
    # Names this broadcaster when it holds a game's presence announcer lease.
    token: str = field(default_factory=lambda: uuid.uuid4().hex)
    # The game list last followed (config.list_games returns the same object until a config
    # changes, and keeps the objects of the games that did not change), the active games by
    # slug, their active boards by ref, and each game's board refs.
    games: list[config.GameConfig] | None = None
    by_game: dict[str, config.GameConfig] = field(default_factory=dict)
    boards: dict[str, tuple[config.GameConfig, config.BoardConfig]] = field(default_factory=dict)
    refs_of: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # When each window's period ends, and the boards whose current periods are not claimed yet.
    rollovers: Schedule = field(default_factory=Schedule)
    # When a game's presence counts next fall by themselves (a member's window ends):
    # a heap of (ms, slug), and the earliest planned per game.
    lapses: list[tuple[int, str]] = field(default_factory=list)
    lapse_at: dict[str, int] = field(default_factory=dict)

    def follow(self, games: list[config.GameConfig], now: dt.datetime | None = None) -> None:
        """Index the boards of ``games``. Only the games whose config is another object than the
        last time are indexed again, and only their boards whose settings changed are claimed and
        planned afresh: a config change costs what changed, not what exists. (``now`` is unused:
        plans are made when the boards are claimed.)"""
        if games is self.games:
            return
        self.games = games
        incoming = {g.slug: g for g in games}
        for slug in self.by_game.keys() - incoming.keys():
            self._index(slug, None)
        for slug, game in incoming.items():
            if self.by_game.get(slug) is not game:
                self._index(slug, game)
        self.by_game = incoming

    def _index(self, slug: str, game: config.GameConfig | None) -> None:
        """Take in one game's boards (None: the game is gone or out of play)."""
        new = {b.ref: b for b in game.boards if b.active} if game is not None and game.active else {}
        for ref in self.refs_of.pop(slug, ()):
            if ref not in new:
                self.rollovers.remove(self.boards.pop(ref)[1])
        for ref, board in new.items():
            known = self.boards.get(ref)
            self.boards[ref] = (cast("config.GameConfig", game), board)
            if known is None or known[1] != board:
                if known is not None:
                    self.rollovers.remove(known[1])
                self.rollovers.add(board)
        if new:
            self.refs_of[slug] = tuple(new)

    def due(self, now: dt.datetime) -> dict[str, list[str]]:
        """The windows to claim this tick, by board ref (see live/rollovers.py)."""
        return self.rollovers.due(self.boards, now, rollovers.MAX_CLAIMS_PER_TICK)

    def plan_lapse(self, slug: str, at_ms: int | None) -> None:
        if at_ms is not None and at_ms < self.lapse_at.get(slug, at_ms + 1):
            self.lapse_at[slug] = at_ms
            heapq.heappush(self.lapses, (at_ms, slug))

    def lapsed(self, now: dt.datetime) -> list[str]:
        """The games whose presence counts fell by themselves since the last tick (each popped
        lapse is gone: the next is planned from the claim it leads to, always after its now)."""
        now_ms = clock.to_ms(now)
        found = []
        while self.lapses and self.lapses[0][0] <= now_ms:
            at_ms, slug = heapq.heappop(self.lapses)
            if self.lapse_at.get(slug) == at_ms:
                del self.lapse_at[slug]
                found.append(slug)
        return found


@dataclass
class TickReport:
    standings: int = 0
    players: int = 0
    resets: int = 0
    presence: int = 0
    recent: int = 0
    tops: int = 0
    boards: int = 0  # boards visited because they changed
    cohorts: int = 0  # cohort standings sent (one per watched cohort of a changed competing window)
    cohort_reads: int = 0  # cohorts read whole: the watched ones, and followed players' others


async def tick(*, state: BroadcasterState, games: list[config.GameConfig] | None = None) -> TickReport:
    """One tick: work in proportion to what changed (boards, presence, rollovers), not to
    how many games and boards exist."""
    now = clock.now()
    report = TickReport()
    state.follow(games if games is not None else await config.list_games(), now)
    await _announce_rollovers(state, now, report)
    await _announce_presence_changes(state, now, report)
    refs = cast("list[tuple[str, float]]", await get_redis().zpopmin(keys.live_changes(), MAX_BOARDS_PER_TICK))
    changed_games: dict[str, config.GameConfig] = {}
    for ref, _ in refs:
        found = state.boards.get(ref)
        if found is None:
            continue  # an inactive game's or board's: nobody watches it live
        game, board = found
        report.boards += 1
        changed = await _changed_windows(board, now)
        if changed:
            await _announce_board(game, board, changed, state, report)
            changed_games[game.slug] = game
    for game in changed_games.values():
        await _announce_recent(game)
        report.recent += 1
    return report


async def _announce_rollovers(state: BroadcasterState, now: dt.datetime, report: TickReport) -> None:
    """One ``reset`` per window that rolled over (each claimed by one broadcaster: all of the
    tick's claims in one pipelined round trip), and the home page's card emptied when its home
    window is the one that rolled."""
    current: dict[str, dict[str, periods.Period]] = {}
    for ref, windows in state.due(now).items():
        board = state.boards[ref][1]
        for window in windows:
            try:
                current.setdefault(ref, {})[window] = periods.window_current(board, window, now)
            except periods.InvalidPeriod:
                continue  # a cron that has not fired yet: nothing started
    if not current:
        return
    try:
        claimed = await _claim(current)
    except BaseException:
        # Redis failed mid-way: these boards are claimed again next tick (a claim that already
        # ran then finds its period recorded, one that did not announces its rollover).
        state.rollovers.unclaimed.update(dict.fromkeys(current))
        raise
    for ref, started in zip(current, claimed, strict=True):
        game, board = state.boards[ref]
        for window in started:
            period = current[ref][window]
            await events.send_reset(board, period)
            report.resets += 1
            if board == game.first_board and window == selectors.home_period(board):
                empty = board_reads.Board(period=period, total=0, offset=0, entries=[])
                await events.send_top(events.top(board, empty, 0))


async def _claim(current: dict[str, dict[str, periods.Period]]) -> list[list[str]]:
    """PERIOD_STARTED for each board's current periods, pipelined: the windows that rolled over, per board.

    A call Redis refuses with NOSCRIPT (its scripts were flushed meanwhile) did not run: it is
    called again alone, after the others ran (which a blind retry of the pipeline would repeat,
    claiming nothing the second time)."""
    calls = [
        (scripts.PERIOD_STARTED, scripts.period_started_call(ref=ref, current={w: p.id for w, p in windows.items()}))
        for ref, windows in current.items()
    ]
    return [scripts.period_started_reply(reply) for reply in await lua.pipelined(get_redis(), calls)]


async def _changed_windows(board: config.BoardConfig, now: dt.datetime) -> list[periods.Period]:
    """The board's current periods marked changed since the last tick (the marks are claimed:
    one broadcaster each)."""
    by_key = {keys.board(board.ref, p.kind, p.id): p for p in periods.board_current(board, now)}
    dirty = cast("list[tuple[str, float]]", await get_redis().zpopmin(keys.dirty(board.ref), MAX_BOARDS_PER_TICK))
    # Past periods' boards are dropped here: nobody watches those live.
    return [by_key[board_key] for board_key, _ in dirty if board_key in by_key]


async def _announce_board(
    game: config.GameConfig,
    board: config.BoardConfig,
    changed: list[periods.Period],
    state: BroadcasterState,
    report: TickReport,
) -> None:
    """A ``standings`` message per changed window (and the home page's ``top`` for the home
    board), one per watched cohort of a changed competing window, then a ``player`` message
    per followed player whose score, rank or place in their cohort moved."""
    followed = await selectors.followed_players(game=game)
    is_home = board == game.first_board
    moved: dict[str, Moves] = {}
    for period in changed:
        page, version = await selectors.board_snapshot(
            board=board, period=period, limit=events.LIVE_LIMIT_MAX, next_version=True
        )
        online = await presence_selectors.online_among(game=game, player_ids=[e.player_id for e in page.entries])
        await events.send_standings(board, page, version, online)
        report.standings += 1
        if is_home and period.kind == selectors.home_period(board):
            await events.send_top(events.top(board, page, version, online))
            report.tops += 1
        standings = await board_reads.standings_of(board=board, period=period, player_ids=followed) if followed else []
        places = await _announce_cohorts(game, board, period, [s.player_id for s in standings], report)
        _note_moves(board, period, standings, places, state, moved)
    for player_id, changes in moved.items():
        name = next(iter(changes.values()))[1].display_name
        plain = {kind: (period_id, standing) for kind, (period_id, standing, _) in changes.items()}
        places_of = {kind: place for kind, (_, _, place) in changes.items() if place is not None}
        await events.send_player(game.slug, events.player(board, player_id, name, plain, places_of))
        report.players += 1


async def _announce_cohorts(
    game: config.GameConfig,
    board: config.BoardConfig,
    period: periods.Period,
    followed: list[str],
    report: TickReport,
) -> dict[str, selectors.CohortPlace] | None:
    """One ``standings`` message per cohort of a changed competing window that a live socket
    watches, each read once (with a new version of the board's) whatever the number of its
    watchers; and the followed players' places in their cohorts, from those reads where they
    are in one, else from one read per other cohort. None: the window has no cohorts."""
    if not cohort_reads.has_cohorts(board, period.kind):
        return None
    snapshots: dict[int, cohort_reads.CohortSnapshot] = {}
    for index in await selectors.watched_cohorts(board=board, window=period.kind):
        snap = await cohort_reads.cohort_snapshot(
            board=board, period=period, index=index, limit=events.LIVE_LIMIT_MAX, version="next"
        )
        report.cohort_reads += 1
        if snap is None:
            continue  # no such cohort in this period (yet): its watchers wait
        players = [e.player_id for e in snap.board.entries]
        online = await presence_selectors.online_among(game=game, player_ids=players)
        await events.send_cohort_standings(board, period, snap, online)
        report.cohorts += 1
        snapshots[index] = snap
    if not followed:
        return {}
    places, reads = await selectors.cohort_places(board=board, period=period, player_ids=followed, known=snapshots)
    report.cohort_reads += reads
    return places


def _note_moves(
    board: config.BoardConfig,
    period: periods.Period,
    standings: list[board_reads.Standing],
    places: dict[str, selectors.CohortPlace] | None,
    state: BroadcasterState,
    moved: dict[str, Moves],
) -> None:
    """Record the followed players whose (score, rank, cohort, cohort rank) on this board
    differs from what was last sent."""
    board_key = keys.board(board.ref, period.kind, period.id)
    for standing in standings:
        place = None if places is None else places.get(standing.player_id, selectors.CohortPlace())
        cohort = (place.cohort, place.rank) if place is not None else (None, None)
        seen: Sent = (standing.score, standing.rank, *cohort)
        if state.last_sent.get((board_key, standing.player_id)) != seen:
            state.last_sent[(board_key, standing.player_id)] = seen
            moved.setdefault(standing.player_id, {})[period.kind] = (period.id, standing, place)
    # Bounded: what was sent for periods that ended is of no use (a new period starts afresh).
    if len(state.last_sent) > LAST_SENT_MAX_ENTRIES:
        state.last_sent.clear()


async def _announce_recent(game: config.GameConfig) -> None:
    """The game's latest submissions, after a tick in which any arrived."""
    submissions, version = await selectors.recent_snapshot(game=game, limit=events.RECENT_LIVE_LIMIT, next_version=True)
    await events.send_recent(game.slug, events.recent(game=game, version=version, submissions=submissions))


async def _announce_presence_changes(state: BroadcasterState, now: dt.datetime, report: TickReport) -> None:
    """A ``presence`` message for each game whose presence changed since the last tick, or
    whose counts fell by themselves (a member's window ended, planned from the last claim)."""
    changed = cast(
        "list[tuple[str, float]]", await get_redis().zpopmin(keys.live_presence_changes(), MAX_GAMES_PER_TICK)
    )
    for slug in dict.fromkeys([*(slug for slug, _ in changed), *state.lapsed(now)]):
        game = state.by_game.get(slug)
        if game is not None and await _announce_presence(game, state):
            report.presence += 1


async def _announce_presence(game: config.GameConfig, state: BroadcasterState) -> bool:
    """One ``presence`` message if anyone joined or left, or the counts moved."""
    changes = await presence_services.presence_claim_changes(game=game, announcer=state.token)
    if changes is None:
        # Another broadcaster announces this game: hand the mark back for it to take.
        state.presence_counts.pop(game.slug, None)  # and resend the counts on a takeover
        await presence_services.presence_changed(slug=game.slug)
        return False
    state.plan_lapse(game.slug, changes.next_lapse_ms)
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
            report = await tick(state=state)
            metrics.BROADCAST_TICK_SECONDS.observe(loop.time() - started)
            metrics.BROADCAST_BOARDS.observe(report.boards)
        except UNAVAILABLE_ERRORS as error:
            # Redis or the database (the game list) is briefly unreachable: a tick is lost, not the process.
            report_unavailable(error, during=f"a broadcaster tick (retrying in {ERROR_BACKOFF_SECS:g} s)")
            delay = ERROR_BACKOFF_SECS
        remaining = delay - (loop.time() - started)
        if remaining > 0:
            try:
                await asyncio.wait_for(stop.wait(), remaining)
            except TimeoutError:
                pass
