"""Outages, reproduced on real processes: the product's uvicorn server and a Redis of its own
(the embedded redis-server, AOF on), killed, frozen and restarted under load.

Each answer must be a 200 or a 503 (with Retry-After): never a 500, never a refused
connection, and never an acknowledged score lost. These tests run real processes,
so on the wall clock.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
import websockets
from websockets.typing import Origin

from leaderboard_site.processes import start_embedded_redis
from tests.real_server import wait_listening

pytestmark = pytest.mark.wall_clock

ROOT = Path(__file__).resolve().parents[2]
SLUG = "outage"
CONFIG_CACHE_SECS = 1


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Stack:
    """A web server and its Redis, as separate processes."""

    base_url: str
    redis_port: int
    redis_dir: Path
    db_path: Path
    key: str
    redis: subprocess.Popen[bytes]
    web: subprocess.Popen[bytes]
    env: dict[str, str] = field(repr=False)

    def kill_redis(self) -> None:
        self.redis.send_signal(signal.SIGKILL)
        self.redis.wait()

    def start_redis(self) -> None:
        self.redis = start_embedded_redis(port=self.redis_port, data_dir=self.redis_dir, durable=True)

    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}


def _manage(env: dict[str, str], *args: str) -> str:
    return subprocess.run(
        [sys.executable, "manage.py", *args], env=env, cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    var = tmp_path_factory.mktemp("outage-var")
    redis_port, web_port = free_port(), free_port()
    env = {
        **os.environ,
        "DEBUG": "1",
        "VAR_DIR": str(var),
        "REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
        "DATABASE_URL": "",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        # This stack's own standalone Redis, for everything (also under make test-cluster).
        "REDIS_CLUSTER": "false",
        "CHANNEL_LAYER_URLS": f"redis://127.0.0.1:{redis_port}/0",
        "CELERY_BROKER_URL": f"redis://127.0.0.1:{redis_port}/0",
        # Configs read again after a second: a database outage meets a reload within the test.
        "GAME_CONFIG_CACHE_SECS": str(CONFIG_CACHE_SECS),
    }
    redis = start_embedded_redis(port=redis_port, data_dir=var / "redis", durable=True)
    _manage(env, "migrate", "--noinput", "-v", "0")
    _manage(env, "creategame", SLUG, "--name", "Outage", "--max-per-minute", "0")
    _manage(env, "createleaderboard", SLUG, "main", "--mode", "increment")
    key = _manage(env, "createapikey", SLUG, "--requests-per-minute", "10000000", "--items-per-minute", "10000000")
    web = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "leaderboard_site.asgi:application",
            "--port",
            str(web_port),
            "--log-level",
            "warning",
        ],
        env=env,
        cwd=ROOT,
    )
    stack = Stack(
        f"http://127.0.0.1:{web_port}", redis_port, var / "redis", var / "db.sqlite3", key.strip(), redis, web, env
    )
    wait_listening(stack.base_url, web)
    yield stack
    for process in (stack.web, stack.redis):
        process.terminate()
        process.wait(timeout=10)


def assert_only_ok_or_unavailable(statuses: Counter[int], responses_503: list[httpx.Response]) -> None:
    assert set(statuses) <= {200, 503}, statuses
    for response in responses_503:
        assert response.headers["retry-after"] == "5"
        assert response.json()["error"]["code"] == "unavailable"


async def _post_increments(stack: Stack, stop: asyncio.Event, player: str, tally: dict) -> None:
    async with httpx.AsyncClient(base_url=stack.base_url, timeout=10) as client:
        while not stop.is_set():
            response = await client.post(
                f"/api/v1/games/{SLUG}/leaderboards/main/scores",
                json={"player_id": player, "score": 1},
                headers=stack.auth(),
            )
            tally["statuses"][response.status_code] += 1
            if response.status_code == 200:
                tally["acked"][player] += 1
            elif response.status_code == 503:
                tally["unknown"][player] += 1
                tally["refusals"].append(response)
                await asyncio.sleep(0.05)


def test_it_loses_no_acknowledged_score_when_redis_is_killed_under_load(stack):
    tally: dict = {"statuses": Counter(), "acked": Counter(), "unknown": Counter(), "refusals": []}
    players = [f"p{i}" for i in range(16)]

    async def run() -> None:
        stop = asyncio.Event()
        posters = [asyncio.create_task(_post_increments(stack, stop, p, tally)) for p in players]
        await asyncio.sleep(1.5)
        stack.kill_redis()  # kill -9, mid-flight
        await asyncio.sleep(1.0)
        stack.start_redis()  # the same data directory: AOF replays what was acknowledged
        await asyncio.sleep(2.0)
        stop.set()
        await asyncio.gather(*posters)

    asyncio.run(run())

    assert_only_ok_or_unavailable(tally["statuses"], tally["refusals"])
    assert tally["statuses"][503] > 0, "the kill went unnoticed: the test proved nothing"
    board = httpx.get(f"{stack.base_url}/api/v1/games/{SLUG}/leaderboards/main/all-time?limit=200").json()
    scores = {e["player_id"]: e["score"] for e in board["entries"]}
    for player in players:
        # Every acknowledged score is there; a 503'd one may or may not have been applied.
        assert tally["acked"][player] <= scores.get(player, 0) <= tally["acked"][player] + tally["unknown"][player]


def test_it_answers_a_hung_redis_with_503_within_about_a_second_and_recovers(stack):
    stack.redis.send_signal(signal.SIGSTOP)
    try:
        started = time.monotonic()
        response = httpx.get(f"{stack.base_url}/api/v1/games/{SLUG}/leaderboards/main/daily", timeout=10)
        elapsed = time.monotonic() - started
        page = httpx.get(f"{stack.base_url}/games/{SLUG}/", timeout=10)
        refused_socket = asyncio.run(_socket_close_code(stack))
    finally:
        stack.redis.send_signal(signal.SIGCONT)

    assert response.status_code == 503 and response.headers["retry-after"] == "5"
    assert elapsed < 3.0, f"waited {elapsed:.1f} s"
    assert page.status_code == 503
    assert refused_socket == 1013
    assert httpx.get(f"{stack.base_url}/api/v1/games/{SLUG}/leaderboards/main/daily").status_code == 200


async def _socket_close_code(stack: Stack) -> int | None:
    url = stack.base_url.replace("http://", "ws://") + f"/ws/games/{SLUG}/"
    async with websockets.connect(url, origin=Origin(stack.base_url), open_timeout=10) as ws:
        try:
            await asyncio.wait_for(ws.recv(), timeout=10)
        except websockets.ConnectionClosed as closed:
            return closed.rcvd.code if closed.rcvd else None
    return None


def test_it_serves_the_first_requests_after_a_redis_restart_without_errors(stack):
    """Once, the first use of each pooled connection after a restart gave a 500 (12-15 per restart)."""

    async def burst(count: int) -> Counter[int]:
        limits = httpx.Limits(max_connections=count)
        async with httpx.AsyncClient(base_url=stack.base_url, timeout=10, limits=limits) as client:
            path = f"/api/v1/games/{SLUG}/leaderboards/main/all-time"
            responses = await asyncio.gather(*(client.get(path) for _ in range(count)))
        return Counter(r.status_code for r in responses)

    assert asyncio.run(burst(60)) == {200: 60}  # the pool now holds many connections
    stack.kill_redis()
    stack.start_redis()
    time.sleep(2)  # every pooled connection is idle, and stale

    assert asyncio.run(burst(60)) == {200: 60}


def test_it_answers_400_concurrent_reads_without_an_error(stack):
    """Once 24-94 of them failed: the connection pool ran out and the error escaped."""

    async def reads() -> Counter[int]:
        limits = httpx.Limits(max_connections=400)
        async with httpx.AsyncClient(base_url=stack.base_url, timeout=30, limits=limits) as client:
            path = f"/api/v1/games/{SLUG}/leaderboards/main/all-time?limit=100"
            responses = await asyncio.gather(*(client.get(path) for _ in range(400)))
        return Counter(r.status_code for r in responses)

    assert asyncio.run(reads()) == {200: 400}


def test_it_keeps_scoring_on_the_last_known_config_while_the_database_is_unreachable(stack):
    scores = f"{stack.base_url}/api/v1/games/{SLUG}/leaderboards/main/scores"
    assert httpx.post(scores, json={"player_id": "dbdown", "score": 1}, headers=stack.auth()).status_code == 200
    moved = stack.db_path.with_suffix(".away")
    stack.db_path.rename(moved)
    stack.db_path.mkdir()  # where the file was, a directory: every new connection fails
    try:
        time.sleep(CONFIG_CACHE_SECS + 0.5)  # past the config cache: the next request reloads it
        submitted = httpx.post(scores, json={"player_id": "dbdown", "score": 2}, headers=stack.auth())
        live = httpx.get(f"{stack.base_url}/api/v1/games/{SLUG}/leaderboards/main/all-time")
        archived = httpx.get(f"{stack.base_url}/api/v1/games/{SLUG}/leaderboards/main/periods")
        page = httpx.get(f"{stack.base_url}/games/{SLUG}/history/")
        health = httpx.get(f"{stack.base_url}/healthz")
    finally:
        shutil.rmtree(stack.db_path)
        moved.rename(stack.db_path)

    # Scores and live reads go to Redis on the configuration last read; what needs the database
    # (the archive's periods, the history page, the health check) answers 503.
    assert submitted.status_code == 200, submitted.text
    assert submitted.json()["periods"]["all-time"]["score"] == 3
    assert (live.status_code, [e["score"] for e in live.json()["entries"] if e["player_id"] == "dbdown"]) == (200, [3])
    assert (archived.status_code, archived.headers["retry-after"]) == (503, "5")
    assert page.status_code == 503 and "Back in a moment" in page.text
    assert health.status_code == 503
    assert httpx.get(f"{stack.base_url}/api/v1/games/{SLUG}/leaderboards/main/periods").status_code == 200
