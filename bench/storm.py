"""``make bench-storm``: 3,000 websockets opening at once on one websocket worker.

    .venv/bin/python bench/storm.py [--clients 3000] [--api-readers 32] [--pool-sizes 8,16,32,64,128,256]
                                    [--no-floor] [--no-docs] [--log FILE] [--profile FILE]

Starts its own embedded Redis and SQLite in a temp dir, then, each on a fresh worker:

* **the storm**: the real server as WEB_WS_WORKERS=1 runs its websockets (one uvicorn
  worker, the product's ASGI app, production settings, JSON logs) and client processes
  that, at one instant, each open their share of ``--clients`` sockets, all at once and
  with no retry. Each socket subscribes to a board (as a page does when it opens) and
  counts as admitted when its snapshot arrives; closed before that, it is refused (with
  its close code); answered with an ``error``, an error. Reported: admitted / refused /
  errors, the time until the last socket was admitted, p50 / p99 of each socket's time
  from its connect to its 101 and to its snapshot, the worker's counters from its
  /metrics (load shed, pool waits and exhaustions, Redis outages), its warning lines,
  CPU of the worker, the client processes and Redis, and the worker's memory per socket;
* **the floor** (unless ``--no-floor``): the same storm against bench/floor_app.py, a bare
  ASGI app on the same uvicorn that accepts and answers a subscribe with one frame: what
  uvicorn and the handshakes cost on this machine now, whatever else runs on it;
* **the storm beside the API**: the same storm while ``--api-readers`` readers of the
  board's top 50, each pausing API_READER_PAUSE_SECS between reads, use the same worker (the
  API and the sockets in one process, as WEB_WS_WORKERS=0 runs them): their answers and
  latency;
* **the pool**: for each of ``--pool-sizes``, ``POOL_READERS`` API readers alone for
  ``API_ONLY_SECS`` on a worker with that REDIS_POOL_SIZE: reads/s, p50 / p99, 503s, pool
  waits and exhaustions (the measurement docs/operations.md sizes the pool from).

Rewrites its section of docs/benchmarks.md (``<!-- storm:start -->``) unless
``--no-docs``. Only loopback; every child process is stopped on exit.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import multiprocessing
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_DIR = Path(__file__).resolve().parent.parent
if str(REPO_DIR) not in sys.path:
    # Run as a script (bench/storm.py), the repository root is not on the path yet.
    sys.path.insert(0, str(REPO_DIR))

from bench import common  # noqa: E402
from bench.common import Request  # noqa: E402

DEFAULT_CLIENTS = 3000
GAME_SLUG = "storm"
BOARD = "main"
PERIOD = "daily"
LIMIT = 10
# Scores on the board before the storm, so that each snapshot carries rows, as a real one does.
SEEDED_PLAYERS = 50
# One client process opens at most this many sockets (its CPU is shared with the server's).
SOCKETS_PER_CLIENT_PROCESS = 750
# The target: every socket of the storm admitted within this long, without a retry.
TARGET_ALL_ADMITTED_SECS = 15.0
# A socket that has neither its snapshot nor a close this long after its connect is given up.
SOCKET_GIVE_UP_SECS = 60.0
# Client processes start the storm together this long after the last one is ready.
START_DELAY_SECS = 1.0
# The worker's counters are read this long after the storm, once its last sockets settled.
SETTLE_SECS = 1.0
# A client process must report within this long after the storm's give-up time.
RESULT_TIMEOUT_SECS = 60.0
OPEN_FILES_SPARE = 512
METRICS_TIMEOUT_SECS = 120.0
PRODUCT_APP = "leaderboard_site.asgi:application"
FLOOR_APP = "bench.floor_app:app"
# The listening socket's backlog of every worker here (uvicorn's --backlog, by its UVICORN_BACKLOG
# variable): 4,096, the kernel's somaxconn, holds a storm of 3,000. At uvicorn's default (2,048)
# the kernel drops the connections past it and the clients' TCP retries them 1, 3, 7 and 15 s
# later: most of a storm's time, on the product and the floor alike (docs/deploy.md).
BACKLOG = 4096
# The floor's tick, off: a storm measures handshakes, not the fan-out of frames.
FLOOR_TICK_OFF_MS = 3_600_000
API_KEY_REQUESTS_PER_MINUTE = 10_000_000
# The pool phase: this many closed-loop API readers, this long, per pool size.
POOL_READERS = 256
API_ONLY_SECS = 10.0
# Beside the storm: this many readers, each pausing this long between reads (a steady API load,
# not one that takes every cycle the worker has: that would starve anything beside it).
DEFAULT_API_READERS = 32
API_READER_PAUSE_SECS = 0.1
DEFAULT_POOL_SIZES = "8,16,32,64,128,256"
# Server-side counters reported per run (read from the worker's /metrics).
COUNTERS = {
    "shed": ("leaderboard_socket_admissions_shed_total", {}),
    "pool waits": ("leaderboard_redis_pool_waits_total", {}),
    "pool exhausted": ("leaderboard_redis_pool_exhausted_total", {}),
    "backend errors (redis)": ("leaderboard_backend_errors_total", {"backend": "redis"}),
}


# --------------------------------------------------------------------------- client processes


@dataclass(frozen=True)
class ClientJob:
    index: int
    port: int
    sockets: int


@dataclass
class Outcome:
    """One socket of the storm: what it got first, and when (seconds from the storm's start)."""

    kind: str  # "admitted", "refused <code>", "error <code>", or "failed <reason>"
    connect_at: float
    done_at: float
    open_at: float = math.nan  # the handshake's 101 (the socket accepted)


class _Client:
    def __init__(self, job: ClientJob, commands: Any, results: Any) -> None:
        self.job, self.commands, self.results = job, commands, results
        self.open: list[Any] = []

    async def run(self) -> None:
        from websockets.asyncio.client import connect  # noqa: F401 - imported before the storm, not during it

        self.results.put(("ready", self.job.index))
        command = await asyncio.to_thread(self.commands.recv)
        if command[0] != "go":
            return
        start_at: float = command[1]
        await asyncio.sleep(max(0.0, start_at - time.monotonic()))
        outcomes = await asyncio.gather(*(self._one(start_at) for _ in range(self.job.sockets)))
        self.results.put(("done", self.job.index, outcomes))
        await asyncio.to_thread(self.commands.recv)  # "stop": the sockets stay open until then
        await asyncio.gather(*(asyncio.wait_for(ws.close(), 5) for ws in self.open), return_exceptions=True)

    async def _one(self, start_at: float) -> Outcome:
        from websockets.asyncio.client import connect
        from websockets.exceptions import ConnectionClosed, InvalidStatus

        connect_at = time.monotonic() - start_at
        open_at = math.nan
        ws = None
        try:
            async with asyncio.timeout(SOCKET_GIVE_UP_SECS):
                ws = await connect(
                    f"ws://{common.LOOPBACK}:{self.job.port}/ws/games/{GAME_SLUG}/",
                    origin=f"http://{common.LOOPBACK}:{self.job.port}",  # type: ignore[arg-type]
                    open_timeout=None,
                    ping_interval=None,
                    close_timeout=2,
                )
                open_at = time.monotonic() - start_at
                await ws.send(
                    json.dumps({"action": "subscribe", "leaderboard": BOARD, "period": PERIOD, "limit": LIMIT})
                )
                first = json.loads(await ws.recv())
            kind = "admitted" if first.get("type") == "standings" else f"error {first.get('code')}"
        except ConnectionClosed as closed:
            kind = f"refused {closed.rcvd.code}" if closed.rcvd else "failed no close frame"
        except InvalidStatus as error:
            kind = f"failed HTTP {error.response.status_code}"
        except TimeoutError:
            kind = f"failed no answer in {SOCKET_GIVE_UP_SECS:g} s"
        except OSError as error:
            kind = f"failed {type(error).__name__}"
        done_at = time.monotonic() - start_at
        if ws is not None:
            if kind == "admitted":
                self.open.append(ws)
            else:
                await ws.close()
        return Outcome(kind, connect_at, done_at, open_at)


def _client_main(job: ClientJob, commands: Any, results: Any) -> None:
    """Entry point of a client process (spawned: it shares nothing with the benchmark but the pipes)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    common.die_with_parent()
    common.raise_open_files_limit(job.sockets + OPEN_FILES_SPARE)
    try:
        import uvloop

        uvloop.run(_Client(job, commands, results).run())
    except ImportError:
        asyncio.run(_Client(job, commands, results).run())


class Fleet:
    """The client processes of one storm."""

    def __init__(self, *, port: int, clients: int) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.results = ctx.Queue()
        self.pipes: list[Any] = []
        self.processes: list[Any] = []
        count = max(1, math.ceil(clients / SOCKETS_PER_CLIENT_PROCESS))
        for index in range(count):
            size = clients // count + (1 if index < clients % count else 0)
            ours, theirs = ctx.Pipe()
            process = ctx.Process(
                target=_client_main, args=(ClientJob(index, port, size), theirs, self.results), daemon=True
            )
            process.start()
            self.pipes.append(ours)
            self.processes.append(process)

    def _get(self, timeout: float) -> Any:
        import queue

        deadline = time.monotonic() + timeout
        while True:
            try:
                return self.results.get(timeout=1.0)
            except queue.Empty:
                if any(not p.is_alive() for p in self.processes):
                    raise RuntimeError("a client process exited early") from None
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the client processes did not answer within {timeout:.0f} s") from None

    def storm(self) -> tuple[float, list[Outcome]]:
        """Start every socket at one instant; (that instant, every socket's outcome)."""
        for _ in self.processes:
            self._get(common.STARTUP_TIMEOUT_SECS)
        start_at = time.monotonic() + START_DELAY_SECS
        for pipe in self.pipes:
            pipe.send(("go", start_at))
        outcomes: list[Outcome] = []
        for _ in self.processes:
            outcomes += self._get(START_DELAY_SECS + SOCKET_GIVE_UP_SECS + RESULT_TIMEOUT_SECS)[2]
        return start_at, outcomes

    def stop(self) -> None:
        for pipe in self.pipes:
            try:
                pipe.send(("stop",))
            except OSError:
                pass
        for process in self.processes:
            process.join(timeout=common.SHUTDOWN_GRACE_SECS)
            if process.is_alive():
                process.kill()
                process.join()


# --------------------------------------------------------------------------- API readers


@dataclass
class ApiResult:
    readers: int
    seconds: float = 0.0
    statuses: Counter[str] = field(default_factory=Counter)
    latencies_ms: list[float] = field(default_factory=list)

    @property
    def ok_per_sec(self) -> float:
        return self.statuses.get("200", 0) / self.seconds if self.seconds else math.nan

    def latency_ms(self, quantile: float) -> float:
        return common.percentile(self.latencies_ms, quantile)


async def _read_api(port: int, readers: int, stop: Any, pause_secs: float) -> ApiResult:
    """``readers`` closed-loop readers of the board's top 50 (each pausing ``pause_secs`` after
    each answer) until ``stop`` (a threading.Event) is set."""
    result = ApiResult(readers)
    request = Request("GET", f"/api/v1/games/{GAME_SLUG}/leaderboards/{BOARD}/{PERIOD}?limit=50")
    started = time.monotonic()

    async def reader() -> None:
        conn = common.RawHttpConnection(common.LOOPBACK, port, {})
        try:
            while not stop.is_set():
                sent = time.monotonic()
                try:
                    status, _ = await conn.request(request)
                except (OSError, asyncio.IncompleteReadError, ValueError) as error:
                    result.statuses[type(error).__name__] += 1
                    await conn.close()
                    await asyncio.sleep(0.05)
                    continue
                result.statuses[str(status)] += 1
                result.latencies_ms.append((time.monotonic() - sent) * 1000)
                if pause_secs:
                    await asyncio.sleep(pause_secs)
        finally:
            await conn.close()

    await asyncio.gather(*(reader() for _ in range(readers)))
    result.seconds = time.monotonic() - started
    result.latencies_ms.sort()
    return result


class ApiReaders:
    """API readers on a thread of their own (their event loop beside the benchmark's work)."""

    def __init__(self, port: int, readers: int, pause_secs: float) -> None:
        import threading

        self.stop = threading.Event()
        self.result: ApiResult | None = None

        def run() -> None:
            self.result = asyncio.run(_read_api(port, readers, self.stop, pause_secs))

        self.thread = threading.Thread(target=run, name="api-readers", daemon=True)
        self.thread.start()

    def finish(self) -> ApiResult:
        self.stop.set()
        self.thread.join(timeout=common.REQUEST_GRACE_SECS + 30)
        if self.result is None:
            raise RuntimeError("the API readers did not finish")
        return self.result


# --------------------------------------------------------------------------- one run on a fresh worker


@dataclass
class Run:
    name: str
    pool_size: int
    clients: int
    outcomes: list[Outcome] = field(default_factory=list)
    counters: dict[str, float] = field(default_factory=dict)
    cpu_secs: float = 0.0
    system_secs: float = 0.0  # the part of cpu_secs spent in the kernel (its sockets)
    others_cpu_secs: dict[str, float] = field(default_factory=dict)  # the client processes', Redis's
    rss_growth_bytes: int = 0  # the worker's memory grown over the storm (every socket open)
    load_average: float = 0.0
    listen_drops: int = 0  # connections the kernel dropped at the full listen queue (this machine's, all sockets)
    api: ApiResult | None = None
    warnings: Counter[str] = field(default_factory=Counter)

    @property
    def kinds(self) -> Counter[str]:
        return Counter(o.kind for o in self.outcomes)

    def count(self, prefix: str) -> int:
        return sum(n for kind, n in self.kinds.items() if kind.startswith(prefix))

    @property
    def admitted(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.kind == "admitted"]

    @property
    def all_admitted_secs(self) -> float:
        """When the last socket was admitted, from the storm's start (inf if any was not)."""
        if not self.clients or len(self.admitted) < self.clients:
            return math.inf
        return max(o.done_at for o in self.admitted)

    def snapshot_ms(self, quantile: float) -> float:
        """From a socket's connect to its snapshot."""
        return common.percentile(sorted((o.done_at - o.connect_at) * 1000 for o in self.admitted), quantile)

    def accept_ms(self, quantile: float) -> float:
        """From a socket's connect to the handshake's 101 (the server accepted it)."""
        return common.percentile(sorted((o.open_at - o.connect_at) * 1000 for o in self.admitted), quantile)


def _system_seconds(pid: int) -> float:
    """CPU time the kernel spent for a process (its sockets' syscalls), from /proc."""
    raw = Path(f"/proc/{pid}/stat").read_bytes()
    return int(raw[raw.rindex(b")") + 2 :].split()[12]) / os.sysconf("SC_CLK_TCK")


def _listen_drops() -> int:
    """Connections the kernel dropped because a listen queue was full, so far (TcpExt ListenDrops)."""
    lines = Path("/proc/net/netstat").read_text().splitlines()
    for names, values in zip(lines[::2], lines[1::2], strict=False):
        fields = dict(zip(names.split(), values.split(), strict=False))
        if "ListenDrops" in fields:
            return int(fields["ListenDrops"])
    return 0


def _metrics(port: int, *, floor: bool) -> dict[str, float]:
    if floor:
        return dict.fromkeys(COUNTERS, 0.0)  # the floor has no metrics, nor anything to count
    import httpx
    from prometheus_client.parser import text_string_to_metric_families

    # A worker still busy with thousands of sockets (or profiled) may take a while to answer.
    text = httpx.get(f"http://{common.LOOPBACK}:{port}/metrics", timeout=METRICS_TIMEOUT_SECS).text
    samples = {
        (s.name, frozenset(s.labels.items())): s.value for f in text_string_to_metric_families(text) for s in f.samples
    }
    return {label: samples.get((name, frozenset(labels.items())), 0.0) for label, (name, labels) in COUNTERS.items()}


@contextmanager
def _stderr_to(path: Path) -> Iterator[None]:
    """This process's stderr (and so a child's started meanwhile) into ``path``: the worker's log."""
    sys.stderr.flush()
    saved = os.dup(2)
    with path.open("ab") as log:
        os.dup2(log.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _warnings(path: Path) -> Counter[str]:
    """The worker's warning and error lines by event, details cut (LOG_FORMAT=json, as the image logs)."""
    events: Counter[str] = Counter()
    for line in path.read_text(errors="replace").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("level") in ("warning", "error"):
            events[re.sub(r" \(.*|: \d+ socket.*", "", str(record.get("event", "")))[:100]] += 1
    return events


@dataclass(frozen=True)
class Setup:
    env: dict[str, str]
    redis_pid: int
    log: Path
    profile: Path | None
    backlog: int


def _run(setup: Setup, *, name: str, clients: int, pool_size: int, api_readers: int, floor: bool = False) -> Run:
    """A fresh worker with this pool size; the storm of ``clients`` sockets against it (none: the
    API readers alone for API_ONLY_SECS), with ``api_readers`` readers beside it."""
    port = common.free_port()
    setup.log.write_bytes(b"")
    env = {**setup.env, "REDIS_POOL_SIZE": str(pool_size), "LOG_FORMAT": "json", "UVICORN_BACKLOG": str(setup.backlog)}
    if floor:
        env["FLOOR_TICK_MS"] = str(FLOOR_TICK_OFF_MS)
    with _stderr_to(setup.log):
        server = common.start_server(
            env=env, port=port, profile_path=setup.profile, app=FLOOR_APP if floor else PRODUCT_APP
        )
    run = Run(name, pool_size, clients)
    try:
        common.wait_for_http_ok(port, "/healthz", process=server)
        before = _metrics(port, floor=floor)
        fleet = Fleet(port=port, clients=clients) if clients else None
        try:
            rss, cpu = common.rss_bytes(server.pid), common.cpu_seconds(server.pid, with_descendants=True)
            system = _system_seconds(server.pid)
            drops = _listen_drops()
            others = _others_cpu(fleet, setup.redis_pid)
            # Beside a storm, a steady load; alone (the pool runs), as much as the worker takes.
            pause = API_READER_PAUSE_SECS if clients else 0.0
            readers = ApiReaders(port, api_readers, pause) if api_readers else None
            if fleet is not None:
                _, run.outcomes = fleet.storm()
            else:
                time.sleep(API_ONLY_SECS)
            run.cpu_secs = common.cpu_seconds(server.pid, with_descendants=True) - cpu
            run.system_secs = _system_seconds(server.pid) - system
            run.others_cpu_secs = {k: v - others[k] for k, v in _others_cpu(fleet, setup.redis_pid).items()}
            run.rss_growth_bytes = common.rss_bytes(server.pid) - rss
            run.listen_drops = _listen_drops() - drops
            run.load_average = os.getloadavg()[0]
            run.api = readers.finish() if readers else None
            time.sleep(SETTLE_SECS)
            after = _metrics(port, floor=floor)
        finally:
            if fleet is not None:
                fleet.stop()
        if server.poll() is not None:
            raise RuntimeError(f"the worker exited with code {server.returncode} during the run")
    finally:
        common.stop_processes([server])
    run.counters = {k: after[k] - before[k] for k in COUNTERS}
    run.warnings = _warnings(setup.log)
    _print(run)
    return run


def _others_cpu(fleet: Fleet | None, redis_pid: int) -> dict[str, float]:
    clients = sum(common.cpu_seconds(p.pid, with_descendants=False) for p in fleet.processes) if fleet else 0.0
    return {"clients": clients, "redis": common.cpu_seconds(redis_pid, with_descendants=False)}


# --------------------------------------------------------------------------- report


def _secs(value: float) -> str:
    return "never" if math.isinf(value) else f"{value:.1f} s"


def _ms(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:,.0f}"


def _api_text(api: ApiResult | None) -> str:
    if api is None:
        return "-"
    answered = sum(api.statuses.values())
    others = ", ".join(f"{n:,} {status}" for status, n in sorted(api.statuses.items()) if status != "200")
    return (
        f"{api.statuses.get('200', 0):,} of {answered:,} 200{f' ({others})' if others else ''}; "
        f"{api.ok_per_sec:,.0f}/s; p50 / p99 {_ms(api.latency_ms(0.5))} / {_ms(api.latency_ms(0.99))} ms"
    )


def _print(run: Run) -> None:
    cpu = ", ".join(f"{k} {v:.1f} s" for k, v in run.others_cpu_secs.items())
    lines = [f"  {run.name} (REDIS_POOL_SIZE={run.pool_size}, load average {run.load_average:.1f}):"]
    if run.clients:
        others = {k: n for k, n in run.kinds.items() if k != "admitted"}
        lines.append(
            f"    admitted {len(run.admitted):,} of {run.clients:,}{f' (others: {others})' if others else ''}; "
            f"all admitted in {_secs(run.all_admitted_secs)}; 101 p50 / p99 {_ms(run.accept_ms(0.5))} / "
            f"{_ms(run.accept_ms(0.99))} ms; snapshot p50 / p99 {_ms(run.snapshot_ms(0.5))} / "
            f"{_ms(run.snapshot_ms(0.99))} ms; memory +{run.rss_growth_bytes / run.clients / 1024:.0f} KiB/socket; "
            f"{run.listen_drops:,} connections dropped at the listen queue"
        )
    lines.append(
        f"    worker CPU {run.cpu_secs:.1f} s ({run.system_secs:.1f} s system), {cpu}; counters {run.counters}"
    )
    if run.api is not None:
        lines.append(f"    API ({run.api.readers} readers): {_api_text(run.api)}")
    lines += [f"    log: {n:,} x {event}" for event, n in run.warnings.most_common(5)]
    print("\n".join(lines), flush=True)


def _storm_row(run: Run) -> str:
    c = run.counters
    return (
        f"| {run.name} | {len(run.admitted):,} of {run.clients:,} | {run.count('refused'):,} | {run.count('error'):,} "
        f"| {run.count('failed'):,} | {_secs(run.all_admitted_secs)} | {_ms(run.accept_ms(0.5))} / "
        f"{_ms(run.accept_ms(0.99))} | {_ms(run.snapshot_ms(0.5))} / {_ms(run.snapshot_ms(0.99))} "
        f"| {c['shed']:,.0f} / {c['pool exhausted']:,.0f} / {c['backend errors (redis)']:,.0f} "
        f"| {run.cpu_secs:.1f} s ({run.cpu_secs / run.clients * 1000:.1f} ms) | {run.others_cpu_secs['clients']:.1f} s "
        f"| {run.load_average:.1f} | {_api_text(run.api)} |"
    )


def _pool_row(run: Run) -> str:
    api = run.api
    assert api is not None
    c = run.counters
    errors = sum(n for status, n in api.statuses.items() if status != "200")
    return (
        f"| {run.pool_size} | {api.readers} | {api.ok_per_sec:,.0f} | {_ms(api.latency_ms(0.5))} / "
        f"{_ms(api.latency_ms(0.99))} | {errors:,} | {c['pool waits']:,.0f} | {c['pool exhausted']:,.0f} "
        f"| {c['backend errors (redis)']:,.0f} | {run.cpu_secs / API_ONLY_SECS:.0%} | {run.load_average:.1f} |"
    )


STORM_HEADER = (
    "| run | admitted | refused | errors | failed | all admitted in | 101 p50 / p99 ms | snapshot p50 / p99 ms "
    "| shed / exhausted / outages | worker CPU (per socket) | clients CPU | load average | API beside it |\n"
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
)
POOL_HEADER = (
    "| REDIS_POOL_SIZE | readers | reads/s | p50 / p99 ms | not 200 | pool waits | pool exhausted | Redis outages "
    "| worker CPU | load average |\n"
    "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
)


def _verdict(storms: list[Run]) -> str:
    sentences = []
    for run in storms:
        if run.name == "storm":
            met = run.all_admitted_secs <= TARGET_ALL_ADMITTED_SECS
            sentences.append(
                f"On one websocket worker, {len(run.admitted):,} of {run.clients:,} sockets were admitted without a "
                f"retry, the last after {_secs(run.all_admitted_secs)} ({'within' if met else 'past'} the "
                f"{TARGET_ALL_ADMITTED_SECS:g} s target), with {run.count('refused'):,} refused and no pool wait "
                f"running out ({run.counters['pool exhausted']:,.0f}) nor outage counted "
                f"({run.counters['backend errors (redis)']:,.0f})."
            )
        elif run.name == "floor":
            sentences.append(
                f"The floor took {_secs(run.all_admitted_secs)} and {run.cpu_secs / run.clients * 1000:.1f} ms of CPU "
                "per socket: what uvicorn, the handshakes and this machine's clients cost before any product code."
            )
        elif run.api is not None:
            errors = sum(n for status, n in run.api.statuses.items() if status != "200")
            sentences.append(
                f"Beside the API on the same worker the storm took {_secs(run.all_admitted_secs)}, the reads taking "
                f"most of the worker's CPU, and {errors:,} of {sum(run.api.statuses.values()):,} reads got another "
                "answer than 200: the storm never took the API's connections (and WEB_WS_WORKERS gives sockets a "
                "worker of their own)."
            )
    return " ".join(sentences)


def _section(storms: list[Run], pools: list[Run], *, machine: dict[str, str], settings: dict[str, str]) -> str:
    machine_text = "; ".join(f"{k}: {v}" for k, v in machine.items())
    settings_text = ", ".join(f"{k}={v}" for k, v in settings.items())
    storm_rows = "\n".join(_storm_row(r) for r in storms)
    pool_rows = "\n".join(_pool_row(r) for r in pools)
    pool_table = (
        f"""
The pool, {POOL_READERS} closed-loop API readers of the top 50 alone for {API_ONLY_SECS:g} s per REDIS_POOL_SIZE
(a fresh worker each):

{POOL_HEADER}
{pool_rows}
"""
        if pools
        else ""
    )
    return f"""## Connect storm (`make bench-storm`, bench/storm.py)

Last run: {common.utc_now_text()}. Machine: {machine_text}.

- The real websocket worker as WEB_WS_WORKERS=1 runs it (one uvicorn worker, the product's ASGI app, production
  settings, JSON logs, a listen backlog of {BACKLOG:,}), a fresh one per row, and a game with one board holding
  {SEEDED_PLAYERS} scores. Settings: {settings_text}. *The floor*: bench/floor_app.py on the same uvicorn, a bare
  ASGI app that accepts and answers a subscribe with one frame, stormed the same way in the same run.
- The storm: client processes ({SOCKETS_PER_CLIENT_PROCESS} sockets each at most, on the same machine) open every
  socket at one instant, with no retry (permessage-deflate offered, as browsers do); each sends a `subscribe`
  (daily, limit {LIMIT}) once open and counts as admitted when its snapshot arrives. *Refused*: closed before that;
  *errors*: answered with an `error`; *failed*: the handshake itself failed or nothing came in
  {SOCKET_GIVE_UP_SECS:g} s. *101* and *snapshot*: from a socket's connect to its handshake's answer and to its
  snapshot.
- *Shed / exhausted / outages*: the worker's own counters over the run (`leaderboard_socket_admissions_shed_total`,
  `leaderboard_redis_pool_exhausted_total`, `leaderboard_backend_errors_total{{backend="redis"}}`). *CPU*: from the
  storm's start to the last outcome (per socket in brackets); the client processes' beside it. *Load average*: the
  machine's at the end of the run (other work shares its cores).
- *Beside the API*: the same storm while {DEFAULT_API_READERS} readers of the board's top 50, each pausing
  {API_READER_PAUSE_SECS * 1000:g} ms between reads, use the same worker (the API and the sockets in one process, as
  WEB_WS_WORKERS=0 runs them).

{STORM_HEADER}
{storm_rows}
{pool_table}
{_verdict(storms)}
"""


# --------------------------------------------------------------------------- main


def _seed(env: dict[str, str]) -> None:
    """A game with one board and SEEDED_PLAYERS scores on it, through the real API."""
    import httpx

    common.manage(env, "migrate", "--noinput", "-v", "0")
    common.manage(env, "creategame", GAME_SLUG, "--name", "Storm", "--max-per-minute", "0")
    common.manage(env, "createleaderboard", GAME_SLUG, BOARD, "--mode", "best")
    raw_key = common.manage_output(
        env, "createapikey", GAME_SLUG, "--name", "bench", "--requests-per-minute", str(API_KEY_REQUESTS_PER_MINUTE)
    ).strip()
    port = common.free_port()
    server = common.start_server(env=env, port=port)
    try:
        common.wait_for_http_ok(port, "/healthz", process=server)
        scores = [{"leaderboard": BOARD, "player_id": f"p{i}", "score": 1000 + i} for i in range(SEEDED_PLAYERS)]
        response = httpx.post(
            f"http://{common.LOOPBACK}:{port}/api/v1/games/{GAME_SLUG}/scores/batch",
            json={"scores": scores},
            headers={"Authorization": f"Bearer {raw_key}"},
            timeout=30,
        )
        response.raise_for_status()
    finally:
        common.stop_processes([server])


SETTINGS_SHOWN = ["REDIS_POOL_SIZE", "REDIS_TIMEOUT_SECS", "WS_ADMITTING_SOCKETS_MAX", "WS_ADMISSION_QUEUE_SOCKETS"]


def _settings_of(env: dict[str, str]) -> dict[str, str]:
    code = f"from django.conf import settings; print(' '.join(str(getattr(settings, n)) for n in {SETTINGS_SHOWN!r}))"
    values = common.manage_output(env, "shell", "--no-imports", "-c", code).split()
    return dict(zip(SETTINGS_SHOWN, values, strict=True))


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=DEFAULT_CLIENTS, help="sockets opened at once")
    parser.add_argument(
        "--api-readers", type=int, default=DEFAULT_API_READERS, help="API readers beside the storm (0: no such run)"
    )
    parser.add_argument(
        "--pool-sizes", default=DEFAULT_POOL_SIZES, help="REDIS_POOL_SIZE values of the pool runs ('': none)"
    )
    parser.add_argument("--no-floor", action="store_true", help="no storm against bench/floor_app.py")
    parser.add_argument(
        "--backlog",
        type=int,
        default=BACKLOG,
        help="the workers' listen backlog (uvicorn's --backlog; implies --no-docs)",
    )
    parser.add_argument("--no-docs", action="store_true", help="do not rewrite docs/benchmarks.md")
    parser.add_argument("--log", type=Path, metavar="FILE", help="keep the last worker's log (JSON lines) in FILE")
    parser.add_argument(
        "--profile", type=Path, metavar="FILE", help="the worker under cProfile, stats to FILE (storm only, no docs)"
    )
    args = parser.parse_args(argv)
    if not 1 <= args.clients <= 20_000:
        parser.error("--clients must be between 1 and 20,000")
    if not 0 <= args.api_readers <= 1000:
        parser.error("--api-readers must be between 0 and 1,000")
    try:
        args.pools = [int(p) for p in args.pool_sizes.split(",") if p.strip()]
    except ValueError:
        parser.error("--pool-sizes takes whole numbers separated by commas")
    if any(p < 1 for p in args.pools):
        parser.error("--pool-sizes must be at least 1")
    if args.profile:
        args.no_docs, args.no_floor, args.api_readers, args.pools = True, True, 0, []
    if args.backlog != BACKLOG:
        args.no_docs = True  # another configuration than the documented one
    return args


def _print_profile(path: Path) -> None:
    import pstats

    if path.exists():
        stats = pstats.Stats(str(path))
        stats.strip_dirs().sort_stats("tottime").print_stats(35)
        stats.sort_stats("cumulative").print_stats(45)


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    machine = common.machine_info()
    print("machine: " + "; ".join(f"{k}: {v}" for k, v in machine.items()), flush=True)
    # uvicorn inherits this limit: it holds one socket per client.
    common.raise_open_files_limit(args.clients + OPEN_FILES_SPARE)
    storms: list[Run] = []
    pools: list[Run] = []
    processes: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory(prefix="lb-storm-") as tmp, common.sigterm_as_interrupt():
        try:
            redis_process, redis_url = common.start_redis(Path(tmp) / "redis")
            processes.append(redis_process)
            env = common.bench_env(var_dir=Path(tmp), redis_url=redis_url)
            env.pop("PROMETHEUS_MULTIPROC_DIR", None)  # one worker: its own registry answers /metrics
            _seed(env)
            settings = _settings_of(env)
            print(f"settings: {settings}", flush=True)
            setup = Setup(env, redis_process.pid, args.log or Path(tmp) / "worker.log", args.profile, args.backlog)
            pool = int(settings["REDIS_POOL_SIZE"])
            print(f"\n{args.clients:,} sockets at once...", flush=True)
            storms.append(_run(setup, name="storm", clients=args.clients, pool_size=pool, api_readers=0))
            if not args.no_floor:
                print(f"\n{args.clients:,} sockets at once against the floor...", flush=True)
                run = _run(setup, name="floor", clients=args.clients, pool_size=pool, api_readers=0, floor=True)
                storms.append(run)
            if args.api_readers:
                print(f"\n{args.clients:,} sockets at once beside {args.api_readers} API readers...", flush=True)
                name = "storm beside the API"
                storms.append(
                    _run(setup, name=name, clients=args.clients, pool_size=pool, api_readers=args.api_readers)
                )
            for size in args.pools:
                print(f"\n{POOL_READERS} API readers, REDIS_POOL_SIZE={size}...", flush=True)
                pools.append(_run(setup, name="pool", clients=0, pool_size=size, api_readers=POOL_READERS))
        except KeyboardInterrupt:
            print("\ninterrupted; stopping the clients, the server and Redis", file=sys.stderr)
            return 130
        except (RuntimeError, OSError, subprocess.CalledProcessError) as error:
            print(f"\nthe benchmark failed: {error}", file=sys.stderr)
            return 1
        finally:
            common.stop_processes(processes)
    if args.profile:
        _print_profile(args.profile)
    if not args.no_docs and storms:
        common.write_section("storm", _section(storms, pools, machine=machine, settings=settings))
        print(f"\nwrote the storm section of {common.DOCS_PATH.relative_to(REPO_DIR)}")
    return 0 if all(len(r.admitted) == r.clients for r in storms) else 1


if __name__ == "__main__":
    sys.exit(main())
