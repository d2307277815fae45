"""The whole product as real processes on a clock the test moves (libfaketime).

Web (uvicorn: the API and pages), a websocket worker (uvicorn on a port of its own, as
``make run`` starts it), the broadcaster (``manage.py broadcast``), the Celery worker and Celery
beat: each started with Debian's libfaketime preloaded, reading its offset from a file
(``FAKETIME_TIMESTAMP_FILE``, read again every ``FAKETIME_CACHE_DURATION`` second). The test
writes the file to move every process's clock at once; wall clocks and monotonic clocks jump
together, as after a suspend. Redis is a redis-server of the stack's own on the real clock
(key expiry is relative), the database a SQLite file of its own.

Nothing in the product knows about this: no seam, no setting. The test reads what a user
sees (HTTP, a websocket) and, for "exactly once", the database file; and each process's CPU
from /proc.
"""

from __future__ import annotations

import datetime as dt
import glob
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from leaderboard_site import processes

REPO_DIR = Path(__file__).resolve().parents[2]
# Where Debian (and most distributions) put the library; LIBFAKETIME names another.
LIBFAKETIME_GLOBS = ("/usr/lib/*/faketime/libfaketimeMT.so.1", "/usr/lib/faketime/libfaketimeMT.so.1")
# The processes read the offset file again this often (s): a move reaches them all within it.
FAKETIME_CACHE_SECS = 1
# After writing a new offset, the test waits this long before relying on it everywhere.
MOVE_SETTLE_SECS = FAKETIME_CACHE_SECS + 0.5
START_TIMEOUT_SECS = 60.0
STOP_TIMEOUT_SECS = 15.0
# A finished period's close job falls due this long after its end (ARCHIVE_GRACE_SECS): short,
# so that a test sees the archive within seconds.
ARCHIVE_GRACE_SECS = 2
# The product's CPU tick rate, for /proc/<pid>/stat.
CLOCK_TICKS_PER_SEC = os.sysconf("SC_CLK_TCK")
PROCESS_NAMES = ("web", "ws", "broadcaster", "worker", "beat")


class StackError(RuntimeError):
    pass


def libfaketime() -> str:
    """The path of libfaketimeMT (the thread-safe build: every process here runs threads)."""
    named = os.environ.get("LIBFAKETIME")
    if named:
        return named
    for pattern in LIBFAKETIME_GLOBS:
        found = sorted(glob.glob(pattern))
        if found:
            return found[0]
    raise StackError("libfaketime is not installed: apt-get install faketime (or set LIBFAKETIME to its .so.1)")


@dataclass
class Game:
    slug: str
    submit_key: str
    manage_key: str


