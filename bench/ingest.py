"""``make bench``: how fast scores go in through the real server, beside what the stack allows.

    .venv/bin/python bench/ingest.py [--duration 10] [--concurrency 32] [--workers 1] [--players 100000]

Starts its own embedded Redis and SQLite in a temp dir, the real server
(uvicorn, the product's ASGI app plus one bare view), fills a board with
``--players`` players, then measures for ``--duration`` seconds each:

* single submissions/s (POST /api/v1/games/{g}/leaderboards/{b}/scores),
* batch items/s with 100 and 1,000 items per request (POST /api/v1/games/{g}/scores/batch),
* reference A, the Redis limit: the same submit script with the same keys and
  arguments (built by games/services/scores.py, SUBMIT_CHUNK_ITEMS items per call),
  pre-encoded and pipelined 1,000 items at a time straight into Redis,
* reference B, the framework limit: a bare async Django view on the same server,
* top-50 reads/s (GET .../leaderboards/{b}/daily?limit=50) of the full board,

prints a table and ratios, and rewrites its section of docs/benchmarks.md.
Only loopback; every child process is stopped on exit, Ctrl-C included.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import logging
import math
import os
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_DIR = Path(__file__).resolve().parent.parent
if str(REPO_DIR) not in sys.path:
    # Run as a script (bench/ingest.py), the repository root is not on the path yet.
    sys.path.insert(0, str(REPO_DIR))

from bench import common  # noqa: E402
from bench.common import LoadResult, Request, Watched  # noqa: E402

DEFAULT_DURATION_SECS = 10.0
DEFAULT_CONCURRENCY = 32
DEFAULT_WORKERS = 1
DEFAULT_PLAYERS = 100_000
DEFAULT_SETTINGS = "bench.settings_bench"
# Each phase runs this long (at most half its duration) before counting: connections open, config caches load.
WARMUP_SECS = 1.0
# The latency-at-rest probe (one connection) runs this long at most.
LATENCY_PROBE_MAX_SECS = 5.0
GAME_SLUG = "bench"
# Far above any rate reachable here, so the API-key limit never refuses a benchmark request. Not higher:
# past ~2.5e8/min the GCRA step falls below a double's resolution at epoch-ms scale (see bench/README.md).
API_KEY_REQUESTS_PER_MINUTE = 10_000_000
SCORE_MAX = 1_000_000
BATCH_SIZES = (100, 1000)
# A batch is a CPU-heavy request: with 32 in flight the server interleaves them and they all finish together, in
# bursts as long as a phase. A few connections per worker keep the server and Redis busy and complete steadily.
BATCH_CONNECTIONS_PER_WORKER = 4
PHASES = ("redis", "bare", "single", "single1", *(f"batch{size}" for size in BATCH_SIZES), "reads", "httpx")
# Batch bodies are made in advance so the client spends its CPU on sending, not on json.dumps;
# enough that none is sent twice in a phase (a body sent again is mostly no-ops in Redis: its
# scores are on the board already), as for reference A below.
# Reference A sends this many EVALSHA per pipeline, on this many connections so Redis never waits for a round trip.
REDIS_PIPELINE_ITEMS = 1000
REDIS_CONNECTIONS = 2
# Reference A's pipelines are encoded in advance, enough that none is sent twice in a phase: a
# pipeline sent again is mostly no-ops in Redis (its scores are already on the board, its
# rate-limit entries already counted), which made the reference 20% cheaper per item than any
# real request and the batch ratios 0.69 instead of 0.86 (2026-11-25). Sized for this many
# items a second at most (Redis alone does about 20,000 here).
REDIS_ITEMS_PER_SEC_CAP = 30_000
# ... but never more than this many (about 0.4 MB each): a long --duration resends some, and says so.
REDIS_PIPELINES_MAX = 600
READ_LIMIT = 50
BATCH_ERROR_MARKER = b'"error"'
# Above this share of a core the load generator may itself be the limit of a phase.
CLIENT_BOUND_CPU_SHARE = 0.85
# A closed-loop phase keeps the server busy; below this share of a core per worker, something else had the CPU.
SERVER_STARVED_CPU_SHARE = 0.7
# ... unless Redis was this busy: then the server waited on Redis's replies (the batch phases).
REDIS_BUSY_CPU_SHARE = 0.8


@dataclass
class Row:
    """One line of the results table."""

    name: str
    unit: str
    result: LoadResult
    note: str = ""
    latency: bool = True

    @property
    def rate(self) -> float:
        return self.result.items_per_sec if self.unit == "items/s" else self.result.requests_per_sec

    def cpu_us(self, process: str) -> float:
        """CPU µs one process spent per unit (item or request): steadier than rates on a busy machine."""
        share = self.result.cpu.get(process)
        return share * 1e6 / self.rate if share is not None and self.rate else float("nan")


@dataclass
class Run:
    args: argparse.Namespace
    machine: dict[str, str]
    rows: dict[str, Row] = field(default_factory=dict)


# --------------------------------------------------------------------------- set-up


def _create_game_and_key(env: dict[str, str]) -> str:
    """The game (best score, no per-player anti-spam) and an API key that is never rate limited; returns the key."""
    common.manage(env, "creategame", GAME_SLUG, "--name", "Bench", "--max-per-minute", "0")
    common.manage(env, "createleaderboard", GAME_SLUG, "main", "--mode", "best")
    raw_key = common.manage_output(
        env,
        "createapikey",
        GAME_SLUG,
        "--name",
        "bench",
        "--requests-per-minute",
        str(API_KEY_REQUESTS_PER_MINUTE),
        "--items-per-minute",
        str(API_KEY_REQUESTS_PER_MINUTE),
    )
    return raw_key.strip()


def _encoded_batches(game_config: Any, player_ids: list[list[str]], rng: random.Random) -> list[bytes]:
    """EVALSHA of the two submit scripts (the board's, then the game's) for each chunk of
    players, with exactly the keys and args the API path builds."""
    from core import clock
    from games import periods, scripts
    from games.services import scores

    now = clock.now()
    now_ms = clock.to_ms(now)
    board = game_config.boards[0]
    current = periods.board_current(board, now)
    step = scores.SUBMIT_CHUNK_ITEMS
    batches = []
    for ids in player_ids:
        commands = []
        for start in range(0, len(ids), step):
            chunk = [
                scores._Queued(
                    i, scores.Submission(player_id, rng.randrange(SCORE_MAX), leaderboard=board.slug), board, None
                )
                for i, player_id in enumerate(ids[start : start + step])
            ]
            key_list, args = scores._board_call(board, chunk, now_ms, current, game_config.max_submissions_per_minute)
            commands.append(common.resp_command("EVALSHA", scripts.SUBMIT_SCORE.sha, len(key_list), *key_list, *args))
            key_list, args = scores._game_call(game_config, [(q, True) for q in chunk], now_ms, True)
            commands.append(common.resp_command("EVALSHA", scripts.SUBMIT_GAME.sha, len(key_list), *key_list, *args))
        batches.append(b"".join(commands))
    return batches


class RedisPipe:
    """A raw connection that writes a pre-encoded pipeline and counts its replies (parsed by hiredis)."""

    def __init__(self, port: int) -> None:
        self.port = port

    async def __aenter__(self) -> RedisPipe:
        self.reader, self.writer = await asyncio.open_connection(common.LOOPBACK, self.port)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.writer.close()

    async def send(self, batch: bytes, items: int) -> int:
        """Send one pipeline of ``items`` submissions; returns how many were not accepted."""
        import hiredis

        parser = hiredis.Reader()
        self.writer.write(batch)
        await self.writer.drain()
        got = failed = 0
        board_reply = True  # the calls alternate: the board's script, then the game's
        while got < items:
            data = await self.reader.read(1 << 20)
            if not data:
                raise ConnectionError("Redis closed the connection")
            parser.feed(data)
            # One reply per script call: a list with one reply per item (the game's: one name each).
            while (reply := parser.gets()) is not False:
                if not isinstance(reply, list):
                    raise RuntimeError(f"submit script failed: {reply!r}")
                if board_reply:
                    got += len(reply)
                    failed += sum(1 for item in reply if not (isinstance(item, list) and item and item[0] == b"ok"))
                board_reply = not board_reply
        # The last game reply may still be on its way: read it before the next pipeline.
        while not board_reply:
            reply = parser.gets()
            if reply is False:
                data = await self.reader.read(1 << 20)
                if not data:
                    raise ConnectionError("Redis closed the connection")
                parser.feed(data)
                continue
            board_reply = True
        return failed


async def _fill(port: int, game_config: Any, chunks: list[list[str]], rng: random.Random) -> None:
    """Every player once; each connection encodes its next pipeline while Redis runs the other's."""
    todo = iter(chunks)

    async def worker() -> None:
        async with RedisPipe(port) as pipe:
            for ids in todo:
                failed = await pipe.send(_encoded_batches(game_config, [ids], rng)[0], len(ids))
                if failed:
                    raise RuntimeError(f"{failed} submissions failed while filling the board")

    await asyncio.gather(*(worker() for _ in range(REDIS_CONNECTIONS)))


