"""The rebuild (``manage.py rebuild_leaderboards``): a game's ledger replayed into
temporary keys, then swapped in atomically, so the boards end as the ledger says."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import cast

from django.conf import settings
from django.db.models import Q

from core import clock, keys
from core.config import GameConfig
from core.errors import ServiceError
from core.models import Game, Leaderboard, Player
from core.redis import get_redis, run_sync
from games import periods
from games import services as game_services

from .. import scripts
from ..models import ArchivedPeriod, ScoreEvent
from .drain import ensure_group, ledger_drain
from .events import Erasure, Progress, StreamId, event_row, split_id

# Rebuild: events per database fetch and per stream read (memory stays flat).
REBUILD_READ_CHUNK = 5000
# Rebuild: members per ZADD into a temporary board (one round trip each).
REBUILD_WRITE_CHUNK = 5000
# A rebuild's temporary boards expire this long after their last write, should the
# run die before the swap: far longer than any run between its writes and its swap.
REBUILD_TEMP_TTL_MS = 3600 * 1000
# The swap is refused while new ledger entries arrive; each retry replays only
# those, so a handful of attempts suffices even under steady traffic.
REBUILD_SWAP_ATTEMPTS = 50


@dataclass
class RebuildReport:
    game: str
    events: int = 0  # ledger events replayed
    boards: int = 0  # boards swapped in
    stashed: int = 0  # entries of hidden players put in stashes
    names_restored: int = 0  # names the names HASH had lost
    swap_attempts: int = 0
    kept: list[str] = field(default_factory=list)  # live boards left as they were (no events to rebuild them)


class _Replay:
    """One game's boards, rebuilt in memory from its ledger events in order.

    Memory: one int per (player, board) of the boards kept in Redis, plus one name
    per player. The events themselves stream through.
    """

    def __init__(self, config: GameConfig, live: set[str], archived: set[tuple[str, str]]) -> None:
        self.config = config
        self.live = live
        self.archived = archived
        self.boards: dict[str, dict[str, int]] = {}
        self.periods: dict[str, periods.Period] = {}
        self.names: dict[str, str] = {}
        self.changed: dict[str, set[str]] = {}
        self.events = 0
        # Boards an erasure changed: written whole again, not only their changed members.
        self.rewrite: set[str] = set()
        self._spans: dict[str, periods.Period] = {}
        self._wanted: dict[str, bool] = {}

    def _period(self, kind: str, at: dt.datetime) -> periods.Period:
        # Events come in time order: the last period of each kind almost always fits.
        cached = self._spans.get(kind)
        if cached is not None and (
            cached.starts_at is None or (cached.ends_at is not None and cached.starts_at <= at < cached.ends_at)
        ):
            return cached
        period = periods.current(kind, self.config.timezone, at)
        self._spans[kind] = period
        return period

    def _keep(self, key: str, period: periods.Period) -> bool:
        """Whether this board belongs in Redis: all-time, any board Redis still keeps, and
        every period not archived yet. A complete archive no longer in Redis stays out:
        the database serves it."""
        wanted = self._wanted.get(key)
        if wanted is None:
            wanted = (
                period.kind == periods.ALL_TIME or key in self.live or (period.kind, period.id) not in self.archived
            )
            self._wanted[key] = wanted
        return wanted

    def erase(self, player_id: str) -> None:
        """An erasure (player_erase.lua's ledger entry): the player leaves every board; a
        later event of the same id starts a new player."""
        self.names.pop(player_id, None)
        for key, board in self.boards.items():
            if board.pop(player_id, None) is not None:
                self.rewrite.add(key)
                self.changed.get(key, set()).discard(player_id)

    def apply(self, kind: str, player_id: str, value: int, display_name: str, mode: str, at: dt.datetime) -> None:
        """One event, with the submit script's (or the correction script's) semantics."""
        self.events += 1
        if display_name:
            self.names[player_id] = display_name
        else:
            self.names.setdefault(player_id, player_id)
        sort_key = self.config.sort_key(value)
        sets = kind == ScoreEvent.Kind.CORRECTION and mode != Leaderboard.Mode.INCREMENT
        for period_kind in self.config.periods:
            period = self._period(period_kind, at)
            key = keys.board(self.config.slug, period.kind, period.id)
            if not self._keep(key, period):
                continue
            board = self.boards.get(key)
            if board is None:
                board = self.boards[key] = {}
                self.periods[key] = period
            before = board.get(player_id)
            if mode == Leaderboard.Mode.INCREMENT and not sets:
                board[player_id] = (before or 0) + sort_key
            elif mode == Leaderboard.Mode.BEST and not sets:
                if before is None or sort_key < before:
                    board[player_id] = sort_key
            else:
                board[player_id] = sort_key
            self.changed.setdefault(key, set()).add(player_id)


async def _stream_cut(slug: str) -> tuple[StreamId, int]:
    """The first id the stream still holds (older events come from the table), and its length."""
    await ensure_group(slug)  # creates the stream if Redis lost it
    info = await get_redis().xinfo_stream(keys.ledger(slug))
    if info["length"]:
        return split_id(info["first-entry"][0]), int(info["length"])
    ms, seq = split_id(info["last-generated-id"])
    return (ms, seq + 1), 0


async def _stream_read(slug: str, start: StreamId, count: int) -> list[tuple[str, dict[str, str]]]:
    entries = await get_redis().xrange(keys.ledger(slug), min=f"{start[0]}-{start[1]}", max="+", count=count)
    return cast("list[tuple[str, dict[str, str]]]", entries)


def _replay_stream(game: Game, replay: _Replay, cursor: StreamId, report: Progress) -> StreamId:
    """Replay the stream's entries from ``cursor`` on; returns the id after the last one."""
    while True:
        entries = run_sync(_stream_read, game.slug, cursor, REBUILD_READ_CHUNK)
        for event_id, fields in entries:
            event = event_row(game.pk, event_id, fields)
            if isinstance(event, Erasure):
                replay.erase(event.player_id)
            elif event is not None:
                replay.apply(event.kind, event.player_id, event.value, event.display_name, event.mode, event.at)
        if entries:
            ms, seq = split_id(entries[-1][0])
            cursor = (ms, seq + 1)
            report(len(entries), 0)
        if len(entries) < REBUILD_READ_CHUNK:
            return cursor


