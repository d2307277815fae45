"""``make bench-fanout``: live standings pushed to many websocket watchers, and what that costs.

    .venv/bin/python bench/fanout.py [--clients 1000] [--rate 500] [--duration 30] [--no-docs] [--skip-big]

Starts its own embedded Redis and SQLite in a temp dir, the real server as
WEB_WS_WORKERS=1 runs it (one uvicorn worker for the API, one for the websockets,
the product's ASGI app in both), the live broadcaster (``manage.py broadcast``) and a
few client processes that open ``--clients`` websockets, all subscribed to the daily
board with limit 10. Then it submits ``--rate`` scores per second, spread evenly,
through POST /api/v1/games/{g}/leaderboards/{b}/scores for ``--duration`` seconds, each
from a new player with a score above all before it, and measures:

* latency from an accepted submission (its 200 received) to the watchers: to the
  first standings message as new as the submission, and to the first one listing it;
* standings messages per watcher per second (about 1000 / BROADCAST_TICK_MS, whatever the rate);
* CPU of both workers, the broadcaster, Redis, the client processes and the submitter,
  and the websocket worker's CPU per message delivered to one socket.

A shorter pass at 50 submissions/s follows on the same sockets, to show the message
rate does not grow with the submission rate. After each run the same client processes
open as many sockets to *the floor* (bench/floor_app.py: a bare ASGI app on the same
uvicorn writing one pre-encoded frame to every socket each tick), with and, once,
without permessage-deflate; the product's CPU per socket-message is reported as a
ratio to it. The whole runs with ``--clients`` watchers, then, if that run was clean
and the machine has the memory, with 3,000. Rewrites its section of
docs/benchmarks.md. Only loopback; every child process is stopped on exit, Ctrl-C
included.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import json
import math
import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

REPO_DIR = Path(__file__).resolve().parent.parent
if str(REPO_DIR) not in sys.path:
    # Run as a script (bench/fanout.py), the repository root is not on the path yet.
    sys.path.insert(0, str(REPO_DIR))

from bench import common  # noqa: E402
from bench.common import Request, Watched  # noqa: E402

DEFAULT_CLIENTS = 1000
DEFAULT_RATE_PER_SEC = 500.0
DEFAULT_DURATION_SECS = 30.0
DEFAULT_SETTINGS = "bench.settings_bench"
# The second pass: a tenth of the default rate, long enough for a steady message rate.
LOW_RATE_PER_SEC = 50.0
LOW_RATE_MAX_SECS = 10.0
# The target of one websocket worker (docs/benchmarks.md).
BIG_CLIENTS = 3000
# Submissions per second of the big run's first pass (the ingest target is the first run's).
BIG_RUN_RATE_PER_SEC = 100.0
# The floor is measured this long (its message rate is steady from the first second).
FLOOR_MAX_SECS = 15.0
GAME_SLUG = "fanout"
WATCH_PERIOD = "daily"
WATCH_LIMIT = 10
# Far above any rate reachable here, and below the GCRA precision limit (see bench/README.md).
API_KEY_REQUESTS_PER_MINUTE = 10_000_000
# Scores start here and grow by one per submission, so each new one tops the board.
SCORE_BASE = 1_000_000
# Keep-alive connections the submissions are spread over (open loop: sent on schedule, not when answered).
SUBMIT_CONNECTIONS = 16
# A submission still waiting this long after its due time when the pass ends counts as never sent.
LATE_SEND_SECS = 1.0
# Each pass submits this long before counting: sockets see their first messages, caches load.
WARMUP_SECS = 2.0
# After the last submission, messages arriving this much later still count for latency.
SETTLE_SECS = 5.0
# Watchers that also parse every message for latency bookkeeping (spread over the client processes).
TRACKED_WATCHERS = 50
# One asyncio client process drives at most this many sockets.
SOCKETS_PER_CLIENT_PROCESS = 500
# Handshakes (connect + subscribe + first snapshot) in flight per client process.
CONNECT_CONCURRENCY = 25
CONNECT_ATTEMPTS = 3
OPEN_TIMEOUT_SECS = 30.0
# All sockets of a run must be open within this long.
CONNECT_PHASE_TIMEOUT_SECS = 300.0
# A client process must hand in a pass's results this long after the pass settles.
RESULT_TIMEOUT_SECS = 60.0
# Open-files limit wanted for the server (inherited) and per socket in the client processes.
OPEN_FILES_SPARE = 512
# The big run needs this multiple of the memory the first run's sockets took, plus the reserve.
MEMORY_HEADROOM = 2.0
MEMORY_RESERVE_BYTES = 1 << 30
# Watchers kept up when they got at least this share of the tick's message rate (and none was closed).
HEALTHY_MESSAGE_SHARE = 0.9
# Submissions kept up when at least this share of the target rate was accepted.
SUBMIT_KEPT_UP_SHARE = 0.95
# A smaller first run, where one worker keeps up with the watchers: the reference for coalescing and cost.
DEFAULT_BASELINE_CLIENTS = 0
# The consumer serialises with json.dumps defaults, "type" first.
STANDINGS_PREFIX = '{"type": "standings"'
INF = float("inf")


# --------------------------------------------------------------------------- client processes


@dataclass(frozen=True)
class ClientJob:
    """What one client process opens (sent to it at start)."""

    index: int
    port: int
    sockets: int
    tracked: int
    # permessage-deflate offered (browsers always offer it; off only to measure what it costs).
    compress: bool = True
    # Each socket's subscribe frame, in order (empty: every socket subscribes as default_subscribe()).
    subscribes: tuple[str, ...] = ()


def default_subscribe() -> str:
    """The frame a watcher sends once open: the daily board's top WATCH_LIMIT."""
    return json.dumps({"action": "subscribe", "leaderboard": "main", "period": WATCH_PERIOD, "limit": WATCH_LIMIT})


@dataclass(frozen=True)
class PassWindow:
    """A pass as the client processes see it: count messages in [start, end], track until settle."""

    name: str
    prefix: str
    start: float
    end: float
    settle: float


@dataclass
class _Socket:
    tracked: bool
    subscribe: str
    ws: Any = None
    count: int = 0
    other: int = 0
    last_version: int = 0
    backwards: int = 0
    # (version, receive time) of the first and the last standings message inside the window.
    first_version: tuple[int, float] | None = None
    window_last_version: tuple[int, float] | None = None
    first_seen: dict[str, float] = field(default_factory=dict)
    # (receive time, top score) of each standings message: scores only grow, so the top is the newest.
    coverage: list[tuple[float, int]] = field(default_factory=list)

    def reset(self) -> None:
        self.count = self.other = self.backwards = 0
        self.first_version = self.window_last_version = None
        self.first_seen, self.coverage = {}, []


