"""core/redis.py: its whole-sorted-set read gives the same (member, score) pairs as redis-py's
own ``zrange(withscores=True)``, from a RESP3 connection (the product's) and a RESP2 one; the
client of a loop closed without close_redis is let go."""

from __future__ import annotations

import asyncio
import gc
import os
from typing import cast

import pytest
import redis.asyncio as aioredis
from django.conf import settings

from core.redis import get_redis, scored_pairs, zrange_all_scored

KEY = "test:scored-pairs"
# Loops opened and closed one after another, each with its own client.
LOOPS = 40
MEMBERS = {"ada": -1_234_567_890_123.0, "bob": 0.0, "cy": 7.0, "dee": 2.0**52}


@pytest.mark.skipif(
    settings.REDIS_CLUSTER, reason="a plain client of one node; on a cluster the settlement's tests read through it"
)
@pytest.mark.parametrize("protocol", [3, 2])
def test_it_reads_a_sorted_set_as_redis_pys_own_zrange_does(protocol: int) -> None:
    async def read() -> tuple[list[tuple[str, float]], list[tuple[str, float]], list[tuple[str, float]]]:
        client = aioredis.Redis.from_url(settings.REDIS_URL, decode_responses=True, protocol=protocol)
        try:
            await client.delete(KEY)
            await client.zadd(KEY, MEMBERS)
            pipe = client.pipeline(transaction=False)
            zrange_all_scored(pipe, KEY)
            zrange_all_scored(pipe, KEY + ":none")
            full, empty = await pipe.execute()
            own = cast("list[tuple[str, float]]", await client.zrange(KEY, 0, -1, withscores=True))
            await client.delete(KEY)
            return scored_pairs(full), scored_pairs(empty), [(m, float(s)) for m, s in own]
        finally:
            await client.aclose()

    pairs, none, own = asyncio.run(read())

    assert pairs == own == sorted(MEMBERS.items(), key=lambda item: item[1])
    assert none == []


def test_it_lets_go_of_the_clients_of_loops_closed_without_close_redis() -> None:
    # asgiref runs a sync caller's async work (a test client's request) in a loop of its own,
    # closed without close_redis: each left a socket open until the process hit its fd limit.
    def open_fds() -> int:
        gc.collect()
        return len(os.listdir("/proc/self/fd"))

    async def ping() -> None:
        await get_redis().ping()

    asyncio.run(ping())
    before = open_fds()
    for _ in range(LOOPS):
        asyncio.run(ping())
    assert open_fds() - before < LOOPS // 4
