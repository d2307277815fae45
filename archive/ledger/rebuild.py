"""The rebuild (``manage.py rebuild_leaderboards``): each board's ledger replayed into
temporary keys, then swapped in atomically, so the boards end as the ledger says."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar, cast

from django.conf import settings
from django.db.models import Q

from competitions import scripts as cohort_scripts
from core import board_rules, clock, competition_rules, errors, keys
from core.config import BoardConfig
from core.models import Game, Leaderboard, Player
from core.redis import get_redis, run_sync
from games import periods
from games import services as game_services

from ..models import ArchivedPeriod, ScoreEvent
from .board_scripts import SwapBoard, Swapped, SwapRefused, board_swap
from .drain import ensure_group, ledger_drain
from .events import ENTRY_KINDS, Erasure, Progress, StreamId, event_row, split_id

T = TypeVar("T")

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


@dataclass(frozen=True)
class Entry:
    base: int
    sub: int
    member: str


class _Replay:
    """One leaderboard's period boards, rebuilt in memory from its ledger events in order.

    Memory: one entry (base, subscore, member) per (player, board) of the boards kept in
    Redis, plus one name per player. The events themselves stream through. Entries are
    keyed as the entries prelude keys them (core/board_rules.py is its twin), and the
    board's clock moves once per applied event, as the scripts move it, so a full replay
    gives every entry the member it had.
    """

    def __init__(self, config: BoardConfig, live: set[str], archived: set[tuple[str, str]]) -> None:
        self.config = config
        self.live = live
        self.archived = archived
        self.boards: dict[str, dict[str, Entry]] = {}
        # Per board: player -> the member its temporary key holds (to replace it on a rewrite).
        self.written: dict[str, dict[str, str]] = {}
        self.clock: str | None = None
        # Per board: player -> the metadata of their entry (JSON text, '' for none).
        self.metadata: dict[str, dict[str, str]] = {}
        self.periods: dict[str, periods.Period] = {}
        self.names: dict[str, str] = {}
        self.changed: dict[str, set[str]] = {}
        self.events = 0
        # Boards an erasure changed: written whole again, not only their changed members.
        self.rewrite: set[str] = set()
        # A competing board's periods (issue 22), per board key: player -> when they entered
        # (ms), scores accepted, attempts granted.
        self.entrants: dict[str, dict[str, int]] = {}
        self.tries: dict[str, dict[str, int]] = {}
        self.extra: dict[str, dict[str, int]] = {}
        # ... and, per board key: player -> their cohort's index, the rating they joined with.
        self.cohorts: dict[str, dict[str, int]] = {}
        self.ratings: dict[str, dict[str, int]] = {}
        self._spans: dict[str, periods.Period] = {}
        self._wanted: dict[str, bool] = {}

    def _period(self, kind: str, at: dt.datetime) -> periods.Period:
        # Events come in time order: the last period of each kind almost always fits.
        cached = self._spans.get(kind)
        if cached is not None and (
            cached.starts_at is None or (cached.ends_at is not None and cached.starts_at <= at < cached.ends_at)
        ):
            return cached
        period = periods.window_current(self.config, kind, at)
        self._spans[kind] = period
        return period

    def _keep(self, key: str, period: periods.Period) -> bool:
        """Whether this board belongs in Redis: all-time, any board Redis still keeps, and
        every period not archived yet. A complete archive no longer in Redis stays out:
        the database serves it."""
        wanted = self._wanted.get(key)
        if wanted is None:
            wanted = period.ends_at is None or key in self.live or (period.kind, period.id) not in self.archived
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
            self.metadata.get(key, {}).pop(player_id, None)
        for entries in (self.entrants, self.tries, self.extra, self.cohorts, self.ratings):
            for players in entries.values():
                players.pop(player_id, None)

    def _competing_key(self, at: dt.datetime) -> str | None:
        """The competing window's board at ``at``, if the board competes and Redis keeps it."""
        competition = self.config.competition
        if competition is None or competition.window not in self.config.windows:
            return None
        period = self._period(competition.window, at)
        key = keys.board(self.config.ref, period.kind, period.id)
        return key if self._keep(key, period) else None

    def _entry(self, kind: str, player_id: str, value: int, at: dt.datetime) -> None:
        """A join, attempts granted, a placement, or an applied score's entry and attempt (the
        scripts' twin)."""
        key = self._competing_key(at)
        if key is None:
            return
        if kind == ScoreEvent.Kind.COHORT:
            self.cohorts.setdefault(key, {})[player_id] = value
            return
        self.entrants.setdefault(key, {}).setdefault(player_id, clock.to_ms(at))
        competition = self.config.competition
        if kind == ScoreEvent.Kind.JOIN and competition and competition.cohort_by == competition_rules.BY_RATING:
            self.ratings.setdefault(key, {}).setdefault(player_id, value)
        elif kind == ScoreEvent.Kind.ATTEMPTS:
            extra = self.extra.setdefault(key, {})
            extra[player_id] = extra.get(player_id, 0) + value
        elif kind == ScoreEvent.Kind.SUBMIT:
            tries = self.tries.setdefault(key, {})
            tries[player_id] = tries.get(player_id, 0) + 1

    def apply(
        self,
        kind: str,
        player_id: str,
        value: int,
        display_name: str,
        mode: str,
        at: dt.datetime,
        metadata: dict | None = None,
        subscore: int | None = None,
    ) -> None:
        """One event, with the submit script's (or the correction script's) semantics."""
        self.events += 1
        if kind in ENTRY_KINDS:
            self._entry(kind, player_id, value, at)  # no score, and the board's clock stays
            return
        if kind == ScoreEvent.Kind.SUBMIT:
            self._entry(kind, player_id, value, at)
        config = self.config
        if config.ties != board_rules.SHARED:
            self.clock = board_rules.clock_next(self.clock, clock.to_ms(at))
        if display_name:
            self.names[player_id] = display_name
        else:
            self.names.setdefault(player_id, player_id)
        correction = kind == ScoreEvent.Kind.CORRECTION
        # A correction of a best or latest board sets the score.
        rule = Leaderboard.Mode.LATEST if correction and mode != Leaderboard.Mode.INCREMENT else mode
        meta = "" if metadata is None else game_services.metadata_text(metadata)
        given_sub = config.sub_oriented(subscore) if subscore is not None and config.has_subscore else None
        for window in self.config.windows:
            period = self._period(window, at)
            key = keys.board(self.config.ref, period.kind, period.id)
            if not self._keep(key, period):
                continue
            board = self.boards.get(key)
            if board is None:
                board = self.boards[key] = {}
                self.periods[key] = period
            old = board.get(player_id)
            # A correction without a subscore keeps the stored one (adds 0 on increment boards).
            sub = given_sub if given_sub is not None else (old.sub if old and correction and rule != "increment" else 0)
            new = board_rules.next_entry(
                mode=rule,
                stored=None if old is None else (old.base, old.sub),
                value=config.sort_base(value),
                sub=sub,
            )
            if new is not None:
                base, new_sub = new
                member = board_rules.member_of(config.ties, player_id, sub=new_sub, clock=self.clock or "")
                board[player_id] = Entry(base, new_sub, member)
                self.changed.setdefault(key, set()).add(player_id)
            if not correction and (new is not None or mode != Leaderboard.Mode.BEST):
                self.metadata.setdefault(key, {})[player_id] = meta


