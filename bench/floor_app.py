"""The floor of live fan-out: a bare ASGI app that writes one pre-encoded frame to every socket.

    uvicorn bench.floor_app:app   (bench/fanout.py starts it beside the product, same uvicorn flags)

It speaks just enough of the product's socket protocol for the benchmark's clients: a
``subscribe`` gets a standings snapshot, then every FLOOR_TICK_MS (the product's tick)
every socket gets the same standings frame, encoded once for all, shaped and sized like
the product's (limit 10, a new top row each tick, so that permessage-deflate has as
much to do). No Redis, no Django, no per-socket state: what is left is uvicorn's
websocket write per socket and its compression, the least any Python server on this
uvicorn spends per socket-message.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

TICK_MS = int(os.environ.get("FLOOR_TICK_MS", "200"))
ROWS = 10

_sockets: dict[int, Any] = {}
_ticker: asyncio.Task[None] | None = None


def _frame(version: int) -> str:
    top = 1_000_000 + version
    entries = [
        {
            "rank": i + 1,
            "player_id": f"floor-{version - i}",
            "display_name": f"floor-{version - i}",
            "score": top - i,
            "shown": f"{top - i:,}",
            "metadata": None,
            "online": False,
        }
        for i in range(ROWS)
    ]
    return json.dumps(
        {
            "type": "standings",
            "leaderboard": "main",
            "period": "daily",
            "period_id": "2026-01-01",
            "resets_at": "2026-01-02T00:00:00Z",
            "version": version,
            "total": 100_000 + version,
            "entries": entries,
        }
    )


async def _tick() -> None:
    version = 1
    loop = asyncio.get_running_loop()
    due = loop.time()
    while True:
        # On a fixed schedule, as the broadcaster ticks: the writes take part of each tick.
        due += TICK_MS / 1000
        await asyncio.sleep(max(0.0, due - loop.time()))
        version += 1
        text = _frame(version)
        for key, send in list(_sockets.items()):
            try:
                await send({"type": "websocket.send", "text": text})
            except Exception:  # the client left: forget it
                _sockets.pop(key, None)


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    global _ticker
    if scope["type"] == "http":
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"ok"})
        return
    if scope["type"] != "websocket":
        return
    await receive()  # websocket.connect
    await send({"type": "websocket.accept"})
    if _ticker is None:
        _ticker = asyncio.create_task(_tick())
    key = id(send)
    try:
        while True:
            message = await receive()
            if message["type"] == "websocket.disconnect":
                return
            if key not in _sockets:
                await send({"type": "websocket.send", "text": _frame(1)})
                _sockets[key] = send
    finally:
        _sockets.pop(key, None)
