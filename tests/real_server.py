"""The product as real processes, for tests of what only a real run shows (its log, several
workers adding up their metrics, two nodes): uvicorn started as ``make run`` starts it,
on a free port, with a SQLite file of the test's own and the suite's Redis.

``setup_node`` migrates that database and makes a game with one board and a submit key;
``start_web`` starts a server (its stderr, the log, into a file) and waits for /healthz.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from django.conf import settings

from tests.conftest import free_port

REPO_DIR = Path(__file__).resolve().parents[1]
START_TIMEOUT_SECS = 30.0
STOP_TIMEOUT_SECS = 10.0


@dataclass
class Node:
    env: dict[str, str]
    raw_key: str
    game: str
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)


def node_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    # The node's own database: a file its processes share, not the test process's.
    env.pop("DATABASE_URL", None)
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "leaderboard_site.settings",
            "DEBUG": "1",
            "VAR_DIR": str(tmp_path),
            "REDIS_URL": settings.REDIS_URL,
            "PYTHONPATH": str(REPO_DIR),
            **extra,
        }
    )
    return env


def manage(env: dict[str, str], *args: str) -> str:
    return subprocess.run(
        [sys.executable, "manage.py", *args], env=env, cwd=REPO_DIR, check=True, capture_output=True, text=True
    ).stdout


def node_process(env: dict[str, str], module: str, *args: str) -> subprocess.Popen[str]:
    """``python -m module args`` as a process of the node (its output captured, as text)."""
    return subprocess.Popen(
        [sys.executable, "-m", module, *args],
        env=env,
        cwd=REPO_DIR,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finished(process: subprocess.Popen[str], timeout: float) -> str:
    """What a node process printed, once it exited with 0 within ``timeout`` seconds."""
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, err[-3000:]
    return out


def setup_node(env: dict[str, str], game: str) -> Node:
    manage(env, "migrate", "--noinput", "-v", "0")
    manage(env, "creategame", game, "--name", game.title(), "--max-per-minute", "0")
    manage(env, "createleaderboard", game, "main", "--mode", "best")
    raw_key = manage(env, "createapikey", game, "--name", "tests").strip()
    return Node(env=env, raw_key=raw_key, game=game)


def wait_listening(url: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_SECS
    while True:
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"the server at {url} did not start")
        time.sleep(0.1)


def start_web(node: Node, *, workers: int = 1, log: Path | None = None) -> str:
    """A uvicorn server of the node (``workers`` processes, as WEB_WORKERS makes them); its URL."""
    port = free_port()
    args = [sys.executable, "-m", "uvicorn", "leaderboard_site.asgi:application", "--port", str(port)]
    args += ["--workers", str(workers), "--no-access-log", "--lifespan", "off"]
    stderr = log.open("ab") if log is not None else subprocess.DEVNULL
    process = subprocess.Popen(args, env=node.env, cwd=REPO_DIR, stderr=stderr)
    node.processes.append(process)
    url = f"http://127.0.0.1:{port}"
    wait_listening(url, process)
    return url


def stop_all(node: Node) -> None:
    for process in node.processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in node.processes:
        try:
            process.wait(timeout=STOP_TIMEOUT_SECS)
        except subprocess.TimeoutExpired:
            process.kill()