async def _redis_limit(
    port: int, batches: list[bytes], duration_secs: float, warmup_secs: float, watch: list[Watched]
) -> LoadResult:
    """Reference A: pipelines of pre-encoded EVALSHA, on REDIS_CONNECTIONS connections, for the duration."""
    loop = asyncio.get_running_loop()
    measure_from = loop.time() + warmup_secs
    deadline = measure_from + duration_secs
    result = LoadResult(seconds=duration_secs)

    async def worker(index: int) -> None:
        async with RedisPipe(port) as pipe:
            # Each connection its own pipelines (every REDIS_CONNECTIONS-th): none sent twice.
            i = index
            while loop.time() < deadline:
                sent = loop.time()
                resent[0] += i >= len(batches)
                failed = await pipe.send(batches[i % len(batches)], REDIS_PIPELINE_ITEMS)
                done = loop.time()
                i += REDIS_CONNECTIONS
                if measure_from <= done <= deadline:
                    result.requests += 1
                    result.items += REDIS_PIPELINE_ITEMS - failed
                    result.item_errors += failed
                    result.latencies_ms.append((done - sent) * 1000)

    resent = [0]
    tasks = [asyncio.create_task(worker(i)) for i in range(REDIS_CONNECTIONS)]
    await asyncio.sleep(max(0.0, measure_from - loop.time()))
    before = {w.name: w.seconds() for w in watch}
    await asyncio.sleep(max(0.0, deadline - loop.time()))
    after = {w.name: w.seconds() for w in watch}
    result.cpu = {name: (after[name] - before[name]) / duration_secs for name in before}
    await asyncio.gather(*tasks)
    if resent[0]:
        print(f"warning: {resent[0]} Redis-limit pipelines were sent twice: raise REDIS_ITEMS_PER_SEC_CAP", flush=True)
    result.latencies_ms.sort()
    return result


