"""Websocket test helpers shared by the consumer and broadcaster tests."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from asgiref.sync import sync_to_async
from channels.testing.websocket import WebsocketCommunicator

from core.config import GameConfig
from leaderboard_site.asgi import application
from tests.live.event_schema import check_event

ALLOWED_ORIGIN = b"http://127.0.0.1"
# How long a socket must stay silent to count as "nothing more is coming".
QUIET_SECS = 0.3


class CheckedCommunicator(WebsocketCommunicator):
    """A test socket that checks every message it receives against live/events.py."""

    async def receive_json_from(self, timeout: float = 1) -> Any:
        message = await super().receive_json_from(timeout)
        check_event(message)
        return message


class Sockets:
    """Opens websockets to the ASGI app and closes every one of them after the test."""

    def __init__(self) -> None:
        self.opened: list[WebsocketCommunicator] = []

    def communicator(self, slug: str = "tetris", origin: bytes | None = ALLOWED_ORIGIN) -> WebsocketCommunicator:
        return self.at(f"/ws/games/{slug}/", origin)

    def at(self, path: str, origin: bytes | None = ALLOWED_ORIGIN) -> WebsocketCommunicator:
        headers = [] if origin is None else [(b"origin", origin)]
        ws = CheckedCommunicator(application, path, headers=headers)
        self.opened.append(ws)
        return ws

    async def open(self, slug: str = "tetris") -> WebsocketCommunicator:
        ws = self.communicator(slug)
        connected, _ = await ws.connect()
        assert connected
        return ws

    async def close_all(self) -> None:
        for ws in self.opened:
            # A socket the server closed or refused may have finished already (or been
            # cancelled by a receive that timed out: CancelledError is no Exception).
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await ws.disconnect()


async def make_config(make_game: Any, slug: str = "tetris", **kwargs: Any) -> GameConfig:
    kwargs.setdefault("max_submissions_per_minute", 0)
    game = await sync_to_async(make_game)(slug, **kwargs)
    return GameConfig.from_model(game, "0")


async def drain(ws: WebsocketCommunicator) -> list[dict[str, Any]]:
    """Every message that arrives until the socket stays quiet (a receive timeout would kill the app)."""
    messages = []
    while not await ws.receive_nothing(timeout=QUIET_SECS):
        messages.append(await ws.receive_json_from())
    return messages