def _chunks(items: Sequence[tuple[str, int]], size: int) -> Iterable[Sequence[tuple[str, int]]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


async def _write_board(temp: str, members: Sequence[tuple[str, int]], fresh: bool) -> None:
    client = get_redis()
    if fresh:
        await client.delete(temp)
    for chunk in _chunks(members, REBUILD_WRITE_CHUNK):
        await client.zadd(temp, dict(chunk))
    await client.pexpire(temp, REBUILD_TEMP_TTL_MS)


def _write_boards(replay: _Replay, run: str, board_keys: Iterable[str], *, fresh: bool) -> None:
    """Write rebuilt boards to their temporary keys: whole (``fresh``), or the members changed since."""
    for key in list(board_keys):
        board = replay.boards[key]
        players = board if fresh else replay.changed.get(key, ())
        members = [(player, board[player]) for player in players]
        run_sync(_write_board, keys.board_rebuild(key, run), members, fresh)
        replay.changed.pop(key, None)


def _names(game: Game, replay: _Replay) -> list[tuple[str, str, bool]]:
    """(player_id, name, mark for the player sync) for every player the ledger knows.

    A player's database row wins over the ledger when it has a real name: it carries
    admin renames (which are not ledger events) and trails Redis by one player sync
    (PLAYER_SYNC_INTERVAL_SECS). A row still named after the player id (a row created
    when a player was hidden before their first sync) takes the ledger's name.
    """
    stored = dict(Player.objects.filter(game=game).values_list("player_id", "display_name").iterator())
    names = []
    for player_id, from_ledger in sorted(replay.names.items()):
        row = stored.get(player_id)
        name = row if row and row != player_id else from_ledger
        names.append((player_id, name, row != name))
    return names


async def _swap(
    slug: str, boards: dict[str, periods.Period], run: str, cursor: StreamId, hidden: Sequence[str], now_ms: int
) -> list:
    key_list = [
        keys.hidden(slug),
        keys.boards_index(slug),
        keys.dirty(slug),
        keys.close_jobs(slug),
        keys.close_claims(slug),
        keys.close_dead(slug),
        keys.ledger(slug),
    ]
    args: list[str | int] = [now_ms, cursor[0], cursor[1], len(hidden), *hidden]
    grace_ms = settings.ARCHIVE_GRACE_SECS * 1000
    for key, period in boards.items():
        key_list += [key, keys.board_rebuild(key, run), keys.hidden_stash(slug, key)]
        if period.ends_at_ms is None:
            args += ["", ""]
        else:
            args += [f"{period.kind}:{period.id}", period.ends_at_ms + grace_ms]
    return await scripts.BOARD_SWAP(get_redis(), key_list, args)


async def _drop(temps: Sequence[str]) -> None:
    if temps:
        await get_redis().delete(*temps)


def leaderboards_rebuild(*, game: Game, progress: Progress | None = None) -> RebuildReport:
    """Replay a game's ledger into its Redis boards; they end identical to what the ledger says.

    Rebuilds the all-time board, every board Redis keeps (the boards index), and
    every period board with events whose period has no complete archive; boards
    of periods the game no longer keeps, and live boards with no event at all, are
    left as they are (see docs/ledger.md). ``progress(done, total)`` is called as
    events are replayed.
    """
    now = clock.now()
    now_ms = clock.to_ms(now)
    config = GameConfig.from_model(game, "0")
    slug = game.slug
    report = RebuildReport(game=slug)
    done = 0
    total = 0

    def advance(step: int, more: int) -> None:
        nonlocal done, total
        done += step
        total += more
        if progress is not None:
            progress(done, max(total, done))

    ledger_drain(game=game)
    cut, in_stream = run_sync(_stream_cut, slug)
    if not in_stream:
        # An empty stream (maybe recreated after a data loss, its ids starting again):
        # every stored event comes from the table.
        newest = ScoreEvent.objects.filter(game=game).order_by("-stream_ms", "-stream_seq").first()
        if newest is not None:
            cut = max(cut, (newest.stream_ms, newest.stream_seq + 1))
    live = set(cast("list[str]", run_sync(lambda: get_redis().zrangebyscore(keys.boards_index(slug), now_ms, "+inf"))))
    archived = set(
        ArchivedPeriod.objects.filter(game=game, status=ArchivedPeriod.Status.COMPLETE).values_list(
            "period", "period_id"
        )
    )
    replay = _Replay(config, live, archived)

    # Older events from the table, the rest from the stream: each event exactly once,
    # whichever drain has stored it by now.
    older = ScoreEvent.objects.filter(game=game).filter(
        Q(stream_ms__lt=cut[0]) | Q(stream_ms=cut[0], stream_seq__lt=cut[1])
    )
    advance(0, older.count() + in_stream)
    rows = older.order_by("stream_ms", "stream_seq").values_list(
        "kind", "player_id", "value", "display_name", "mode", "at"
    )
    for i, row in enumerate(rows.iterator(chunk_size=REBUILD_READ_CHUNK), start=1):
        replay.apply(*row)
        if i % REBUILD_READ_CHUNK == 0:
            advance(REBUILD_READ_CHUNK, 0)
    advance(replay.events - done, 0)
    cursor = _replay_stream(game, replay, cut, advance)

    run = uuid.uuid4().hex[:12]
    temps = [keys.board_rebuild(key, run) for key in replay.boards]
    swapped = False
    try:
        names = _names(game, replay)  # a database read: not inside the Redis bridge's loop
        report.names_restored = run_sync(lambda: game_services.names_write(slug=slug, mode="restore", names=names))
        _write_boards(replay, run, replay.boards, fresh=True)
        replay.rewrite.clear()
        hidden = list(Player.objects.filter(game=game, hidden=True).values_list("player_id", flat=True))
        for attempt in range(1, REBUILD_SWAP_ATTEMPTS + 1):
            report.swap_attempts = attempt
            # A board an erasure emptied stays as the erasure left its live twin (empty too).
            filled = {key: period for key, period in replay.periods.items() if replay.boards[key]}
            reply = run_sync(_swap, slug, filled, run, cursor, hidden, now_ms)
            if reply[0] == "ok":
                swapped = True
                report.boards, report.stashed = int(reply[1]), int(reply[2])
                break
            if reply[0] == "missing":
                _write_boards(replay, run, [reply[1]], fresh=True)
                continue
            # Scores landed since the replay: replay them too, and write what they changed.
            cursor = _replay_stream(game, replay, cursor, advance)
            written = set(temps)
            new = [key for key in replay.changed if keys.board_rebuild(key, run) not in written]
            temps += [keys.board_rebuild(key, run) for key in new]
            _write_boards(replay, run, new, fresh=True)
            _write_boards(replay, run, replay.rewrite - set(new), fresh=True)
            replay.rewrite.clear()
            _write_boards(replay, run, replay.changed, fresh=False)
        if not swapped:
            raise ServiceError(503, "rebuild_busy", "Scores kept arriving faster than the rebuild could catch up.")
    finally:
        if not swapped:
            run_sync(_drop, temps)
    report.events = replay.events
    report.kept = sorted(key for key in live if key not in replay.boards and keys.parse_board(key) is not None)
    return report
