"""Redis clients: one asyncio client per event loop, and a bridge for sync code.

The request path is async (uvicorn runs one event loop per worker process).
Sync callers (admin, management commands, Celery tasks) run the same async
services through :func:`run_sync`, which owns one long-lived loop in a daemon
thread, so they reuse one connection pool instead of opening one per call.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import redis.asyncio as aioredis
from django.conf import settings

T = TypeVar("T")

# A connection waits this long for Redis before the request fails (503), rather than hanging.
REDIS_SOCKET_TIMEOUT_SECS = 5.0
REDIS_MAX_CONNECTIONS = 200

_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, aioredis.Redis] = weakref.WeakKeyDictionary()
_bridge_loop: asyncio.AbstractEventLoop | None = None
_bridge_lock = threading.Lock()


def new_client(url: str | None = None) -> aioredis.Redis:
    return aioredis.Redis.from_url(
        url or settings.REDIS_URL,
        decode_responses=True,
        socket_timeout=REDIS_SOCKET_TIMEOUT_SECS,
        socket_connect_timeout=REDIS_SOCKET_TIMEOUT_SECS,
        max_connections=REDIS_MAX_CONNECTIONS,
        health_check_interval=30,
    )


def get_redis() -> aioredis.Redis:
    """The client of the running event loop (created on first use)."""
    loop = asyncio.get_running_loop()
    client = _clients.get(loop)
    if client is None:
        client = new_client()
        _clients[loop] = client
    return client


async def close_redis() -> None:
    """Close the running loop's client (tests and shutdown)."""
    client = _clients.pop(asyncio.get_running_loop(), None)
    if client is not None:
        await client.aclose()


def _bridge() -> asyncio.AbstractEventLoop:
    global _bridge_loop
    with _bridge_lock:
        if _bridge_loop is None or _bridge_loop.is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="redis-bridge", daemon=True).start()
            _bridge_loop = loop
        return _bridge_loop


def run_sync(operation: Callable[..., Awaitable[T]], *args: Any) -> T:
    """Run an async Redis operation from sync code and return its result.

    ``operation(*args)`` is called inside the bridge loop, so ``get_redis()``
    in it returns that loop's client: ``run_sync(lambda: get_redis().get(key))``.
    """

    async def invoke() -> T:
        return await operation(*args)

    return asyncio.run_coroutine_threadsafe(invoke(), _bridge()).result()