@dataclass
class SocketReport:
    """One tracked watcher's view of a pass."""

    first_seen: dict[str, float]
    coverage: list[tuple[float, int]]
    first_version: tuple[int, float] | None
    last_version: tuple[int, float] | None
    subscribe: str = ""  # the frame it subscribed with


@dataclass
class ClientPassReport:
    index: int
    counts: list[int]
    other_messages: int
    versions_backwards: int
    closed: Counter[str]
    tracked: list[SocketReport]


class _ClientProcess:
    """The body of one client process: its sockets, and the commands of the benchmark."""

    def __init__(self, job: ClientJob, commands: Any, results: Any) -> None:
        self.job, self.commands, self.results = job, commands, results
        subscribes = job.subscribes or (default_subscribe(),) * job.sockets
        self.sockets = [_Socket(tracked=i < job.tracked, subscribe=subscribes[i]) for i in range(job.sockets)]
        self.window = PassWindow("", "\0", INF, -INF, -INF)
        self.stopping = False
        self.closed: Counter[str] = Counter()
        self.listeners: list[asyncio.Task[None]] = []

    async def run(self) -> None:
        started = time.monotonic()
        failures: Counter[str] = Counter()
        retries = 0
        gate = asyncio.Semaphore(CONNECT_CONCURRENCY)

        async def open_one(sock: _Socket) -> None:
            nonlocal retries
            async with gate:
                for attempt in range(CONNECT_ATTEMPTS):
                    try:
                        await self._open(sock)
                        return
                    except Exception as error:  # whatever failed is counted and reported
                        if attempt + 1 == CONNECT_ATTEMPTS:
                            failures[_describe(error)] += 1
                            return
                        retries += 1
                        await asyncio.sleep(0.2 * (attempt + 1))

        await asyncio.gather(*(open_one(s) for s in self.sockets))
        opened = sum(1 for s in self.sockets if s.ws is not None)
        self.results.put(("ready", self.job.index, opened, retries, dict(failures), time.monotonic() - started))
        try:
            # One blocking read of the command pipe at a time, in a thread; none is left pending at exit.
            command_read = asyncio.ensure_future(asyncio.to_thread(self.commands.recv))
            while True:
                command = await command_read
                if command[0] == "stop":
                    break
                window: PassWindow = command[1]
                for sock in self.sockets:
                    sock.reset()
                self.closed.clear()
                self.window = window
                command_read = asyncio.ensure_future(asyncio.to_thread(self.commands.recv))
                done, _ = await asyncio.wait({command_read}, timeout=max(0.0, window.settle - time.monotonic()))
                if done:
                    break  # the benchmark stops mid-pass (it sends nothing else before collecting a pass)
                self.results.put(("pass", self._report()))
        finally:
            self.stopping = True
            await asyncio.gather(
                *(asyncio.wait_for(s.ws.close(), 5) for s in self.sockets if s.ws is not None),
                return_exceptions=True,
            )
            for task in self.listeners:
                task.cancel()
            await asyncio.gather(*self.listeners, return_exceptions=True)

    async def _open(self, sock: _Socket) -> None:
        from websockets.asyncio.client import connect

        # Browsers send an Origin, and the server refuses a socket without one from ALLOWED_HOSTS.
        # Compression stays on (the client's default) because browsers always offer it.
        ws = await connect(
            f"ws://{common.LOOPBACK}:{self.job.port}/ws/games/{GAME_SLUG}/",
            origin=f"http://{common.LOOPBACK}:{self.job.port}",  # type: ignore[arg-type]
            open_timeout=OPEN_TIMEOUT_SECS,
            ping_interval=None,
            close_timeout=2,
            compression="deflate" if self.job.compress else None,
        )
        try:
            await ws.send(sock.subscribe)
            first = json.loads(await asyncio.wait_for(ws.recv(), OPEN_TIMEOUT_SECS))
            if first.get("type") != "standings":
                raise RuntimeError(f"first message was not a snapshot: {str(first)[:200]}")
        except BaseException:
            await ws.close()
            raise
        sock.ws, sock.last_version = ws, first["version"]
        self.listeners.append(asyncio.create_task(self._listen(sock)))

    async def _listen(self, sock: _Socket) -> None:
        from websockets.exceptions import ConnectionClosed

        ws = sock.ws
        try:
            while True:
                message = await ws.recv()
                now = time.monotonic()
                window = self.window
                standings = isinstance(message, str) and message.startswith(STANDINGS_PREFIX)
                if not standings:
                    sock.other += 1
                elif window.start <= now <= window.end:
                    sock.count += 1
                if sock.tracked and standings and now <= window.settle:
                    self._track(sock, message, now, window)
        except ConnectionClosed as closed:
            if not self.stopping:
                self.closed[
                    f"{closed.rcvd.code} {closed.rcvd.reason}".strip() if closed.rcvd else "no close frame"
                ] += 1
            sock.ws = None

    def _track(self, sock: _Socket, message: str, now: float, window: PassWindow) -> None:
        data = json.loads(message)
        version = data["version"]
        if version <= sock.last_version:
            sock.backwards += 1
        sock.last_version = max(sock.last_version, version)
        if window.start <= now <= window.end:
            if sock.first_version is None:
                sock.first_version = (version, now)
            sock.window_last_version = (version, now)
        self._note_entries(sock, data["entries"], now, window)

    @staticmethod
    def _note_entries(sock: _Socket, entries: list[dict[str, Any]], now: float, window: PassWindow) -> None:
        """What latency needs of a tracked watcher's message: its top score and the pass's players it lists."""
        if entries:
            sock.coverage.append((now, entries[0]["score"]))
        for entry in entries:
            if entry["player_id"].startswith(window.prefix):
                sock.first_seen.setdefault(entry["player_id"], now)

    def _report(self) -> ClientPassReport:
        return ClientPassReport(
            index=self.job.index,
            counts=[s.count for s in self.sockets if s.ws is not None],
            other_messages=sum(s.other for s in self.sockets),
            versions_backwards=sum(s.backwards for s in self.sockets),
            closed=Counter(self.closed),
            tracked=[
                SocketReport(s.first_seen, s.coverage, s.first_version, s.window_last_version, s.subscribe)
                for s in self.sockets
                if s.tracked and s.ws is not None
            ],
        )


def _describe(error: BaseException) -> str:
    response = getattr(error, "response", None)
    if response is not None and hasattr(response, "status_code"):
        return f"HTTP {response.status_code}"
    return f"{type(error).__name__}: {error}"[:120]