@dataclass
class Stack:
    """The running processes, their ports, and the clock they share."""

    tmp: Path
    env: dict[str, str]
    clock_file: Path
    web_url: str = ""
    ws_url: str = ""
    offset_secs: int = 0  # how far the processes' clocks are ahead of the real one
    redis: subprocess.Popen[bytes] | None = None
    running: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    logs: dict[str, Path] = field(default_factory=dict)

    # ----------------------------------------------------------------------------- the clock

    def now(self) -> dt.datetime:
        """The processes' time now (the real time plus the offset)."""
        return dt.datetime.now(dt.UTC) + dt.timedelta(seconds=self.offset_secs)

    def move_to(self, instant: dt.datetime) -> None:
        """Put every process's clock at ``instant`` (to the second), then wait until they all read
        it. Forward only: the product's clock never runs back in production either."""
        offset = round((instant - dt.datetime.now(dt.UTC)).total_seconds())
        if offset < self.offset_secs:
            raise StackError(f"the clock only moves forward ({instant} is in the processes' past)")
        self._write_offset(offset)
        time.sleep(MOVE_SETTLE_SECS)

    def _write_offset(self, offset: int) -> None:
        self.offset_secs = offset
        # Written whole, then renamed: a process never reads half a line.
        part = self.clock_file.with_suffix(".part")
        part.write_text(f"{offset:+d}\n")
        part.replace(self.clock_file)

    # ----------------------------------------------------------------------------- processes

    def start(self) -> None:
        port = processes.free_port()
        self.redis = processes.start_embedded_redis(port=port, data_dir=self.tmp / "redis", durable=False)
        self.env["REDIS_URL"] = f"redis://127.0.0.1:{port}/0"
        self.manage("migrate", "--noinput", "-v", "0")
        web_port, ws_port = processes.free_port(), processes.free_port()
        self.env["LIVE_SOCKET_PORT"] = str(ws_port)
        self.web_url, self.ws_url = f"http://127.0.0.1:{web_port}", f"ws://127.0.0.1:{ws_port}"
        for name in PROCESS_NAMES:
            self.start_process(name)
        for url in (self.web_url, f"http://127.0.0.1:{ws_port}"):
            self._wait_healthy(url)

    def _args(self, name: str) -> list[str]:
        python = sys.executable
        uvicorn = [python, "-m", "uvicorn", "leaderboard_site.asgi:application", "--host", "127.0.0.1"]
        uvicorn += ["--no-access-log", "--lifespan", "off", "--timeout-graceful-shutdown", "2", "--port"]
        celery = [python, "-m", "celery", "-A", "leaderboard_site", "--quiet"]
        return {
            "web": [*uvicorn, self.web_url.rsplit(":", 1)[1]],
            "ws": [*uvicorn, self.ws_url.rsplit(":", 1)[1]],
            "broadcaster": [python, "manage.py", "broadcast"],
            "worker": [*celery, "worker", "--loglevel", "WARNING", "--concurrency", "1"],
            "beat": [*celery, "beat", "--loglevel", "WARNING", "--schedule", str(self.tmp / "beat-schedule")],
        }[name]

    def start_process(self, name: str) -> None:
        """Start one process on the faked clock (its output appended to its log)."""
        log = self.logs.setdefault(name, self.tmp / f"{name}.log")
        with log.open("ab") as out:
            self.running[name] = subprocess.Popen(
                self._args(name),
                env=self.env,
                cwd=REPO_DIR,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=processes._die_with_parent,
            )

    def restart(self, name: str) -> None:
        self._stop([self.running.pop(name)])
        self.start_process(name)

    def stop(self) -> None:
        self._stop(list(self.running.values()))
        self.running.clear()
        if self.redis is not None:
            self._stop([self.redis])

    @staticmethod
    def _stop(stopping: list[subprocess.Popen[bytes]]) -> None:
        for process in stopping:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in stopping:
            try:
                process.wait(timeout=STOP_TIMEOUT_SECS)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()

    def _wait_healthy(self, url: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT_SECS
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            self.check_alive()
            time.sleep(0.2)
        raise StackError(f"{url} did not answer /healthz within {START_TIMEOUT_SECS:.0f} s\n{self.log_tails()}")

    def check_alive(self) -> None:
        gone = {name: p.returncode for name, p in self.running.items() if p.poll() is not None}
        if gone:
            raise StackError(f"processes exited: {gone}\n{self.log_tails()}")

    def log_tails(self, lines: int = 25) -> str:
        parts = []
        for name, path in self.logs.items():
            text = path.read_text(errors="replace").splitlines()[-lines:] if path.exists() else []
            parts.append(f"--- {name} ({path})\n" + "\n".join(text))
        return "\n".join(parts)

    # ----------------------------------------------------------------------------- setup and reads

    def manage(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args], env=self.env, cwd=REPO_DIR, capture_output=True, text=True
        )
        if done.returncode != 0:
            raise StackError(f"manage.py {' '.join(args)} failed:\n{done.stderr}")
        return done.stdout

    def make_game(self, slug: str, *, timezone_name: str = "UTC") -> Game:
        """A game with a submit key and a manage key (its boards are made through the API), in
        one management process."""
        script = (
            "from core import apikeys, services; "
            f"game = services.game_create(slug={slug!r}, name={slug.title()!r}, timezone_name={timezone_name!r}, "
            "max_submissions_per_minute=0); "
            "print('keys:', apikeys.api_key_create(game=game, name='servers')[1], "
            "apikeys.api_key_create(game=game, name='ops', scope='manage')[1])"
        )
        output = self.manage("shell", "-c", script)
        _, submit, manage = next(line for line in output.splitlines() if line.startswith("keys: ")).split()
        return Game(slug, submit, manage)

    def rows(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        """Rows of the stack's database (read-only), for what no API shows (how many times an
        archive was written)."""
        with closing(sqlite3.connect(f"file:{self.tmp / 'db.sqlite3'}?mode=ro", uri=True)) as db:
            return list(db.execute(sql, params))

    def archives(self, game: str, board: str) -> list[tuple[str, str, str, int, str]]:
        """(period, period_id, status, total, archived_at) of each archived period of a board."""
        return [
            (str(p), str(i), str(s), int(t), str(a))
            for p, i, s, t, a in self.rows(
                "SELECT a.period, a.period_id, a.status, a.total, a.archived_at FROM archive_archivedperiod a "
                "JOIN games_leaderboard b ON a.leaderboard_id = b.id JOIN games_game g ON b.game_id = g.id "
                "WHERE g.slug = ? AND b.slug = ? ORDER BY a.period, a.period_id",
                game,
                board,
            )
        ]

    # ----------------------------------------------------------------------------- CPU

    def cpu_shares(self, seconds: float) -> dict[str, float]:
        """Each process's CPU over ``seconds`` (with its children: Celery's pool), as a share of
        one core."""
        before = {name: self._cpu_ticks(p.pid) for name, p in self.running.items()}
        started = time.monotonic()
        time.sleep(seconds)
        elapsed = time.monotonic() - started
        after = {name: self._cpu_ticks(p.pid) for name, p in self.running.items()}
        return {name: (after[name] - before[name]) / CLOCK_TICKS_PER_SEC / elapsed for name in self.running}

    @staticmethod
    def _cpu_ticks(pid: int) -> int:
        """utime + stime of a process and its live descendants, in clock ticks."""
        parents: dict[int, int] = {}
        ticks: dict[int, int] = {}
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                raw = Path(f"/proc/{entry.name}/stat").read_bytes()
            except OSError:
                continue
            fields = raw[raw.rindex(b")") + 2 :].split()
            parents[int(entry.name)] = int(fields[1])
            ticks[int(entry.name)] = int(fields[11]) + int(fields[12])
        family, grew = {pid}, True
        while grew:
            found = {child for child, parent in parents.items() if parent in family} - family
            family |= found
            grew = bool(found)
        return sum(ticks.get(p, 0) for p in family)


def env_for(tmp: Path) -> dict[str, str]:
    env = dict(os.environ)
    for name in ("DATABASE_URL", "PROMETHEUS_MULTIPROC_DIR", "LD_PRELOAD", "FAKETIME", "REDIS_CLUSTER"):
        env.pop(name, None)
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "leaderboard_site.settings",
            "DEBUG": "1",
            "VAR_DIR": str(tmp),
            "PYTHONPATH": str(REPO_DIR),
            "ARCHIVE_GRACE_SECS": str(ARCHIVE_GRACE_SECS),
            "LOG_LEVEL": "WARNING",
        }
    )
    for name in ("CHANNEL_LAYER_URLS", "CELERY_BROKER_URL", "TEST_REDIS_URL"):
        env.pop(name, None)
    return env


@contextmanager
def running_stack(tmp: Path, start_at: dt.datetime) -> Iterator[Stack]:
    """A stack whose clock reads ``start_at`` when it starts."""
    tmp.mkdir(parents=True, exist_ok=True)
    stack = Stack(tmp=tmp, env=env_for(tmp), clock_file=tmp / "faketime.rc")
    stack._write_offset(round((start_at - dt.datetime.now(dt.UTC)).total_seconds()))
    # Every process of the product, the management commands too, on the moved clock.
    stack.env.update(
        {
            "LD_PRELOAD": libfaketime(),
            "FAKETIME_TIMESTAMP_FILE": str(stack.clock_file),
            "FAKETIME_CACHE_DURATION": str(FAKETIME_CACHE_SECS),
        }
    )
    try:
        stack.start()
        yield stack
    finally:
        stack.stop()
        shutil.rmtree(tmp / "redis", ignore_errors=True)