# --------------------------------------------------------------------------- phases


def _single_body(rng: random.Random, players: int) -> bytes:
    return b'{"player_id":"p%d","score":%d}' % (rng.randrange(players), rng.randrange(SCORE_MAX))


def _batch_bodies(size: int, players: int, rng: random.Random, *, secs: float) -> list[bytes]:
    return [
        common.batch_body(rng, size=size, boards=["main"], players=players, score_max=SCORE_MAX)
        for _ in range(math.ceil(secs * REDIS_ITEMS_PER_SEC_CAP / size))
    ]


async def _phases(run: Run, *, http_port: int, redis_port: int, raw_key: str, watch: list[Watched]) -> None:
    import redis.asyncio as aioredis

    from core import config, keys, lua

    args = run.args
    duration, players = args.duration, args.players
    warmup = min(WARMUP_SECS, duration / 2)
    rng = random.Random(7)
    client = aioredis.Redis.from_url(f"redis://{common.LOOPBACK}:{redis_port}/0", decode_responses=True)
    try:
        await lua.ensure_loaded(client, *lua.REGISTERED)
        game_config = await config.get_game(GAME_SLUG)
        assert game_config is not None

        # The board first holds every player once, so every phase works on a board of full size.
        started = time.monotonic()
        ids = [f"p{n}" for n in range(players)]
        chunks = [ids[i : i + REDIS_PIPELINE_ITEMS] for i in range(0, players, REDIS_PIPELINE_ITEMS)]
        await _fill(redis_port, game_config, chunks, rng)
        board_keys = await client.zrange(keys.boards_index(keys.board_ref(GAME_SLUG, "main")), 0, -1)
        print(
            f"filled {len(board_keys)} boards with {players:,} players in {time.monotonic() - started:.1f} s",
            flush=True,
        )
    finally:
        await client.aclose()

    def report(row: Row) -> None:
        run.rows[row.name] = row
        r = row.result
        extra = f" p50 {r.latency_ms(0.5):.1f} ms p99 {r.latency_ms(0.99):.1f} ms" if row.latency else ""
        cpu = " ".join(f"{k} {v:.0%}" for k, v in r.cpu.items())
        cpu += f" | server {row.cpu_us('server'):,.0f} µs, Redis {row.cpu_us('redis'):,.0f} µs per {row.unit[:-2]}"
        failures = f" FAILURES {dict(r.statuses)} item errors {r.item_errors}" if r.failures or r.item_errors else ""
        print(f"{row.name:<34} {row.rate:>10,.0f} {row.unit:<8}{extra}  cpu: {cpu}{failures}", flush=True)

    # Reference A.
    if "redis" in args.phases:
        pipelines = min(
            REDIS_PIPELINES_MAX, math.ceil((duration + warmup) * REDIS_ITEMS_PER_SEC_CAP / REDIS_PIPELINE_ITEMS)
        )
        pool = [[f"p{rng.randrange(players)}" for _ in range(REDIS_PIPELINE_ITEMS)] for _ in range(pipelines)]
        batches = _encoded_batches(game_config, pool, rng)
        report(
            Row(
                "Redis limit (pipelined EVALSHA)",
                "items/s",
                await _redis_limit(redis_port, batches, duration, warmup, watch),
                note=f"{REDIS_CONNECTIONS} connections x {REDIS_PIPELINE_ITEMS:,} per pipeline",
                latency=False,
            )
        )

    headers = {"Authorization": f"Bearer {raw_key}", "Content-Type": "application/json"}
    scores_path = f"/api/v1/games/{GAME_SLUG}/leaderboards/main/scores"

    async def load(
        phase: str,
        name: str,
        unit: str,
        make: Any,
        *,
        concurrency: int = args.concurrency,
        secs: float = duration,
        client: str = "raw",
        marker: bytes | None = None,
        note: str = "",
    ) -> None:
        if phase not in args.phases:
            return
        result = await common.run_load(
            port=http_port,
            headers=headers,
            next_request=make,
            concurrency=concurrency,
            duration_secs=secs,
            warmup_secs=warmup,
            client=client,
            item_error_marker=marker,
            watch=watch,
            seed=len(run.rows),
        )
        report(Row(name, unit, result, note=note))

    # Reference B, and the same with httpx to show whether the load generator is the limit.
    await load(
        "bare",
        "bare Django view (POST)",
        "req/s",
        lambda r: Request("POST", f"/{_bare_path()}", _single_body(r, players)),
    )
    await load(
        "single",
        "single submissions",
        "req/s",
        lambda r: Request("POST", scores_path, _single_body(r, players)),
    )
    await load(
        "single1",
        "single submissions, 1 connection",
        "req/s",
        lambda r: Request("POST", scores_path, _single_body(r, players)),
        concurrency=1,
        secs=min(duration, LATENCY_PROBE_MAX_SECS),
        note="latency at rest",
    )
    for size in (size for size in BATCH_SIZES if f"batch{size}" in args.phases):
        bodies = itertools.cycle(_batch_bodies(size, players, rng, secs=duration + warmup))
        await load(
            f"batch{size}",
            f"batch of {size:,}",
            "items/s",
            lambda r, bodies=bodies, size=size: Request(
                "POST", f"/api/v1/games/{GAME_SLUG}/scores/batch", next(bodies), size
            ),
            concurrency=min(args.concurrency, BATCH_CONNECTIONS_PER_WORKER * args.workers),
            marker=BATCH_ERROR_MARKER,
            note=f"{min(args.concurrency, BATCH_CONNECTIONS_PER_WORKER * args.workers)} connections",
        )
    read_path = f"/api/v1/games/{GAME_SLUG}/leaderboards/main/daily?limit={READ_LIMIT}"
    await load("reads", f"top-{READ_LIMIT} reads (GET daily)", "req/s", lambda r: Request("GET", read_path))
    await load(
        "httpx",
        "bare Django view, httpx client",
        "req/s",
        lambda r: Request("POST", f"/{_bare_path()}", _single_body(r, players)),
        client="httpx",
        note="load-generator check",
    )

    # The reads must have been of the full board, else the read numbers mean little.
    if "reads" not in args.phases:
        return
    conn = common.RawHttpConnection(common.LOOPBACK, http_port, headers)
    status, body = await conn.request(Request("GET", read_path))
    await conn.close()
    page = json.loads(body)
    if status != 200 or page["total"] < players or len(page["entries"]) != READ_LIMIT:
        raise RuntimeError(f"unexpected board after the run: {status} total={page.get('total')}")


