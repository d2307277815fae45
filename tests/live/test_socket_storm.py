"""A connect storm against the real server (uvicorn, as `make run` runs the websocket
worker): a burst of sockets far beyond the Redis pool is admitted by waiting its turn, and
past the admission queue's bound sockets are refused with 1013 and counted as load
shedding, never as Redis being down. bench/storm.py measures the same at 3,000 sockets."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path

import httpx
import pytest
from django.conf import settings
from prometheus_client.parser import text_string_to_metric_families
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from tests.real_server import Node, node_env, setup_node, start_web, stop_all

GAME = "storm"
BURST = 300
# A socket that has neither its snapshot nor a close by then counts as lost.
GIVE_UP_SECS = 60.0
COUNTERS = {
    "shed": ("leaderboard_socket_admissions_shed_total", {}),
    "exhausted": ("leaderboard_redis_pool_exhausted_total", {}),
    "redis down": ("leaderboard_backend_errors_total", {"backend": "redis"}),
}


def counters(url: str) -> dict[str, float]:
    text = httpx.get(f"{url}/metrics", timeout=30).text
    samples = {
        (s.name, frozenset(s.labels.items())): s.value for f in text_string_to_metric_families(text) for s in f.samples
    }
    return {key: samples.get((name, frozenset(labels.items())), 0.0) for key, (name, labels) in COUNTERS.items()}


async def one_socket(url: str) -> str:
    """'admitted' once the socket's subscribe is answered with its snapshot, else 'closed <code>'."""
    ws_url = url.replace("http://", "ws://") + f"/ws/games/{GAME}/"
    try:
        async with asyncio.timeout(GIVE_UP_SECS):
            async with connect(ws_url, origin=url, open_timeout=None, ping_interval=None) as ws:  # type: ignore[arg-type]
                await ws.send(json.dumps({"action": "subscribe", "period": "daily", "limit": 3}))
                first = json.loads(await ws.recv())
                return "admitted" if first["type"] == "standings" else f"error {first.get('code')}"
    except ConnectionClosed as closed:
        return f"closed {closed.rcvd.code if closed.rcvd else 'without a frame'}"


async def storm(url: str) -> Counter[str]:
    return Counter(await asyncio.gather(*(one_socket(url) for _ in range(BURST))))


def server(node: Node, log: Path, **settings: str) -> str:
    """A websocket worker of the node with these settings (its log in ``log``)."""
    worker = Node({**node.env, **settings}, node.raw_key, node.game)
    try:
        return start_web(worker, log=log)
    finally:
        node.processes += worker.processes


@pytest.mark.wall_clock
# On a Redis Cluster sockets' commands are not coalesced and a node's pool refuses past its cap at
# once: a pool of 2 would refuse such a burst there (as pool saturation, never as an outage).
@pytest.mark.skipif(settings.REDIS_CLUSTER, reason="coalescing and the waiting pool are the standalone client's")
async def test_it_admits_a_burst_beyond_the_pool_by_waiting_and_sheds_past_the_queue(tmp_path: Path) -> None:
    # Two pooled connections, given up on after half a second: before the admission queue,
    # most of such a burst was closed with 1013 as "redis unavailable".
    env = node_env(tmp_path, WS_SOCKETS_PER_ADDRESS="100000", REDIS_POOL_SIZE="2", REDIS_TIMEOUT_SECS="0.5")
    node = setup_node(env, GAME)
    try:
        waiting = server(node, tmp_path / "waiting.log", WS_ADMITTING_SOCKETS_MAX="8")
        shedding = server(
            node, tmp_path / "shedding.log", WS_ADMITTING_SOCKETS_MAX="1", WS_ADMISSION_QUEUE_SOCKETS="10"
        )
        before = {url: counters(url) for url in (waiting, shedding)}

        waited = await storm(waiting)
        shed = await storm(shedding)

        after = {url: counters(url) for url in (waiting, shedding)}
    finally:
        stop_all(node)

    assert waited == {"admitted": BURST}
    assert after[waiting] == before[waiting]  # nothing shed, no pool ran dry, no "Redis down"

    refused = shed["closed 1013"]
    assert refused > 0 and shed["admitted"] + refused == BURST, shed
    moved = {key: after[shedding][key] - before[shedding][key] for key in COUNTERS}
    assert moved == {"shed": refused, "exhausted": 0, "redis down": 0}
    log = (tmp_path / "shedding.log").read_text()
    assert "load shedding" in log and "unavailable" not in log