async def _stream_cut(ref: str) -> tuple[StreamId, int]:
    """The first id the stream still holds (older events come from the table), and its length."""
    await ensure_group(ref)  # creates the stream if Redis lost it
    info = await get_redis().xinfo_stream(keys.ledger(ref))
    if info["length"]:
        return split_id(info["first-entry"][0]), int(info["length"])
    ms, seq = split_id(info["last-generated-id"])
    return (ms, seq + 1), 0


async def _stream_read(ref: str, start: StreamId, count: int) -> list[tuple[str, dict[str, str]]]:
    entries = await get_redis().xrange(keys.ledger(ref), min=f"{start[0]}-{start[1]}", max="+", count=count)
    return cast("list[tuple[str, dict[str, str]]]", entries)


def _replay_stream(board: Leaderboard, replay: _Replay, cursor: StreamId, report: Progress) -> StreamId:
    """Replay the stream's entries from ``cursor`` on; returns the id after the last one."""
    while True:
        entries = run_sync(_stream_read, replay.config.ref, cursor, REBUILD_READ_CHUNK)
        for event_id, fields in entries:
            event = event_row(board.game_id, board.pk, event_id, fields)
            if isinstance(event, Erasure):
                replay.erase(event.player_id)
            elif event is not None:
                replay.apply(
                    event.kind,
                    event.player_id,
                    event.value,
                    event.display_name,
                    event.mode,
                    event.at,
                    event.metadata,
                    event.subscore,
                )
        if entries:
            ms, seq = split_id(entries[-1][0])
            cursor = (ms, seq + 1)
            report(len(entries), 0)
        if len(entries) < REBUILD_READ_CHUNK:
            return cursor