def _bare_path() -> str:
    from bench.urls_bench import BARE_VIEW_PATH

    return BARE_VIEW_PATH


# --------------------------------------------------------------------------- report


def _ratio(numerator: Row | None, denominator: Row | None) -> float:
    if numerator is None or denominator is None or not denominator.rate:
        return float("nan")
    return numerator.rate / denominator.rate


def _ratios(run: Run) -> list[tuple[str, float]]:
    rows = run.rows
    redis = rows.get("Redis limit (pipelined EVALSHA)")
    bare = rows.get("bare Django view (POST)")
    single = rows.get("single submissions")
    return [
        ("single submissions/s ÷ bare view req/s", _ratio(single, bare)),
        ("single submissions/s ÷ Redis-limit items/s", _ratio(single, redis)),
        *(
            (f"batch-{size:,} items/s ÷ Redis-limit items/s", _ratio(rows.get(f"batch of {size:,}"), redis))
            for size in BATCH_SIZES
        ),
        (f"top-{READ_LIMIT} reads/s ÷ bare view req/s", _ratio(rows.get(f"top-{READ_LIMIT} reads (GET daily)"), bare)),
        ("bare view: raw-socket client ÷ httpx client", _ratio(bare, rows.get("bare Django view, httpx client"))),
    ]


