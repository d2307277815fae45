"""core/redis.py under crowds: a busy pool is told apart from Redis being down, and the
coalescing client (the live sockets') shares pipelines without mixing up replies."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings
from django.test import AsyncClient
from prometheus_client import REGISTRY
from redis.asyncio.connection import Connection
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError

from core import redis as core_redis
from core.errors import is_unavailable, report_unavailable
from core.redis import COALESCED_PIPELINES_MAX, PoolExhaustedError, coalescing, get_redis
from live import scripts as live_scripts
from tests.conftest import forget_redis_clients

pytestmark = [
    pytest.mark.django_db(transaction=True),
    # A cluster client keeps a pool per node and refuses past its cap at once (MaxConnectionsError,
    # reported the same way), and coalescing is off there: these are the standalone client's.
    pytest.mark.skipif(settings.REDIS_CLUSTER, reason="the standalone Redis client's pool and coalescing"),
]


def counted(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


@pytest.fixture
def tiny_pool(settings: Any) -> Iterator[None]:
    """The product's clients with one pooled connection, given up on after 0.2 s."""
    settings.REDIS_POOL_SIZE, settings.REDIS_TIMEOUT_SECS = 1, 0.2
    forget_redis_clients()
    yield
    forget_redis_clients()


async def hold_only_connection() -> Connection:
    connection: Connection = await get_redis().connection_pool.get_connection()
    return connection


# --------------------------------------------------------------------------- a busy pool is not an outage


async def test_it_tells_a_busy_pool_from_redis_being_down(tiny_pool: None, caplog: pytest.LogCaptureFixture) -> None:
    held = await hold_only_connection()
    waits, exhausted = counted("leaderboard_redis_pool_waits_total"), counted("leaderboard_redis_pool_exhausted_total")
    down = counted("leaderboard_backend_errors_total", backend="redis")
    try:
        with pytest.raises(PoolExhaustedError) as raised:
            await get_redis().get("k")
    finally:
        await get_redis().connection_pool.release(held)

    # Still answered as an outage would be (503, 1013)...
    assert is_unavailable(raised.value)
    with caplog.at_level(logging.WARNING, logger="core.errors"):
        report_unavailable(raised.value, during="a test")
    # ...but counted and logged as the pool's saturation, not as Redis down.
    assert counted("leaderboard_redis_pool_waits_total") == waits + 1
    assert counted("leaderboard_redis_pool_exhausted_total") == exhausted + 1
    assert counted("leaderboard_backend_errors_total", backend="redis") == down
    assert "redis pool saturated during a test" in caplog.text and "REDIS_POOL_SIZE" in caplog.text
    # The connection came back: the next command is served.
    assert await get_redis().set("k", "v")


async def test_it_still_counts_redis_down_as_an_outage(redis_unreachable: str) -> None:
    exhausted = counted("leaderboard_redis_pool_exhausted_total")
    down = counted("leaderboard_backend_errors_total", backend="redis")

    with pytest.raises(RedisConnectionError) as raised:
        await get_redis().get("k")
    report_unavailable(raised.value, during="a test")

    assert not isinstance(raised.value, PoolExhaustedError)
    assert counted("leaderboard_backend_errors_total", backend="redis") == down + 1
    assert counted("leaderboard_redis_pool_exhausted_total") == exhausted


async def test_it_answers_an_api_request_that_met_a_busy_pool_with_503(tiny_pool: None, make_game: Any) -> None:
    await sync_to_async(make_game)("tetris")
    held = await hold_only_connection()
    down = counted("leaderboard_backend_errors_total", backend="redis")
    exhausted = counted("leaderboard_redis_pool_exhausted_total")
    try:
        response = await AsyncClient().get("/api/v1/games/tetris/leaderboards/main/daily")
    finally:
        await get_redis().connection_pool.release(held)

    assert response.status_code == 503
    assert response.json()["error"]["code"] == "unavailable" and response["Retry-After"]
    assert counted("leaderboard_redis_pool_exhausted_total") >= exhausted + 1
    assert counted("leaderboard_backend_errors_total", backend="redis") == down


# --------------------------------------------------------------------------- coalescing


def connections_made() -> int:
    pool: Any = get_redis().connection_pool
    return len(pool._available_connections) + len(pool._in_use_connections)  # redis-py's own


async def test_it_sends_a_crowd_of_commands_down_a_few_connections() -> None:
    before = connections_made()
    with coalescing():
        replies = await asyncio.gather(*(get_redis().incrby(f"n{i % 10}", i) for i in range(2000)))

    assert connections_made() - before <= COALESCED_PIPELINES_MAX
    assert len(replies) == 2000
    totals = [int(str(v)) for v in await get_redis().mget([f"n{d}" for d in range(10)])]
    assert totals == [sum(range(d, 2000, 10)) for d in range(10)]


async def test_it_gives_each_caller_its_own_reply_or_error() -> None:
    await get_redis().hset("a-hash", "f", "v")
    with coalescing():
        client = get_redis()
        assert isinstance(client, core_redis.CoalescingRedis)
        replies = await asyncio.gather(
            client.set("s", "1"), client.incr("a-hash"), client.zadd("z", {"m": 2}), client.get("s"),
            return_exceptions=True,
        )  # fmt: skip

    assert replies[0] is True and replies[2] == 1 and replies[3] == "1"
    assert isinstance(replies[1], ResponseError)  # only the command that failed


async def test_it_runs_a_script_redis_has_forgotten() -> None:
    await get_redis().script_flush()
    with coalescing():
        admitted = await asyncio.gather(
            *(
                live_scripts.socket_admit(
                    get_redis(), address="a", socket_id=f"s{i}", op="admit", now_ms=1000, lifetime_ms=60_000, cap=100
                )
                for i in range(20)
            )
        )

    assert admitted == [True] * 20


async def test_it_fails_each_command_of_a_pipeline_redis_never_answered(redis_unreachable: str) -> None:
    with coalescing():
        replies = await asyncio.gather(*(get_redis().get(f"k{i}") for i in range(5)), return_exceptions=True)

    assert all(isinstance(r, RedisConnectionError) for r in replies), replies


async def test_it_leaves_other_callers_on_the_plain_client() -> None:
    with coalescing():
        inside = get_redis()
    assert isinstance(inside, core_redis.CoalescingRedis)
    assert not isinstance(get_redis(), core_redis.CoalescingRedis)
    assert inside.connection_pool is get_redis().connection_pool
