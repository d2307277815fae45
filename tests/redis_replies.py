"""Typed reads of Redis for tests that look at keys directly.

redis-py annotates a command's reply as the union of every shape it can take (bytes or str, with or
without scores, RESP2 or RESP3), whatever the call asked for. The suite's client decodes replies
(``decode_responses=True``), so these state, in one place, the shape each read returns; the product
code casts the same way where it reads such replies (archive/services/close_jobs.py).
"""

from __future__ import annotations

from typing import cast

from core.redis import get_redis


async def members(key: str) -> list[str]:
    """ZRANGE key 0 -1: a sorted set's members, lowest score first."""
    return cast("list[str]", await get_redis().zrange(key, 0, -1))


async def scored(key: str) -> list[tuple[str, float]]:
    """ZRANGE key 0 -1 WITHSCORES: (member, score) pairs, lowest score first."""
    return cast("list[tuple[str, float]]", await get_redis().zrange(key, 0, -1, withscores=True))


async def entries(key: str) -> list[tuple[str, dict[str, str]]]:
    """XRANGE key - +: a stream's (entry id, fields), oldest first."""
    return cast("list[tuple[str, dict[str, str]]]", await get_redis().xrange(key))


async def matching(pattern: str) -> list[str]:
    """KEYS pattern (a test's few keys only: KEYS walks the whole keyspace)."""
    return cast("list[str]", await get_redis().keys(pattern))