def _fmt_ms(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.1f}"


def _fmt_us(value: float) -> str:
    return "-" if math.isnan(value) or value < 1 else f"{value:,.0f}"


def _table(run: Run) -> str:
    names = ("server", "redis", "client")
    lines = [
        "| measure | rate | unit | p50 ms | p99 ms | "
        + " | ".join(f"{n} CPU" for n in names)
        + " | server µs/unit | Redis µs/unit | notes |",
        "| --- | ---: | --- | ---: | ---: | " + " | ".join("---:" for _ in names) + " | ---: | ---: | --- |",
    ]
    for row in run.rows.values():
        r = row.result
        p50 = _fmt_ms(r.latency_ms(0.5)) if row.latency else "-"
        p99 = _fmt_ms(r.latency_ms(0.99)) if row.latency else "-"
        cpu = " | ".join(f"{r.cpu.get(n, float('nan')):.0%}" for n in names)
        notes = [row.note] if row.note else []
        if r.failures or r.item_errors:
            notes.append(f"failures: {dict(r.statuses)}, item errors: {r.item_errors}")
        per_unit = " | ".join(_fmt_us(row.cpu_us(n)) for n in ("server", "redis"))
        lines.append(
            f"| {row.name} | {row.rate:,.0f} | {row.unit} | {p50} | {p99} | {cpu} | {per_unit} | {'; '.join(notes)} |"
        )
    return "\n".join(lines)