def _client_main(job: ClientJob, commands: Any, results: Any, kind: type[_ClientProcess] = _ClientProcess) -> None:
    """Entry point of a client process (spawned, so it shares nothing with the benchmark but the queues);
    ``kind``: a subclass that reads its messages otherwise (importable by name, as spawn pickles it)."""
    # Ctrl-C reaches the whole process group: the benchmark itself stops these processes in order.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    common.die_with_parent()
    common.raise_open_files_limit(job.sockets + OPEN_FILES_SPARE)
    process = kind(job, commands, results)
    try:
        import uvloop

        uvloop.run(process.run())
    except ImportError:
        asyncio.run(process.run())


class ClientFleet:
    """The client processes of one run, driven from the benchmark process."""

    def __init__(
        self,
        *,
        port: int,
        clients: int,
        processes: int,
        compress: bool = True,
        subscribes: Sequence[str] = (),
        kind: type[_ClientProcess] = _ClientProcess,
    ) -> None:
        """``subscribes``: each socket's subscribe frame, in socket order (empty: default_subscribe())."""
        ctx = multiprocessing.get_context("spawn")
        self.results = ctx.Queue()
        self.pipes: list[Any] = []
        self.processes: list[Any] = []
        # Global indices of the tracked sockets: the first few of each process.
        self.tracked_sockets: list[int] = []
        sizes = _spread(clients, processes)
        tracked = _spread(min(TRACKED_WATCHERS, clients), processes)
        first = 0
        for index, (size, watched) in enumerate(zip(sizes, tracked, strict=True)):
            ours, theirs = ctx.Pipe()
            job = ClientJob(index, port, size, watched, compress, tuple(subscribes[first : first + size]))
            self.tracked_sockets += range(first, first + watched)
            first += size
            process = ctx.Process(
                target=_client_main,
                args=(job, theirs, self.results, kind),
                name=f"fanout-client-{index}",
                daemon=True,
            )
            process.start()
            self.pipes.append(ours)
            self.processes.append(process)

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.processes]

    def _get(self, timeout: float) -> Any:
        import queue

        deadline = time.monotonic() + timeout
        while True:
            try:
                return self.results.get(timeout=1.0)
            except queue.Empty:
                dead = [p.name for p in self.processes if not p.is_alive()]
                if dead:
                    raise RuntimeError(f"client process(es) exited early: {', '.join(dead)}") from None
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the client processes did not answer within {timeout:.0f} s") from None

    def wait_ready(self) -> tuple[int, int, Counter[str], float]:
        """(sockets open, connect retries, failures by reason, seconds the slowest process took)."""
        opened = retries = 0
        failures: Counter[str] = Counter()
        slowest = 0.0
        for _ in self.processes:
            _, _, n, r, failed, secs = self._get(CONNECT_PHASE_TIMEOUT_SECS)
            opened, retries, slowest = opened + n, retries + r, max(slowest, secs)
            failures.update(failed)
        return opened, retries, failures, slowest

    def start_pass(self, window: PassWindow) -> None:
        for pipe in self.pipes:
            pipe.send(("pass", window))

    def collect(self, window: PassWindow) -> list[ClientPassReport]:
        timeout = max(0.0, window.settle - time.monotonic()) + RESULT_TIMEOUT_SECS
        reports = [self._get(timeout)[1] for _ in self.processes]
        return sorted(reports, key=lambda r: r.index)

    def stop(self) -> None:
        for pipe in self.pipes:
            try:
                pipe.send(("stop",))
            except OSError:
                pass
        deadline = time.monotonic() + common.SHUTDOWN_GRACE_SECS
        for process in self.processes:
            process.join(timeout=max(0.1, deadline - time.monotonic()))
        for process in self.processes:
            if process.is_alive():
                process.terminate()
                process.join(timeout=common.SHUTDOWN_GRACE_SECS)
            if process.is_alive():
                process.kill()
                process.join()
        self.results.close()
        self.results.join_thread()


def _spread(total: int, parts: int) -> list[int]:
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


# --------------------------------------------------------------------------- submissions


@dataclass
class SubmitResult:
    seconds: float
    # (player id, score, monotonic time its 200 arrived) of submissions answered inside the window.
    accepted: list[tuple[str, int, float]] = field(default_factory=list)
    statuses: Counter[str] = field(default_factory=Counter)
    unsent: int = 0
    send_lag_ms: list[float] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)
    cpu: dict[str, float] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return len(self.accepted) / self.seconds


class Submissions(Protocol):
    """Who submits what: asked for each submission as it is sent, and told when it is answered."""

    def next(self, i: int) -> tuple[str, int]:
        """Submission ``i`` of the pass: (player id, score)."""
        ...

    def answered(self, player_id: str, *, ok: bool) -> None: ...


@dataclass
class NewPlayers:
    """The default: each submission from a new player (``prefix`` + i), with a score above all before it."""

    prefix: str
    first_score: int

    def next(self, i: int) -> tuple[str, int]:
        return f"{self.prefix}{i}", self.first_score + i

    def answered(self, player_id: str, *, ok: bool) -> None:
        pass


async def _submit(
    *, port: int, raw_key: str, rate: float, window: PassWindow, submissions: Submissions, watch: list[Watched]
) -> SubmitResult:
    """Open loop: submission i is due at warm-up start + i / rate, on whichever connection is free."""
    headers = {"Authorization": f"Bearer {raw_key}", "Content-Type": "application/json"}
    path = f"/api/v1/games/{GAME_SLUG}/leaderboards/main/scores"
    begin = window.start - WARMUP_SECS
    total = int((window.end - begin) * rate)
    due_items: asyncio.Queue[tuple[int, float] | None] = asyncio.Queue()
    result = SubmitResult(seconds=window.end - window.start)

    async def schedule() -> None:
        for i in range(total):
            delay = begin + i / rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            due_items.put_nowait((i, begin + i / rate))
        for _ in range(SUBMIT_CONNECTIONS):
            due_items.put_nowait(None)

    async def sender() -> None:
        conn = common.RawHttpConnection(common.LOOPBACK, port, headers)
        try:
            while (item := await due_items.get()) is not None:
                i, due = item
                if time.monotonic() > window.end:
                    # Due long before the end and still queued: the server fell behind. Due just before, it is
                    # only the pass ending while the item waited for a connection.
                    result.unsent += due < window.end - LATE_SEND_SECS
                    continue
                player_id, score = submissions.next(i)
                body = b'{"player_id":"%s","score":%d}' % (player_id.encode(), score)
                sent = time.monotonic()
                try:
                    status, _ = await conn.request(Request("POST", path, body))
                except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as error:
                    submissions.answered(player_id, ok=False)
                    result.statuses[type(error).__name__] += 1
                    await conn.close()
                    continue
                submissions.answered(player_id, ok=status == 200)
                done = time.monotonic()
                if not window.start <= done <= window.end:
                    continue
                result.statuses[str(status)] += 1
                if status == 200:
                    result.accepted.append((player_id, score, done))
                    result.send_lag_ms.append((sent - due) * 1000)
                    result.latencies_ms.append((done - sent) * 1000)
        finally:
            await conn.close()

    tasks = [asyncio.create_task(schedule()), *(asyncio.create_task(sender()) for _ in range(SUBMIT_CONNECTIONS))]
    try:
        await asyncio.sleep(max(0.0, window.start - time.monotonic()))
        before = {w.name: w.seconds() for w in watch}
        await asyncio.sleep(max(0.0, window.end - time.monotonic()))
        after = {w.name: w.seconds() for w in watch}
        result.cpu = {name: (after[name] - before[name]) / result.seconds for name in before}
        await asyncio.wait(tasks, timeout=common.REQUEST_GRACE_SECS)
        for task in tasks:
            error = task.exception() if task.done() and not task.cancelled() else None
            if error is not None:
                raise error
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    result.send_lag_ms.sort()
    result.latencies_ms.sort()
    return result