def _chunks(items: Sequence[T], size: int) -> Iterable[Sequence[T]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


async def _write_board(
    temp: str, entries: Sequence[tuple[str, Entry]], stale: Sequence[str], fresh: bool, prefixed: bool
) -> None:
    """Write entries (player, entry) to a temporary board and its members HASH, dropping the
    ``stale`` members they replace."""
    client = get_redis()
    members = keys.entry_members(temp)
    if fresh:
        await client.delete(temp, members)
    if stale:
        await client.zrem(temp, *stale)
    for chunk in _chunks(entries, REBUILD_WRITE_CHUNK):
        pipe = client.pipeline(transaction=False)
        pipe.zadd(temp, {entry.member: entry.base for _, entry in chunk})
        if prefixed:
            pipe.hset(members, mapping={player: entry.member for player, entry in chunk})
        await pipe.execute()
    await client.pexpire(temp, REBUILD_TEMP_TTL_MS)
    if prefixed:
        await client.pexpire(members, REBUILD_TEMP_TTL_MS)


def _write_boards(replay: _Replay, run: str, board_keys: Iterable[str], *, fresh: bool) -> None:
    """Write rebuilt boards to their temporary keys: whole (``fresh``), or the members changed since."""
    prefixed = replay.config.ties != board_rules.SHARED
    for key in list(board_keys):
        board = replay.boards[key]
        written = replay.written.setdefault(key, {})
        if fresh:
            written.clear()
        players = board if fresh else replay.changed.get(key, ())
        entries = [(player, board[player]) for player in players]
        stale = [written[p] for p, entry in entries if p in written and written[p] != entry.member]
        run_sync(_write_board, keys.board_rebuild(key, run), entries, stale, fresh, prefixed)
        written.update((player, entry.member) for player, entry in entries)
        replay.changed.pop(key, None)


def _names(game: Game, found: dict[str, str]) -> list[tuple[str, str, bool]]:
    """(player_id, name, mark for the player sync) for every player the ledger knows.

    A player's database row wins over the ledger when it has a real name: it carries
    admin renames (which are not ledger events) and trails Redis by one player sync
    (PLAYER_SYNC_INTERVAL_SECS). A row still named after the player id (a row created
    when a player was hidden before their first sync) takes the ledger's name.
    """
    stored = dict(Player.objects.filter(game=game).values_list("player_id", "display_name").iterator())
    names = []
    for player_id, from_ledger in sorted(found.items()):
        row = stored.get(player_id)
        name = row if row and row != player_id else from_ledger
        names.append((player_id, name, row != name))
    return names


async def _swap(
    ref: str,
    boards: dict[str, periods.Period],
    run: str,
    cursor: StreamId,
    hidden: Sequence[str],
    now_ms: int,
    latest: str | None,
) -> Swapped | SwapRefused:
    grace_ms = settings.ARCHIVE_GRACE_SECS * 1000
    swap = [
        SwapBoard(
            board_key=key,
            rebuilt_key=keys.board_rebuild(key, run),
            job="" if period.ends_at_ms is None else f"{period.kind}:{period.id}",
            due_ms=None if period.ends_at_ms is None else period.ends_at_ms + grace_ms,
        )
        for key, period in boards.items()
    ]
    return await board_swap(
        get_redis(), ref=ref, now_ms=now_ms, cursor=cursor, clock=latest or "", hidden=hidden, boards=swap
    )


def _temps(board_key: str, run: str) -> list[str]:
    """A board's temporary keys in a run: the ZSET and its members HASH."""
    temp = keys.board_rebuild(board_key, run)
    return [temp, keys.entry_members(temp)]


async def _drop(temps: Sequence[str]) -> None:
    if temps:
        await get_redis().delete(*temps)


async def _restore_entries(replay: _Replay) -> None:
    """A competing board's entrants, tries and attempts granted, where Redis lost them: what it
    still holds (as new or newer as the ledger's) stays."""
    pipe = get_redis().pipeline(transaction=False)
    for board_key, entered in replay.entrants.items():
        if entered:
            pipe.zadd(keys.entry_entrants(board_key), entered, nx=True)
    for name, found in (
        (keys.entry_tries, replay.tries),
        (keys.entry_extra, replay.extra),
        (keys.entry_ratings, replay.ratings),
    ):
        for board_key, counts in found.items():
            for player_id, count in counts.items():
                pipe.hsetnx(name(board_key), player_id, count)
    await pipe.execute()
    competition = replay.config.competition
    balanced = competition is not None and competition.cohort_fill == competition_rules.BALANCED
    for board_key, placed in replay.cohorts.items():
        await cohort_scripts.cohorts_restore(get_redis(), board_key=board_key, placed=placed, balanced=balanced)


async def _restore_metadata(metadata: dict[str, dict[str, str]]) -> None:
    """Entries' metadata the rebuild found, where Redis lost it (a newer submission's stays)."""
    pipe = get_redis().pipeline(transaction=False)
    for board_key, entries in metadata.items():
        for player_id, meta in entries.items():
            if meta:
                pipe.hsetnx(keys.entry_meta(board_key), player_id, meta)
    await pipe.execute()


def leaderboards_rebuild(*, game: Game, progress: Progress | None = None) -> RebuildReport:
    """Replay each of the game's boards' ledger into its Redis boards; they end identical to
    what the ledger says (see :func:`_board_rebuild`), and lost names come back."""
    report = RebuildReport(game=game.slug)
    done = 0
    total = 0

    def advance(step: int, more: int) -> None:
        nonlocal done, total
        done += step
        total += more
        if progress is not None:
            progress(done, max(total, done))

    ledger_drain(game=game)
    names: dict[str, str] = {}
    hidden = list(Player.objects.filter(game=game, hidden=True).values_list("player_id", flat=True))
    game_services.hidden_restore(game_slug=game.slug, player_ids=hidden)
    for board in Leaderboard.objects.filter(game=game).select_related("game"):
        replay = _board_rebuild(board, hidden, report, advance)
        for player_id, name in replay.names.items():
            if name != player_id or player_id not in names:
                names[player_id] = name
    found = _names(game, names)  # a database read: not inside the Redis bridge's loop
    report.names_restored = run_sync(lambda: game_services.names_write(slug=game.slug, mode="restore", names=found))
    return report


def _board_rebuild(board: Leaderboard, hidden: list[str], report: RebuildReport, advance: Progress) -> _Replay:
    """Rebuild one board: its all-time window, every period board Redis keeps (its boards
    index), and every period with events that has no complete archive; periods of windows
    the board no longer keeps, and live boards with no event at all, are left as they are
    (see docs/ledger.md)."""
    now_ms = clock.now_ms()
    config = BoardConfig.from_model(board, board.game)
    ref = config.ref
    cut, in_stream = run_sync(_stream_cut, ref)
    if not in_stream:
        # An empty stream (maybe recreated after a data loss, its ids starting again):
        # every stored event comes from the table.
        newest = ScoreEvent.objects.filter(leaderboard=board).order_by("-stream_ms", "-stream_seq").first()
        if newest is not None:
            cut = max(cut, (newest.stream_ms, newest.stream_seq + 1))
    live = set(cast("list[str]", run_sync(lambda: get_redis().zrangebyscore(keys.boards_index(ref), now_ms, "+inf"))))
    archived = set(
        ArchivedPeriod.objects.filter(leaderboard=board, status=ArchivedPeriod.Status.COMPLETE).values_list(
            "period", "period_id"
        )
    )
    replay = _Replay(config, live, archived)

    # Older events from the table, the rest from the stream: each event exactly once,
    # whichever drain has stored it by now.
    older = ScoreEvent.objects.filter(leaderboard=board).filter(
        Q(stream_ms__lt=cut[0]) | Q(stream_ms=cut[0], stream_seq__lt=cut[1])
    )
    advance(0, older.count() + in_stream)
    rows = older.order_by("stream_ms", "stream_seq").values_list(
        "kind", "player_id", "value", "display_name", "mode", "at", "metadata", "subscore"
    )
    for i, row in enumerate(rows.iterator(chunk_size=REBUILD_READ_CHUNK), start=1):
        replay.apply(*row)
        if i % REBUILD_READ_CHUNK == 0:
            advance(REBUILD_READ_CHUNK, 0)
    advance(replay.events % REBUILD_READ_CHUNK, 0)
    cursor = _replay_stream(board, replay, cut, advance)
    _swap_in(board, replay, cursor, hidden, report, advance)
    run_sync(_restore_metadata, replay.metadata)
    run_sync(_restore_entries, replay)
    report.events += replay.events
    report.kept += sorted(key for key in live if key not in replay.boards and keys.parse_board(key) is not None)
    return replay


def _swap_in(
    board: Leaderboard, replay: _Replay, cursor: StreamId, hidden: list[str], report: RebuildReport, advance: Progress
) -> None:
    """Write the replayed boards to temporary keys and swap them in, replaying what landed meanwhile."""
    ref = replay.config.ref
    now_ms = clock.now_ms()
    run = uuid.uuid4().hex[:12]
    temps = [temp for key in replay.boards for temp in _temps(key, run)]
    swapped = False
    try:
        _write_boards(replay, run, replay.boards, fresh=True)
        replay.rewrite.clear()
        for attempt in range(1, REBUILD_SWAP_ATTEMPTS + 1):
            report.swap_attempts = max(report.swap_attempts, attempt)
            # A board an erasure emptied stays as the erasure left its live twin (empty too).
            filled = {key: period for key, period in replay.periods.items() if replay.boards[key]}
            reply = run_sync(_swap, ref, filled, run, cursor, hidden, now_ms, replay.clock)
            if isinstance(reply, Swapped):
                swapped = True
                report.boards += reply.boards
                report.stashed += reply.stashed
                break
            if reply.missing:
                _write_boards(replay, run, [reply.missing], fresh=True)
                continue
            # Scores landed since the replay: replay them too, and write what they changed.
            cursor = _replay_stream(board, replay, cursor, advance)
            written = set(temps)
            new = [key for key in replay.changed if keys.board_rebuild(key, run) not in written]
            temps += [temp for key in new for temp in _temps(key, run)]
            _write_boards(replay, run, new, fresh=True)
            _write_boards(replay, run, replay.rewrite - set(new), fresh=True)
            replay.rewrite.clear()
            _write_boards(replay, run, replay.changed, fresh=False)
        if not swapped:
            raise errors.rebuild_busy()
    finally:
        if not swapped:
            run_sync(_drop, temps)