def _interpretation(run: Run) -> str:
    rows = run.rows
    ratios = dict(_ratios(run))
    single = rows["single submissions"]
    big = rows[f"batch of {BATCH_SIZES[-1]:,}"]
    redis = rows["Redis limit (pipelined EVALSHA)"]
    server_cpu = single.result.cpu.get("server", 0.0)
    redis_cpu = single.result.cpu.get("redis", 0.0)
    sentences = [
        f"A single submission runs at {ratios['single submissions/s ÷ bare view req/s']:.0%} of the bare view's "
        f"rate with the server at {server_cpu:.0%} of a core and Redis at {redis_cpu:.0%}, so one-at-a-time "
        + (
            "ingest is bound by the Python side (ASGI, Django, django-ninja, the API's own work), not by Redis."
            if server_cpu > 2 * redis_cpu
            else "ingest spends comparable time in Python and in Redis."
        ),
        f"Batches of {BATCH_SIZES[-1]:,} spread that per-request cost over many items and reach "
        f"{ratios[f'batch-{BATCH_SIZES[-1]:,} items/s ÷ Redis-limit items/s']:.0%} of the Redis limit "
        f"({big.rate:,.0f} of {redis.rate:,.0f} items/s); the gap is the server's Python work per item "
        f"(validating it, building, sending and reading its script call: {big.cpu_us('server'):,.0f} µs against "
        f"Redis's {big.cpu_us('redis'):,.0f} µs), with the server at {big.result.cpu.get('server', 0):.0%} of a core.",
    ]
    httpx = rows["bare Django view, httpx client"]
    client_cpu = max(r.result.cpu.get("client", 0.0) for r in rows.values() if r.name not in (redis.name, httpx.name))
    check = ratios["bare view: raw-socket client ÷ httpx client"]
    if check > 1.1:
        client = (
            f"The load generator uses raw asyncio sockets because the same bare-view load through httpx "
            f"reaches only 1/{check:.1f} of the rate (client CPU {httpx.result.cpu.get('client', 0):.0%}); "
            f"with raw sockets the client's CPU peaked at {client_cpu:.0%} of a core"
        )
    else:
        client = (
            f"The raw-socket load generator and httpx reach about the same bare-view rate (x{check:.2f}); "
            f"the client's CPU peaked at {client_cpu:.0%} of a core"
        )
    if client_cpu > CLIENT_BOUND_CPU_SHARE:
        client += ", so some HTTP rates here may be client-bound: compare ratios rather than absolute rates."
    else:
        client += ", so the client is not what limits the HTTP rates."
    sentences.append(client)
    # The reference, the client check and the one-connection probe do not keep the server busy by design.
    saturating = [
        r for r in rows.values() if r.name not in (redis.name, httpx.name, "single submissions, 1 connection")
    ]
    floor = SERVER_STARVED_CPU_SHARE * run.args.workers
    starved = [
        r.name
        for r in saturating
        if r.result.cpu.get("server", floor) < floor and r.result.cpu.get("redis", 0.0) < REDIS_BUSY_CPU_SHARE
    ]
    if starved:
        sentences.append(
            f"The server stayed below {SERVER_STARVED_CPU_SHARE:.0%} of a core per worker in {', '.join(starved)} "
            "although nothing else in the benchmark was saturated: other work on the machine took CPU, so those "
            "rates are low; their CPU µs per unit still hold."
        )
    return " ".join(sentences)


def _section(run: Run) -> str:
    args = run.args
    machine = "; ".join(f"{k}: {v}" for k, v in run.machine.items())
    ratios = "\n".join(f"| {name} | {value:.2f} |" for name, value in _ratios(run))
    return f"""## Ingest (`make bench`, bench/ingest.py)

Last run: {common.utc_now_text()}. Machine: {machine}.

Parameters: {args.duration:g} s per phase after {min(WARMUP_SECS, args.duration / 2):g} s of warm-up,
{args.concurrency} keep-alive connections, {args.workers} uvicorn worker(s)
(uvloop + httptools; production settings: DEBUG=0, no HTTPS redirect),
a game in `best` mode with no per-player anti-spam and all four periods (so each submission updates four
boards), {args.players:,} players on every board before the first phase, random player ids among them
and random scores below {SCORE_MAX:,}. CPU columns are shares of one core over the measured window
(server: uvicorn and its workers; client: the benchmark process, which generates the load).

{_table(run)}

| ratio | value |
| --- | ---: |
{ratios}

{_interpretation(run)}
"""


def _print_profile(path: Path) -> None:
    import pstats

    if not path.exists():
        print(f"no profile written to {path}")
        return
    stats = pstats.Stats(str(path))
    stats.strip_dirs().sort_stats("tottime").print_stats(30)
    stats.sort_stats("cumulative").print_stats(40)


