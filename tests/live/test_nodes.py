"""Two web nodes and two broadcasters against one Redis: real processes, real sockets.

Each node is its own uvicorn process on its own port (as two machines behind a load
balancer would be); each broadcaster its own `manage.py broadcast`. They share the
Redis of the suite and a SQLite file of this test's own (the nodes' config).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.typing import Origin

from presence.services import ANNOUNCER_LEASE_MS
from tests.real_server import REPO_DIR, node_env, setup_node, start_web, stop_all

GAME = "nodes"
TICK_MS = 200
# How long a test waits for what must arrive. It asserts that it arrives, not how fast: the
# latency is measured by bench/fanout.py (docs/benchmarks.md), never by a timed test, which a
# loaded CI machine fails at random.
WAIT_SECS = 10.0 + ANNOUNCER_LEASE_MS / 1000


@dataclass
class Nodes:
    urls: list[str]
    broadcasters: list[subprocess.Popen[bytes]]
    raw_key: str


@pytest.fixture
def nodes(tmp_path: Path) -> Iterator[Nodes]:
    node = setup_node(node_env(tmp_path, BROADCAST_TICK_MS=str(TICK_MS)), GAME)
    try:
        urls = [start_web(node) for _ in range(2)]
        broadcasters = [
            subprocess.Popen(
                [sys.executable, "manage.py", "broadcast"], env=node.env, cwd=REPO_DIR, stderr=subprocess.DEVNULL
            )
            for _ in range(2)
        ]
        node.processes += broadcasters
        yield Nodes(urls, broadcasters, node.raw_key)
    finally:
        stop_all(node)


async def _socket(url: str) -> ClientConnection:
    ws_url = url.replace("http://", "ws://") + f"/ws/games/{GAME}/"
    return await connect(ws_url, origin=Origin(url))


class Watch:
    """One socket's messages, as they arrive, by type."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.seen: list[tuple[float, dict[str, Any]]] = []

    async def send(self, message: dict[str, Any]) -> None:
        await self.ws.send(json.dumps(message))

    async def until(self, predicate: Any, timeout: float = WAIT_SECS) -> tuple[float, dict[str, Any]]:
        """The first message (with its arrival time) that ``predicate`` accepts, reading on as needed."""
        for at, message in self.seen:
            if predicate(message):
                return at, message
        deadline = time.monotonic() + timeout
        while True:
            message = json.loads(await asyncio.wait_for(self.ws.recv(), max(0.01, deadline - time.monotonic())))
            self.seen.append((time.monotonic(), message))
            if predicate(message):
                return self.seen[-1]

    def standings_versions(self) -> list[int]:
        return [m["version"] for _, m in self.seen if m["type"] == "standings"]


def _lists(player_id: str) -> Any:
    return lambda m: m["type"] == "standings" and any(e["player_id"] == player_id for e in m["entries"])


def _watching(count: int) -> Any:
    return lambda m: m["type"] == "presence" and m["watching"] == count


async def _submit(url: str, raw_key: str, player_id: str, score: int) -> float:
    async with httpx.AsyncClient() as client:
        response = await client.post(
            f"{url}/api/v1/games/{GAME}/leaderboards/main/scores",
            json={"player_id": player_id, "score": score},
            headers={"Authorization": f"Bearer {raw_key}"},
        )
    assert response.status_code == 200, response.text
    return time.monotonic()


async def test_it_feeds_a_socket_on_one_node_from_a_submission_through_the_other(nodes):
    node_a, node_b = nodes.urls
    on_a, on_b = Watch(await _socket(node_a)), Watch(await _socket(node_b))
    try:
        for watch in (on_a, on_b):
            await watch.send({"action": "subscribe", "leaderboard": "main", "period": "daily", "limit": 10})
            await watch.send({"action": "presence"})
            await watch.until(lambda m: m["type"] == "standings")

        await _submit(node_a, nodes.raw_key, "ann", 100)
        await on_b.until(_lists("ann"))
        # Two open pages, one on each node: both nodes count both.
        for watch in (on_a, on_b):
            await watch.until(_watching(2))

        # One broadcaster dies: the other does all the work, presence included once its lease lapses.
        nodes.broadcasters[0].kill()
        await _submit(node_b, nodes.raw_key, "bob", 200)
        await on_a.until(_lists("bob"))
        third = await _socket(node_a)
        await on_b.until(_watching(3))
        await third.close()
        await on_b.until(_watching(2))

        # No socket got a standings message twice: two broadcasters claim each change once.
        for watch in (on_a, on_b):
            versions = watch.standings_versions()
            assert versions == sorted(set(versions)), versions
    finally:
        await on_a.ws.close()
        await on_b.ws.close()
