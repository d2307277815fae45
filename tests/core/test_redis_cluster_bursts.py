"""core/redis.py under a burst of first requests (issue 22's claims test once answered one of
100 claims 500 on a Redis Cluster): a new cluster client sends its first commands to their
keys' nodes, not all to one (which answered MOVED to the others' keys, and every fifth MOVED
closed all the client's connections under the other requests); and a command whose connection
another task closed under it fails as a ConnectionError (503), not as the RuntimeError uvloop
raises on a write to a closed transport (500). The cluster is one of the test's own on
loopback, so this runs under `make test` and `make test-cluster` alike."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
import uvloop
from django.conf import settings
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.connection import Connection
from redis.crc import key_slot
from redis.exceptions import ConnectionError as RedisConnectionError

from core.errors import is_unavailable
from core.redis import GuardedConnection, new_client
from leaderboard_site import localcluster

MASTERS = 3
# Commands a new client gets at once (a new worker's first requests: 25 of 100 claims each).
BURST = 30


@pytest.fixture
def cluster(settings: Any, tmp_path: Path) -> Iterator[localcluster.LocalCluster]:
    started = localcluster.start(tmp_path / "cluster", masters=MASTERS, replicas=0)
    settings.REDIS_CLUSTER = True
    try:
        yield started
    finally:
        started.stop()


def _key_per_master() -> list[str]:
    """A key in each master's share of the slots (localcluster splits them evenly, in order)."""
    found: dict[int, str] = {}
    for n in range(1000):
        key = f"test:{{burst{n}}}:k"
        slot = key_slot(key.encode())
        found.setdefault(next(i for i in range(MASTERS) if slot < localcluster.SLOTS * (i + 1) // MASTERS), key)
        if len(found) == MASTERS:
            return [found[i] for i in range(MASTERS)]
    raise AssertionError("no key found for every master")


def _counting(client: RedisCluster, name: str, calls: list[str]) -> None:
    method = getattr(client, name)

    async def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(name)
        return await method(*args, **kwargs)

    setattr(client, name, counted)


async def test_a_new_cluster_client_sends_its_first_commands_to_their_keys_nodes(
    cluster: localcluster.LocalCluster,
) -> None:
    for key in _key_per_master():
        client = new_client(cluster.url)
        assert isinstance(client, RedisCluster)
        try:
            assert await client.get(key) is None
            # No MOVED: the first command went to its key's master, whichever became the default node.
            assert client.reinitialize_counter == 0
        finally:
            await client.aclose()


async def test_a_new_cluster_client_takes_a_burst_without_closing_its_connections(
    cluster: localcluster.LocalCluster,
) -> None:
    keys = _key_per_master()
    client = new_client(cluster.url)
    assert isinstance(client, RedisCluster)
    closes: list[str] = []
    _counting(client, "aclose", closes)
    try:
        replies = await asyncio.gather(*(client.get(keys[i % len(keys)]) for i in range(BURST)), return_exceptions=True)
        assert replies == [None] * BURST
        assert closes == []
        assert client.reinitialize_counter == 0
        # Every node's connections are the guarded kind.
        assert {type(c) for node in client.get_nodes() for c in node._connections} == {GuardedConnection}
    finally:
        await client.aclose()


def _closed_under_a_command(connection_class: type[Connection]) -> BaseException | None:
    """What a command raises when another task closes its connection as it is sent, as the
    cluster client's aclose() does to connections in use, on uvloop (as uvicorn serves)."""
    url = urlparse(settings.REDIS_URL)

    async def race() -> BaseException | None:
        connection = connection_class(host=url.hostname or "127.0.0.1", port=url.port or 6379, socket_timeout=1.0)
        await connection.connect()
        try:
            # Another task's disconnect(): it closes the writer, then waits for the close.
            closing = asyncio.ensure_future(connection.disconnect())
            await asyncio.sleep(0)
            try:
                await connection.send_command("PING")
            except BaseException as error:  # the one under test, whatever it is
                return error
            finally:
                await closing
            return None
        finally:
            await connection.disconnect()

    loop = uvloop.new_event_loop()
    try:
        return loop.run_until_complete(race())
    finally:
        loop.close()


def test_a_command_whose_connection_another_task_closed_fails_as_an_outage() -> None:
    # redis-py's own connection passes on what the write met (uvloop's RuntimeError): a 500.
    # The product's cluster connections (and the standalone pool's, derived from them) fail
    # as if Redis had closed them.
    bare = _closed_under_a_command(Connection)
    assert bare is not None and not is_unavailable(bare), bare
    error = _closed_under_a_command(GuardedConnection)
    assert isinstance(error, RedisConnectionError)
    assert is_unavailable(error)