# --------------------------------------------------------------------------- main


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=DEFAULT_DURATION_SECS, help="seconds measured per phase")
    parser.add_argument("--concurrency", type=int, default=DEFAULT_CONCURRENCY, help="keep-alive connections")
    parser.add_argument("--workers", type=int, default=DEFAULT_WORKERS, help="uvicorn worker processes")
    parser.add_argument("--players", type=int, default=DEFAULT_PLAYERS, help="players on the board")
    parser.add_argument(
        "--settings",
        default=DEFAULT_SETTINGS,
        help="Django settings module of the server (for A/B experiments; it must keep bench.urls_bench)",
    )
    parser.add_argument(
        "--phases",
        type=lambda text: [p for p in text.split(",") if p],
        default=list(PHASES),
        help=f"comma-separated subset of {','.join(PHASES)} (for profiling; implies --no-docs)",
    )
    parser.add_argument("--no-docs", action="store_true", help="do not rewrite docs/benchmarks.md")
    parser.add_argument(
        "--profile",
        type=Path,
        metavar="FILE",
        help="run the server under cProfile, write its stats to FILE and print the top (implies --no-docs)",
    )
    args = parser.parse_args(argv)
    if not 0.5 <= args.duration <= 600:
        parser.error("--duration must be between 0.5 and 600 seconds")
    if not 1 <= args.concurrency <= 1000:
        parser.error("--concurrency must be between 1 and 1000")
    if not 1 <= args.workers <= 64:
        parser.error("--workers must be between 1 and 64")
    if not REDIS_PIPELINE_ITEMS <= args.players <= 10_000_000:
        parser.error(f"--players must be between {REDIS_PIPELINE_ITEMS:,} and 10,000,000")
    unknown = set(args.phases) - set(PHASES)
    if unknown:
        parser.error(f"unknown phases: {', '.join(sorted(unknown))}")
    if args.settings != DEFAULT_SETTINGS or set(args.phases) != set(PHASES):
        # Numbers from another configuration must not replace the documented ones.
        args.no_docs = True
    if args.profile and args.workers != 1:
        parser.error("--profile needs --workers 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    machine = common.machine_info()
    print("machine: " + "; ".join(f"{k}: {v}" for k, v in machine.items()), flush=True)
    run = Run(args=args, machine=machine)
    processes: list[Any] = []
    with tempfile.TemporaryDirectory(prefix="lb-bench-") as tmp, common.sigterm_as_interrupt():
        try:
            redis_process, redis_url = common.start_redis(Path(tmp) / "redis")
            processes.append(redis_process)
            redis_port = int(redis_url.rsplit(":", 1)[1].split("/")[0])
            env = common.bench_env(var_dir=Path(tmp), redis_url=redis_url, settings_module=args.settings)
            # This process builds the script calls with the product's own code, so it needs the same settings.
            for name in ("DJANGO_SETTINGS_MODULE", "VAR_DIR", "REDIS_URL", "DEBUG", "SECRET_KEY", "ALLOWED_HOSTS"):
                os.environ[name] = env[name]
            os.environ.pop("DATABASE_URL", None)
            import django

            django.setup()
            # The settings log at INFO; httpx would log every request of the client check.
            logging.getLogger("httpx").setLevel(logging.WARNING)
            common.manage(env, "migrate", "--noinput", "-v", "0")
            raw_key = _create_game_and_key(env)

            http_port = common.free_port()
            server = common.start_server(env=env, port=http_port, workers=args.workers, profile_path=args.profile)
            processes.append(server)
            common.wait_for_http_ok(http_port, "/healthz", process=server)
            watch = [
                Watched("server", server.pid, with_descendants=True),
                Watched("redis", redis_process.pid),
                Watched("client", os.getpid()),
            ]
            phases = _phases(run, http_port=http_port, redis_port=redis_port, raw_key=raw_key, watch=watch)
            try:
                import uvloop

                # The client's own event loop costs less CPU per request with uvloop, as the server's does.
                uvloop.run(phases)
            except ImportError:
                asyncio.run(phases)
            if server.poll() is not None:
                raise RuntimeError(f"the server exited with code {server.returncode} during the run")
        except KeyboardInterrupt:
            print("\ninterrupted; stopping the server and Redis", file=sys.stderr)
            return 130
        except (RuntimeError, OSError, subprocess.CalledProcessError) as error:
            print(f"\nthe benchmark failed: {error}", file=sys.stderr)
            return 1
        finally:
            common.stop_processes(processes)

    print()
    for name, value in _ratios(run):
        print(f"{name:<48} {value:.2f}")
    if args.profile:
        _print_profile(args.profile)
    elif not args.no_docs:
        common.write_section("ingest", _section(run))
        print(f"\nwrote the ingest section of {common.DOCS_PATH.relative_to(REPO_DIR)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