def _run_async(coroutine: Any) -> Any:
    try:
        import uvloop

        return uvloop.run(coroutine)
    except ImportError:
        return asyncio.run(coroutine)


# --------------------------------------------------------------------------- one pass, one run


@dataclass
class PassResult:
    name: str
    clients: int
    target_rate: float
    submit: SubmitResult
    reports: list[ClientPassReport]
    # ms from a submission's 200 to the first message as new as it, per (tracked watcher, submission).
    view_ms: list[float] = field(default_factory=list)
    # ms from a submission's 200 to the first message listing its player, for the pairs where that happened.
    row_ms: list[float] = field(default_factory=list)
    pairs: int = 0

    @property
    def counts(self) -> list[int]:
        return [c for r in self.reports for c in r.counts]

    @property
    def messages_per_client_sec(self) -> list[float]:
        return sorted(c / self.submit.seconds for c in self.counts)

    @property
    def closed(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for report in self.reports:
            total.update(report.closed)
        return total

    @property
    def other_messages(self) -> int:
        return sum(r.other_messages for r in self.reports)

    @property
    def versions_backwards(self) -> int:
        return sum(r.versions_backwards for r in self.reports)

    @property
    def board_versions_per_sec(self) -> float:
        """Standings snapshots the broadcaster took of the watched board per second (from tracked watchers)."""
        rates = [
            (t.last_version[0] - t.first_version[0]) / (t.last_version[1] - t.first_version[1])
            for r in self.reports
            for t in r.tracked
            if t.first_version is not None and t.last_version is not None and t.last_version[1] > t.first_version[1]
        ]
        return _mean(rates)

    @property
    def client_cpu(self) -> list[float]:
        return [v for k, v in self.submit.cpu.items() if k.startswith("client-")]

    @property
    def clean(self) -> bool:
        s = self.submit
        return (
            not self.closed
            and self.other_messages == 0
            and self.versions_backwards == 0
            and s.unsent == 0
            and set(s.statuses) <= {"200"}
            and len(self.counts) == self.clients
            and s.rate >= SUBMIT_KEPT_UP_SHARE * self.target_rate
        )


def _latencies(result: PassResult) -> None:
    accepted = result.submit.accepted
    view: list[float] = []
    row: list[float] = []
    for report in result.reports:
        for tracked in report.tracked:
            times = [t for t, _ in tracked.coverage]
            # Running maximum, so a bisect finds the first message at least this new.
            tops: list[int] = []
            for _, top in tracked.coverage:
                tops.append(max(top, tops[-1]) if tops else top)
            for player_id, score, accepted_at in accepted:
                i = bisect.bisect_left(tops, score)
                view.append((times[i] - accepted_at) * 1000 if i < len(tops) else INF)
                seen = tracked.first_seen.get(player_id)
                if seen is not None:
                    row.append((seen - accepted_at) * 1000)
            result.pairs += len(accepted)
    result.view_ms, result.row_ms = sorted(view), sorted(row)


@dataclass
class RunResult:
    clients: int
    processes: int
    opened: int
    connect_retries: int
    connect_failures: Counter[str]
    connect_secs: float
    server_rss_per_socket: float
    client_rss_per_socket: float
    passes: list[PassResult] = field(default_factory=list)
    error: str | None = None
    # Scores of a later run must top every earlier one.
    next_score: int = 0

    @property
    def clean(self) -> bool:
        return self.error is None and self.opened == self.clients and all(p.clean for p in self.passes)


@dataclass
class Services:
    port: int  # the web worker: the API (submissions)
    ws_port: int  # the websocket worker (WEB_WS_WORKERS=1): the watchers
    raw_key: str
    server: subprocess.Popen[bytes]
    ws_server: subprocess.Popen[bytes]
    broadcaster: subprocess.Popen[bytes]
    redis: subprocess.Popen[bytes]
    broadcaster_log: Path


@dataclass
class FloorResult:
    clients: int
    compress: bool
    seconds: float
    counts: list[int]
    cpu: float  # the floor server's share of a core over the window

    @property
    def messages_per_client_sec(self) -> float:
        return _mean([c / self.seconds for c in self.counts])

    @property
    def us_per_message(self) -> float:
        messages = sum(self.counts)
        return self.cpu * self.seconds / messages * 1e6 if messages else float("nan")


def _floor(*, clients: int, processes: int, tick_ms: int, seconds: float, compress: bool) -> FloorResult:
    """The bare ASGI broadcaster (bench/floor_app.py) feeding the same number of sockets."""
    env = dict(os.environ, FLOOR_TICK_MS=str(tick_ms), PYTHONPATH=str(REPO_DIR))
    port = common.free_port()
    server = common.start_server(env=env, port=port, app="bench.floor_app:app")
    label = "with" if compress else "without"
    print(f"\nthe floor: {clients:,} sockets, {label} permessage-deflate...", flush=True)
    try:
        common.wait_for_http_ok(port, "/healthz", process=server)
        fleet = ClientFleet(port=port, clients=clients, processes=processes, compress=compress)
        try:
            opened, _, failures, _ = fleet.wait_ready()
            if opened < clients:
                raise RuntimeError(f"only {opened:,} of {clients:,} floor sockets opened: {dict(failures)}")
            start = time.monotonic() + 0.5 + WARMUP_SECS
            window = PassWindow("floor", "floor-", start, start + seconds, start + seconds + 1.0)
            fleet.start_pass(window)
            time.sleep(max(0.0, window.start - time.monotonic()))
            before = common.cpu_seconds(server.pid, with_descendants=True)
            time.sleep(max(0.0, window.end - time.monotonic()))
            cpu = (common.cpu_seconds(server.pid, with_descendants=True) - before) / seconds
            reports = fleet.collect(window)
        finally:
            fleet.stop()
    finally:
        common.stop_processes([server])
    result = FloorResult(clients, compress, seconds, [c for r in reports for c in r.counts], cpu)
    print(
        f"  {result.messages_per_client_sec:.2f} messages/socket/s, cpu {cpu:.0%}: "
        f"{result.us_per_message:.1f} µs per socket-message",
        flush=True,
    )
    return result


def _client_processes(clients: int, wanted: int) -> int:
    return wanted if wanted > 0 else max(1, math.ceil(clients / SOCKETS_PER_CLIENT_PROCESS))


def _watched(services: Services, fleet: ClientFleet) -> list[Watched]:
    """The processes whose CPU a pass reports."""
    return [
        Watched("web", services.server.pid, with_descendants=True),
        Watched("ws", services.ws_server.pid, with_descendants=True),
        Watched("broadcaster", services.broadcaster.pid),
        Watched("redis", services.redis.pid),
        Watched("submitter", os.getpid()),
        *(Watched(f"client-{i}", pid) for i, pid in enumerate(fleet.pids)),
    ]


def _run(
    services: Services, *, clients: int, processes: int, passes: list[tuple[float, float]], first_score: int
) -> RunResult:
    """Open ``clients`` sockets, then one pass per (rate, seconds); the sockets stay open across passes."""
    server_rss_before = common.rss_bytes(services.ws_server.pid, with_descendants=True)
    print(f"\n{clients:,} watchers: opening sockets from {processes} client process(es)...", flush=True)
    fleet = ClientFleet(port=services.ws_port, clients=clients, processes=processes)
    try:
        opened, retries, failures, secs = fleet.wait_ready()
        server_growth = common.rss_bytes(services.ws_server.pid, with_descendants=True) - server_rss_before
        client_rss = sum(common.rss_bytes(pid) for pid in fleet.pids)
        run = RunResult(
            clients=clients,
            processes=processes,
            opened=opened,
            connect_retries=retries,
            connect_failures=failures,
            connect_secs=secs,
            server_rss_per_socket=server_growth / max(1, opened),
            client_rss_per_socket=client_rss / max(1, opened),
        )
        print(
            f"  {opened:,} of {clients:,} open in {secs:.1f} s (retries {retries}, failures {dict(failures) or 0}); "
            f"server +{server_growth / 2**20:,.0f} MiB, clients {client_rss / 2**20:,.0f} MiB",
            flush=True,
        )
        run.next_score = first_score
        if opened < clients:
            run.error = f"only {opened:,} of {clients:,} sockets opened: {dict(failures)}"
            return run
        watch = _watched(services, fleet)
        score = first_score
        for rate, seconds in passes:
            name = f"{clients} watchers, {rate:g}/s"
            prefix = f"w{clients}r{rate:g}-"
            start = time.monotonic() + 0.5 + WARMUP_SECS
            window = PassWindow(name, prefix, start, start + seconds, start + seconds + SETTLE_SECS)
            fleet.start_pass(window)
            submit = _run_async(
                _submit(
                    port=services.port,
                    raw_key=services.raw_key,
                    rate=rate,
                    window=window,
                    submissions=NewPlayers(prefix, score),
                    watch=watch,
                )
            )
            score += int((seconds + WARMUP_SECS + 1) * rate) + 1
            run.next_score = score
            result = PassResult(name, clients, rate, submit, fleet.collect(window))
            _latencies(result)
            run.passes.append(result)
            _print_pass(result)
            for process, what in (
                (services.server, "the web worker"),
                (services.ws_server, "the websocket worker"),
                (services.broadcaster, "the broadcaster"),
            ):
                if process.poll() is not None:
                    raise RuntimeError(f"{what} exited with code {process.returncode} during the run")
        return run
    finally:
        fleet.stop()


# --------------------------------------------------------------------------- report


def _ms(values: list[float], quantile: float) -> str:
    value = common.percentile(values, quantile)
    if math.isnan(value):
        return "-"
    if value == INF:
        return f"> {SETTLE_SECS * 1000:,.0f}"
    return f"{value:,.0f}"


def _quantiles(values: list[float]) -> str:
    return " / ".join(_ms(values, q) for q in (0.5, 0.95, 0.99))


def _cpu(result: PassResult, name: str) -> float:
    return result.submit.cpu.get(name, float("nan"))


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def _share(part: float, whole: float) -> float:
    return part / whole if whole else float("nan")


def _problems(result: PassResult) -> list[str]:
    s = result.submit
    problems = []
    if result.closed:
        problems.append(f"sockets closed: {dict(result.closed)}")
    if set(s.statuses) - {"200"}:
        problems.append(f"submission answers: {dict(s.statuses)}")
    if s.unsent:
        problems.append(f"{s.unsent:,} submissions never sent (the server fell behind)")
    if result.other_messages or result.versions_backwards:
        problems.append(f"{result.other_messages} other messages, {result.versions_backwards} older versions")
    return problems


def _us_per_message(result: PassResult) -> float:
    """The websocket worker's CPU µs per standings message delivered to one socket."""
    messages = sum(result.counts)
    return _cpu(result, "ws") * result.submit.seconds / messages * 1e6 if messages else float("nan")


def _print_pass(result: PassResult) -> None:
    s = result.submit
    rates = result.messages_per_client_sec
    clients_cpu = result.client_cpu
    problems = _problems(result)
    print(
        f"  {result.name}: accepted {s.rate:,.0f}/s (send lag p99 {_ms(s.send_lag_ms, 0.99)} ms, "
        f"200 in p50 {_ms(s.latencies_ms, 0.5)} p99 {_ms(s.latencies_ms, 0.99)} ms); messages/watcher/s "
        f"{_mean(rates):.2f} ({rates[0] if rates else 0:.2f}-{rates[-1] if rates else 0:.2f}), board snapshots/s "
        f"{result.board_versions_per_sec:.2f}\n"
        f"    to a view as new p50/p95/p99 {_quantiles(result.view_ms)} ms; to its own row "
        f"{_quantiles(result.row_ms)} ms ({_share(len(result.row_ms), result.pairs):.0%} of pairs)\n"
        f"    cpu: web {_cpu(result, 'web'):.0%} ws {_cpu(result, 'ws'):.0%} "
        f"({_us_per_message(result):.1f} µs per socket-message) broadcaster {_cpu(result, 'broadcaster'):.0%} "
        f"redis {_cpu(result, 'redis'):.0%} clients {sum(clients_cpu):.0%} (max {max(clients_cpu):.0%}/process) "
        f"submitter {_cpu(result, 'submitter'):.0%}" + (f"\n    PROBLEMS: {'; '.join(problems)}" if problems else ""),
        flush=True,
    )


def _delivery_table(runs: list[RunResult]) -> str:
    lines = [
        "| watchers | submissions/s accepted (target) | standings msgs per watcher/s: mean (min-max) "
        "| board snapshots/s | to a view as new: p50 / p95 / p99 ms | to its own row: p50 / p95 / p99 ms "
        "| own row shown | notes |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for run in runs:
        for p in run.passes:
            rates = p.messages_per_client_sec
            lines.append(
                f"| {p.clients:,} | {p.submit.rate:,.0f} ({p.target_rate:g}) | {_mean(rates):.2f} "
                f"({rates[0]:.2f}-{rates[-1]:.2f}) | {p.board_versions_per_sec:.2f} | {_quantiles(p.view_ms)} "
                f"| {_quantiles(p.row_ms)} | {_share(len(p.row_ms), p.pairs):.0%} | {'; '.join(_problems(p))} |"
            )
    return "\n".join(lines)


def _cpu_table(runs: list[RunResult]) -> str:
    lines = [
        "| watchers | submissions/s | web worker CPU | websocket worker CPU | broadcaster CPU | Redis CPU "
        "| client CPU (processes; busiest) | submitter CPU | submission 200 p50 / p99 ms | ws memory per socket |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for run in runs:
        for p in run.passes:
            clients_cpu = p.client_cpu
            lines.append(
                f"| {p.clients:,} | {p.submit.rate:,.0f} | {_cpu(p, 'web'):.0%} | {_cpu(p, 'ws'):.0%} "
                f"| {_cpu(p, 'broadcaster'):.0%} | {_cpu(p, 'redis'):.0%} "
                f"| {sum(clients_cpu):.0%} ({len(clients_cpu)}; {max(clients_cpu):.0%}) "
                f"| {_cpu(p, 'submitter'):.0%} "
                f"| {_ms(p.submit.latencies_ms, 0.5)} / {_ms(p.submit.latencies_ms, 0.99)} "
                f"| {run.server_rss_per_socket / 1024:,.0f} KiB |"
            )
    return "\n".join(lines)


def _floor_table(runs: list[RunResult], floors: list[FloorResult]) -> str:
    lines = [
        "| watchers | pass | product: ws worker µs per socket-message | floor: µs per socket-message "
        "| ratio | watchers one core feeds at the tick rate (product / floor) |",
        "| ---: | --- | ---: | ---: | ---: | ---: |",
    ]
    for run in runs:
        floor = next((f for f in floors if f.clients == run.clients and f.compress), None)
        for p in run.passes:
            ours = _us_per_message(p)
            base = floor.us_per_message if floor else float("nan")
            per_core = 1e6 / (ours * _mean(p.messages_per_client_sec))
            floor_core = 1e6 / (base * floor.messages_per_client_sec) if floor else float("nan")
            lines.append(
                f"| {p.clients:,} | {p.target_rate:g} submissions/s | {ours:.1f} | {base:.1f} "
                f"| {ours / base:.2f} | {per_core:,.0f} / {floor_core:,.0f} |"
            )
    return "\n".join(lines)


def _watchers_kept_up(result: PassResult, tick_ms: int) -> bool:
    return not result.closed and _mean(result.messages_per_client_sec) >= HEALTHY_MESSAGE_SHARE * 1000 / tick_ms


def _submissions_kept_up(result: PassResult) -> bool:
    s = result.submit
    return not s.unsent and set(s.statuses) <= {"200"} and s.rate >= SUBMIT_KEPT_UP_SHARE * result.target_rate


def _targets(runs: list[RunResult], floors: list[FloorResult], tick_ms: int) -> list[str]:
    """The issue's targets, each as met or not with its figure."""
    sentences = []
    latency_bound = 2 * tick_ms + 100
    for run in runs:
        high = run.passes[0] if run.passes else None
        floor = next((f for f in floors if f.clients == run.clients and f.compress), None)
        if high is None or floor is None:
            continue
        ratio = _us_per_message(high) / floor.us_per_message
        p99 = common.percentile(high.view_ms, 0.99)
        sentences.append(
            f"{run.clients:,} watchers on one websocket worker: {_mean(high.messages_per_client_sec):.2f} standings "
            f"messages/s each ({'kept up' if _watchers_kept_up(high, tick_ms) else 'fell behind'}), "
            f"{_us_per_message(high):.1f} µs of CPU per socket-message against the floor's "
            f"{floor.us_per_message:.1f} µs: {ratio:.2f}x ({'within' if ratio <= 2 else 'above'} the target of 2); "
            f"p99 submission→view {p99:,.0f} ms ({'within' if p99 <= latency_bound else 'above'} 2 ticks + 100 ms "
            f"= {latency_bound} ms); ingest accepted {high.submit.rate:,.0f} of {high.target_rate:g}/s "
            f"({high.submit.rate / high.target_rate:.0%}, {'meeting' if _submissions_kept_up(high) else 'missing'} "
            f"the {SUBMIT_KEPT_UP_SHARE:.0%} target)."
        )
    return sentences


def _deflate_sentence(floors: list[FloorResult]) -> str:
    pairs = [(f, g) for f in floors for g in floors if f.compress and not g.compress and f.clients == g.clients]
    if not pairs:
        return ""
    with_deflate, without = pairs[0]
    saved = with_deflate.us_per_message - without.us_per_message
    return (
        f"permessage-deflate stays on because browsers offer it: at {without.clients:,} sockets the floor costs "
        f"{with_deflate.us_per_message:.1f} µs per socket-message with it and {without.us_per_message:.1f} µs "
        f"without, so turning it off (uvicorn's `--ws-per-message-deflate false`) saves about {saved:.0f} µs per "
        "socket-message, the same in the product since the compression is uvicorn's, per socket; it costs "
        "bandwidth instead (standings frames compress several-fold)."
    )


def _interpretation(
    runs: list[RunResult], floors: list[FloorResult], *, tick_ms: int, skipped: str | None, machine: dict[str, str]
) -> str:
    expected = 1000 / tick_ms
    sentences = _targets(runs, floors, tick_ms)
    kept_up = [r for r in runs if r.passes and all(_watchers_kept_up(p, tick_ms) for p in r.passes)]
    if kept_up:
        ref = kept_up[-1]
        high, low = ref.passes[0], ref.passes[-1]
        sentences.append(
            f"The message rate follows the tick, not the submission rate: {_mean(high.messages_per_client_sec):.2f} "
            f"messages/s at {high.submit.rate:,.0f} submissions/s and {_mean(low.messages_per_client_sec):.2f} at "
            f"{low.submit.rate:,.0f}/s (a {tick_ms} ms tick allows {expected:g})."
        )
    sentences.append(_deflate_sentence(floors))
    if skipped and runs[-1].clients < BIG_CLIENTS:
        sentences.append(f"There was no {BIG_CLIENTS:,}-watcher run: {skipped}.")
    client_max = max((max(p.client_cpu) for r in runs for p in r.passes), default=0.0)
    busiest = max(runs[-1].passes, key=lambda p: p.target_rate) if runs and runs[-1].passes else None
    if busiest is not None:
        total = sum(v for v in busiest.submit.cpu.values())
        sentences.append(
            f"The machine has {machine['cpus']} cores shared by the web worker, the websocket worker, the "
            f"broadcaster, Redis, the client processes and the submitter (load average "
            f"{machine['load average before the run']} before the run); at {busiest.clients:,} watchers and "
            f"{busiest.target_rate:g} submissions/s they used {total:.2f} cores together, the client processes "
            f"{sum(busiest.client_cpu):.0%} of a core (the busiest {client_max:.0%}). Per core, the figures above "
            "say how many watchers one websocket worker feeds at the tick rate; a deployment adds websocket "
            "workers (WEB_WS_WORKERS) per core, as each keeps its own hub and subscribes once per watched board."
        )
    return " ".join(s for s in sentences if s)


def _section(
    runs: list[RunResult],
    floors: list[FloorResult],
    *,
    args: argparse.Namespace,
    machine: dict[str, str],
    tick_ms: int,
    skipped: str | None,
) -> str:
    machine_text = "; ".join(f"{k}: {v}" for k, v in machine.items())
    low_secs = min(args.duration, LOW_RATE_MAX_SECS)
    connect = "; ".join(
        f"{r.opened:,} of {r.clients:,} in {r.connect_secs:.0f} s from {r.processes} process(es)"
        + (f" ({r.connect_retries} retried)" if r.connect_retries else "")
        + (f", {r.error}" if r.error else "")
        for r in runs
    )
    watchers = " then ".join(f"{r.clients:,}" for r in runs)
    bullets = [
        f"The real server as WEB_WS_WORKERS=1 deploys it: one uvicorn worker for the API (submissions) and one "
        f"for the websockets, production settings, and one broadcaster (`manage.py broadcast`, "
        f"BROADCAST_TICK_MS={tick_ms}); a game in `best` mode with all four periods.",
        f"Watchers: {watchers}, each a websocket subscribed to the daily board with limit {WATCH_LIMIT}, from "
        f"asyncio client processes ({SOCKETS_PER_CLIENT_PROCESS} sockets each at most; permessage-deflate on, as "
        f"browsers offer it). Sockets opened: {connect}.",
        f"Submissions: POST /api/v1/games/{{g}}/leaderboards/{{b}}/scores on {SUBMIT_CONNECTIONS} keep-alive "
        "connections, open loop "
        f"and evenly spread, each from a new player with a score above every earlier one. Per run, "
        f"{args.duration:g} s measured at {args.rate:g}/s, then {low_secs:g} s at {LOW_RATE_PER_SEC:g}/s on the "
        f"same sockets, each after {WARMUP_SECS:g} s of warm-up.",
        "*The floor* (bench/floor_app.py), measured in the same run with the same client processes and number of "
        "sockets: a bare ASGI app on the same uvicorn and flags that writes one pre-encoded standings frame of the "
        "same shape to every socket each tick. *µs per socket-message* is a worker's CPU over the window divided "
        "by the standings messages the watchers received in it.",
        f"Latency runs from a submission's 200 to a watcher receiving it, over every (watcher, submission) pair "
        f"of {TRACKED_WATCHERS} tracked watchers (the others only count messages). *To a view as new*: the first "
        f"standings message whose top score is at least the submission's (`> {SETTLE_SECS * 1000:,.0f}`: none "
        f"within {SETTLE_SECS:g} s). *To its own row*: the first message listing the player, which only the "
        f"newest {WATCH_LIMIT} submissions of each snapshot get.",
        "CPU columns are shares of one core over the measured window; memory is the websocket worker's growth "
        "while the sockets opened, per socket.",
    ]
    parameters = "\n".join(f"- {b}" for b in bullets)
    return f"""## Live fan-out (`make bench-fanout`, bench/fanout.py)

Last run: {common.utc_now_text()}. Machine: {machine_text}.

Parameters:

{parameters}

{_floor_table(runs, floors)}

{_delivery_table(runs)}

{_cpu_table(runs)}

{_interpretation(runs, floors, tick_ms=tick_ms, skipped=skipped, machine=machine)}
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


def _start_services(
    tmp: Path, processes: list[subprocess.Popen[bytes]], *, profile: Path | None, settings: str, mode: str = "best"
) -> tuple[Services, int]:
    """Redis, SQLite, the game and its key (a board 'main' in ``mode``), uvicorn and the broadcaster;
    returns them and the tick in ms."""
    redis_process, redis_url = common.start_redis(tmp / "redis")
    processes.append(redis_process)
    env = common.bench_env(var_dir=tmp, redis_url=redis_url, settings_module=settings)
    common.manage(env, "migrate", "--noinput", "-v", "0")
    common.manage(env, "creategame", GAME_SLUG, "--name", "Fan-out", "--max-per-minute", "0")
    common.manage(env, "createleaderboard", GAME_SLUG, "main", "--mode", mode)
    # Items too (a score is one; the default 60,000 a minute would refuse bench/deep_views.py's fill).
    limit = str(API_KEY_REQUESTS_PER_MINUTE)
    raw_key = common.manage_output(
        env, "createapikey", GAME_SLUG, "--name", "bench", "--requests-per-minute", limit, "--items-per-minute", limit
    ).strip()
    settings_out = common.manage_output(
        env, "shell", "--no-imports", "-c", "from django.conf import settings; print(settings.BROADCAST_TICK_MS)"
    )
    tick_ms = int(settings_out.split()[-1])
    port, ws_port = common.free_port(), common.free_port()
    server = common.start_server(env=env, port=port)
    processes.append(server)
    common.wait_for_http_ok(port, "/healthz", process=server)
    # Sockets on a worker of their own, as WEB_WS_WORKERS=1 runs them: the profile is of this one.
    ws_server = common.start_server(env=env, port=ws_port, profile_path=profile)
    processes.append(ws_server)
    common.wait_for_http_ok(ws_port, "/healthz", process=ws_server)
    log = tmp / "broadcaster.log"
    with log.open("wb") as handle:
        broadcaster = common.spawn([common.PYTHON, "manage.py", "broadcast"], env, stdout=handle, stderr=handle)
    processes.append(broadcaster)
    deadline = time.monotonic() + common.STARTUP_TIMEOUT_SECS
    while b"broadcasting every" not in log.read_bytes():
        if broadcaster.poll() is not None:
            raise RuntimeError(f"the broadcaster exited with code {broadcaster.returncode}: {log.read_text()[-2000:]}")
        if time.monotonic() > deadline:
            raise RuntimeError("the broadcaster did not start")
        time.sleep(0.05)
    return Services(port, ws_port, raw_key, server, ws_server, broadcaster, redis_process, log), tick_ms


def _big_run_blocker(args: argparse.Namespace, first: RunResult, open_files: int) -> str | None:
    """Why the big run should not happen here, or None."""
    if args.skip_big:
        return "--skip-big"
    if args.profile:
        return "--profile"
    if args.clients >= BIG_CLIENTS:
        return f"the first run already had {args.clients:,} watchers"
    if first.error or any(p.closed or p.versions_backwards for p in first.passes):
        return f"the {first.clients:,}-watcher run lost sockets or messages (see its notes)"
    if open_files < BIG_CLIENTS + OPEN_FILES_SPARE:
        return f"the open-files limit is {open_files:,}"
    need = (first.server_rss_per_socket + first.client_rss_per_socket) * BIG_CLIENTS * MEMORY_HEADROOM
    available = common.mem_available_bytes()
    if available < need + MEMORY_RESERVE_BYTES:
        return (
            f"{available / 2**30:.1f} GiB of memory available, {(need + MEMORY_RESERVE_BYTES) / 2**30:.1f} GiB wanted"
        )
    return None


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=DEFAULT_CLIENTS, help="websocket watchers")
    parser.add_argument("--rate", type=float, default=DEFAULT_RATE_PER_SEC, help="submissions per second")
    parser.add_argument("--duration", type=float, default=DEFAULT_DURATION_SECS, help="seconds measured at --rate")
    parser.add_argument("--no-docs", action="store_true", help="do not rewrite docs/benchmarks.md")
    parser.add_argument("--skip-big", action="store_true", help=f"no second run at {BIG_CLIENTS:,} watchers")
    parser.add_argument("--no-floor", action="store_true", help="no bare-ASGI floor runs (implies --no-docs)")
    parser.add_argument(
        "--baseline-clients",
        type=int,
        default=DEFAULT_BASELINE_CLIENTS,
        help="watchers of a first, smaller reference run (0: none; skipped unless below --clients)",
    )
    parser.add_argument(
        "--client-processes",
        type=int,
        default=0,
        help=f"client processes (default: one per {SOCKETS_PER_CLIENT_PROCESS} sockets)",
    )
    parser.add_argument(
        "--profile",
        type=Path,
        metavar="FILE",
        help="run uvicorn under cProfile, write its stats to FILE and print the top (implies --no-docs, --skip-big)",
    )
    parser.add_argument(
        "--settings",
        default=DEFAULT_SETTINGS,
        help="Django settings module of the server and the broadcaster (A/B experiments; implies --no-docs)",
    )
    args = parser.parse_args(argv)
    if not 1 <= args.clients <= 20_000:
        parser.error("--clients must be between 1 and 20,000")
    if not 1 <= args.rate <= 5000:
        parser.error("--rate must be between 1 and 5,000 per second")
    if not 1 <= args.duration <= 600:
        parser.error("--duration must be between 1 and 600 seconds")
    if not 0 <= args.client_processes <= 64:
        parser.error("--client-processes must be between 0 (auto) and 64")
    if not 0 <= args.baseline_clients <= 20_000:
        parser.error("--baseline-clients must be between 0 and 20,000")
    if args.baseline_clients >= args.clients:
        args.baseline_clients = 0
    if args.profile or args.settings != DEFAULT_SETTINGS or args.no_floor:
        # Numbers from another configuration must not replace the documented ones.
        args.no_docs = True
    return args


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    machine = common.machine_info()
    print("machine: " + "; ".join(f"{k}: {v}" for k, v in machine.items()), flush=True)
    # uvicorn inherits this limit: it holds one socket per watcher.
    open_files = common.raise_open_files_limit(max(args.clients, BIG_CLIENTS) + OPEN_FILES_SPARE)
    passes = [(args.rate, args.duration), (LOW_RATE_PER_SEC, min(args.duration, LOW_RATE_MAX_SECS))]
    runs: list[RunResult] = []
    floors: list[FloorResult] = []
    skipped: str | None = None
    tick_ms = 0
    processes: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory(prefix="lb-fanout-") as tmp, common.sigterm_as_interrupt():
        services: Services | None = None
        try:
            services, tick_ms = _start_services(Path(tmp), processes, profile=args.profile, settings=args.settings)
            live = services
            score = SCORE_BASE

            def run(clients: int) -> RunResult:
                nonlocal score
                result = _run(
                    live,
                    clients=clients,
                    processes=_client_processes(clients, args.client_processes),
                    passes=passes,
                    first_score=score,
                )
                score = result.next_score
                runs.append(result)
                if result.error is None and not args.no_floor:
                    for compress in (True, False) if len(runs) == 1 else (True,):
                        floors.append(
                            _floor(
                                clients=clients,
                                processes=_client_processes(clients, args.client_processes),
                                tick_ms=tick_ms,
                                seconds=min(args.duration, FLOOR_MAX_SECS),
                                compress=compress,
                            )
                        )
                return result

            if args.baseline_clients:
                run(args.baseline_clients)
            main_run = run(args.clients)
            skipped = _big_run_blocker(args, main_run, open_files)
            if skipped is None:
                # A lighter ingest beside the big run: on a small machine the web worker's CPU at
                # the full rate would be taken from the websocket worker and the clients.
                passes[0] = (min(args.rate, BIG_RUN_RATE_PER_SEC), args.duration)
                run(BIG_CLIENTS)
            elif args.clients < BIG_CLIENTS:
                print(f"\nno {BIG_CLIENTS:,}-watcher run: {skipped}", flush=True)
        except KeyboardInterrupt:
            print("\ninterrupted; stopping the clients, the broadcaster, the server and Redis", file=sys.stderr)
            return 130
        except (RuntimeError, OSError, subprocess.CalledProcessError) as error:
            print(f"\nthe benchmark failed: {error}", file=sys.stderr)
            return 1
        finally:
            common.stop_processes(processes)
            if services is not None:
                # Anything past the start banner is a warning or an error worth seeing.
                extra = services.broadcaster_log.read_text().split("\n", 1)[-1].strip()
                if extra:
                    print(f"\nbroadcaster log:\n{extra[-4000:]}", file=sys.stderr)

    if args.profile:
        _print_profile(args.profile)
    if not args.no_docs and runs and runs[0].passes:
        section = _section(runs, floors, args=args, machine=machine, tick_ms=tick_ms, skipped=skipped)
        common.write_section("fanout", section)
        print(f"\nwrote the fanout section of {common.DOCS_PATH.relative_to(REPO_DIR)}")
    # A saturated server is a result; only sockets that could not open at all fail the benchmark.
    return 1 if any(r.error for r in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
