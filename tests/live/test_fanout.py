"""Fan-out in a web process: one subscription per group, one frame per view, and a client
that stops reading holds up nobody (live/fanout.py, live/sockets/base.py)."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import socket
import struct
import time
from typing import Any

import pytest
import redis.asyncio
from channels.layers import get_channel_layer
from django.conf import settings

from core import clock
from games import periods, services
from live import events, selectors
from live.sockets import base
from tests.conftest import game_with_board
from tests.live.live_helpers import drain, make_config

pytestmark = pytest.mark.django_db(transaction=True)

WAIT_SECS = 10.0


def _group_channel(group: str) -> str:
    # channels_redis's pub/sub layer publishes a group under this name.
    layer: dict[str, Any] = settings.CHANNEL_LAYERS["default"]  # a channel layer's free-form configuration
    return f"{layer['CONFIG']['prefix']}__group__{group}"


async def _subscribers(group: str) -> int:
    """Subscribers of a group's channel on the channel layer's Redis (or Redises, when sharded)."""
    total = 0
    for url in settings.CHANNEL_LAYER_URLS:
        client = redis.asyncio.Redis.from_url(url)
        try:
            ((_, count),) = await client.pubsub_numsub(_group_channel(group))
            total += int(count)
        finally:
            await client.aclose()
    return total


async def subscribe(ws: Any, period: str, limit: int) -> dict[str, Any]:
    await ws.send_json_to({"action": "subscribe", "leaderboard": "main", "period": period, "limit": limit})
    return await ws.receive_json_from(timeout=2)


async def test_it_subscribes_a_process_once_per_group_however_many_sockets_watch(make_game, sockets):
    game = await make_config(make_game, periods_kept=["all-time"])
    await services.score_submit(game=game, board=game.boards[0], player_id="a", score=5)
    group = events.board_group("tetris.main", "all-time")
    watchers = [await sockets.open() for _ in range(3)]
    for ws, limit in zip(watchers, (1, 10, 10), strict=True):
        await subscribe(ws, "all-time", limit)

    assert await _subscribers(group) == 1

    await services.score_submit(game=game, board=game.boards[0], player_id="b", score=9)
    layer = get_channel_layer()
    payload = {
        **events.standings(game.boards[0], *await _page(game)),
        "version": 7,
    }
    await layer.group_send(group, {"type": "live.event", "group": group, "payload": payload})
    seen = [await drain(ws) for ws in watchers]
    # Each socket its own rows; sockets with the same limit the same frame.
    assert [[len(m["entries"]) for m in got] for got in seen] == [[1], [2], [2]]
    assert seen[1] == seen[2]

    for ws in watchers:
        await ws.send_json_to({"action": "unsubscribe", "leaderboard": "main", "period": "all-time"})
    await asyncio.sleep(0.2)
    assert await _subscribers(group) == 0


async def _page(game: Any) -> tuple[Any, int]:
    board = game.boards[0]
    period = periods.window_current(board, "all-time", clock.now())
    return await selectors.board_snapshot(board=board, period=period, limit=100, next_version=False)


# --------------------------------------------------------------------------- a client that stops reading


def _raw_websocket(base_url: str, path: str) -> socket.socket:
    """A websocket with a tiny receive buffer and no compression, handshake done by hand."""
    port = int(base_url.rsplit(":", 1)[1])
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(WAIT_SECS)
    sock.connect(("127.0.0.1", port))
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(
        (
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nOrigin: http://127.0.0.1\r\n\r\n"
        ).encode()
    )
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(1)
    assert head.startswith(b"HTTP/1.1 101"), head
    return sock


def _send_text(sock: socket.socket, text: str) -> None:
    data, mask = text.encode(), os.urandom(4)
    assert len(data) < 126
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
    sock.sendall(bytes([0x81, 0x80 | len(data)]) + mask + masked)


def _read_exact(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("closed without a close frame")
        data += chunk
    return data


def _read_until_close(sock: socket.socket) -> tuple[int, int]:
    """Read frames until the close frame: (text frames read, close code)."""
    texts = 0
    while True:
        first, second = _read_exact(sock, 2)
        size = second & 0x7F
        if size == 126:
            (size,) = struct.unpack("!H", _read_exact(sock, 2))
        elif size == 127:
            (size,) = struct.unpack("!Q", _read_exact(sock, 8))
        body = _read_exact(sock, size)
        if first & 0x0F == 0x8:
            return texts, struct.unpack("!H", body[:2])[0]
        texts += 1


def test_it_closes_a_client_that_stops_reading_and_keeps_feeding_the_others(asgi_live_server):
    game = game_with_board("tetris", periods_kept=["all-time"], max_submissions_per_minute=0)
    group = events.board_group(f"{game.slug}.main", "all-time")
    stalled = _raw_websocket(asgi_live_server, f"/ws/games/{game.slug}/")
    _send_text(stalled, json.dumps({"action": "subscribe", "leaderboard": "main", "period": "all-time", "limit": 100}))
    time.sleep(0.5)  # its snapshot is on its way; from now on it reads nothing
    # Rows large enough that the kernel's buffers fill after a few hundred frames.
    entries = [
        {
            "rank": i + 1,
            "player_id": f"p{i}-{os.urandom(8).hex()}",
            "display_name": os.urandom(24).hex(),
            "score": 1000 - i,
            "shown": str(1000 - i),
            "metadata": None,
            "online": False,
        }
        for i in range(100)
    ]
    frames = 3 * base.OUTBOX_MAX_FRAMES + 600
    base_payload = {
        "type": "standings",
        "leaderboard": "main",
        "period": "all-time",
        "period_id": "all-time",
        "resets_at": None,
        "total": 100,
    }

    async def feed_and_watch() -> dict[str, Any]:
        from websockets.asyncio.client import connect
        from websockets.typing import Origin

        url = asgi_live_server.replace("http", "ws") + f"/ws/games/{game.slug}/"
        async with connect(url, origin=Origin("http://127.0.0.1")) as reader:
            subscribe = {"action": "subscribe", "leaderboard": "main", "period": "all-time", "limit": 1}
            await reader.send(json.dumps(subscribe))
            await reader.recv()
            layer = get_channel_layer()
            for version in range(1, frames + 1):
                # Each version tops the board with a new row, so every socket has something new to show.
                rows = [{**entries[0], "player_id": f"top-{version}"}, *entries[1:]]
                payload = {**base_payload, "version": version, "entries": rows}
                await layer.group_send(group, {"type": "live.event", "group": group, "payload": payload})
            last: dict[str, Any] = {}
            while last.get("version") != frames:
                try:
                    last = json.loads(await asyncio.wait_for(reader.recv(), WAIT_SECS))
                except TimeoutError:
                    raise AssertionError(f"stuck at {last.get('version')}") from None
            return last

    last = asyncio.run(feed_and_watch())

    assert last["entries"][0]["player_id"] == f"top-{frames}"
    read, code = _read_until_close(stalled)
    assert code == base.CLOSE_TRY_AGAIN
    assert read < frames
    stalled.close()


async def test_it_keeps_feeding_sockets_after_a_malformed_group_message(make_game: Any, sockets: Any) -> None:
    game = await make_config(make_game, periods_kept=["all-time"])
    ws = await sockets.open()
    snapshot = await subscribe(ws, "all-time", 10)
    group = events.board_group("tetris.main", "all-time")
    layer = get_channel_layer()
    await layer.group_send(group, {"type": "live.event", "group": group})  # no payload
    await services.score_submit(game=game, board=game.boards[0], player_id="a", score=5)
    fresh = {**events.standings(game.boards[0], *await _page(game)), "version": snapshot["version"] + 1}
    await layer.group_send(group, {"type": "live.event", "group": group, "payload": fresh})

    assert [m["version"] for m in await drain(ws)] == [snapshot["version"] + 1]
