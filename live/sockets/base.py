"""What every live websocket shares (protocol: docs/websocket.md).

- Admission: a client address (IPv4, or an IPv6 /64) holds at most
  WS_SOCKETS_PER_ADDRESS open sockets across every web process and node; the
  next one is closed with 4429. A socket keeps its place by beating.
- A message budget per socket (a token bucket): over it, messages are refused
  with an ``error`` and dropped, and a client that keeps on is closed with 1008.
- Frames: JSON objects with an ``action``, at most MAX_FRAME_BYTES (1009 beyond).
- Redis or the database unreachable: at connect the socket closes with 1013 (try
  again later); later, an action answers an ``unavailable`` error.
- Group membership is remembered, so a closing socket leaves every group it joined.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

from channels.consumer import get_handler_name
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from core import clock, keys
from core.addresses import client_address
from core.errors import UNAVAILABLE_ERRORS
from core.redis import get_redis

from .. import events, scripts

logger = logging.getLogger("live.sockets")

# A client frame larger than this closes the socket with 1009 (message too big).
MAX_FRAME_BYTES = 4096
# The message budget: a burst of this many, refilled at this rate. A page sends a
# handful when it opens and one every 20 s after, so only a runaway or hostile
# client meets it (1,000 subscribes once fetched 6 MB of snapshots in 5 s).
MESSAGE_BURST = 30
MESSAGES_PER_SEC = 5.0
# A client that sends this many messages in a row past its budget is closed (1008).
REFUSED_MESSAGES_MAX = 100
# A socket renews its place (and an open page its presence) this often at most...
KEEPALIVE_SECS = 20.0
# ...and its place lapses this long after its last renewal, should its process die.
SOCKET_PLACE_MS = 60_000

# Close codes (docs/websocket.md).
CLOSE_POLICY = 1008  # kept sending past the message budget
CLOSE_TOO_BIG = 1009
CLOSE_RECONNECT = 1012  # asked to reconnect (manage.py live_reconnect)
CLOSE_TRY_AGAIN = 1013  # Redis or the database unreachable
CLOSE_NO_SUCH_GAME = 4404
CLOSE_TOO_MANY = 4429  # this address has WS_SOCKETS_PER_ADDRESS open already
LIVE_EVENT_TYPES = frozenset({"live.event", "live.disconnect"})

Handler = Callable[[dict[str, Any]], Awaitable[None]]


class TokenBucket:
    def __init__(self, burst: int, per_sec: float) -> None:
        self.burst, self.per_sec = burst, per_sec
        self.tokens = float(burst)
        self.at = clock.monotonic()

    def take(self) -> bool:
        now = clock.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.per_sec)
        self.at = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


class LiveSocket(AsyncWebsocketConsumer):
    """Subclasses set ``actions`` (name -> method) and implement :meth:`start`."""

    actions: ClassVar[dict[str, str]] = {}

    async def connect(self) -> None:
        self.joined: set[str] = set()
        self.placed = False
        # Set once start() succeeded: a socket closed while connecting ignores what the
        # client sent meanwhile (the closing frame is on its way).
        self.started = False
        self.bucket = TokenBucket(MESSAGE_BURST, MESSAGES_PER_SEC)
        self.refused = 0
        self.tasks: list[asyncio.Task[None]] = []
        # Accepted first: a close before accept reaches a browser as a refused
        # handshake (1006), and it would retry forever.
        await self.accept()
        try:
            if not await self._place("admit"):
                await self.close(code=CLOSE_TOO_MANY)
                return
            self.placed = True
            if not await self.start():
                return
            self.started = True
        except UNAVAILABLE_ERRORS as error:
            logger.warning("live socket: %s at connect (%s); closing with 1013", type(error).__name__, error)
            await self.close(code=CLOSE_TRY_AGAIN)
            return
        self.repeat(self.keepalive_secs(), self._keepalive)

    async def start(self) -> bool:
        """Set the socket up after admission; False if it closed itself."""
        raise NotImplementedError

    def keepalive_secs(self) -> float:
        return KEEPALIVE_SECS

    async def keepalive(self) -> None:
        """What the socket renews every keepalive_secs() besides its place (presence)."""

    async def finish(self) -> None:
        """What the socket undoes when it closes, besides its groups and place."""

    def repeat(self, every_secs: float, work: Callable[[], Awaitable[None]]) -> None:
        """Run ``work`` every ``every_secs`` while the socket is open (an outage skips a round)."""

        async def loop() -> None:
            while True:
                await asyncio.sleep(every_secs)
                try:
                    await work()
                except UNAVAILABLE_ERRORS:
                    logger.warning("live socket: Redis unavailable for %s; retrying next time", work.__name__)

        self.tasks.append(asyncio.create_task(loop()))

    async def _keepalive(self) -> None:
        await self._place("admit")
        await self.keepalive()

    async def _place(self, op: str) -> bool:
        address = client_address((self.scope.get("client") or ("", 0))[0])
        admitted = await scripts.SOCKET_ADMIT(
            get_redis(),
            [keys.address_sockets(address)],
            [op, self.channel_name, clock.now_ms(), SOCKET_PLACE_MS, settings.WS_SOCKETS_PER_ADDRESS],
        )
        return bool(admitted)

    async def dispatch(self, message: dict[str, Any]) -> None:
        # Channels closes stale database connections before every handler, a hop to
        # the shared sync thread; the broadcaster's events touch no database, and at
        # 1,000 watchers that hop per message per socket starved the whole process.
        if message["type"] in LIVE_EVENT_TYPES:
            await getattr(self, get_handler_name(message))(message)
        else:
            await super().dispatch(message)

    async def disconnect(self, code: int) -> None:
        for task in getattr(self, "tasks", []):
            task.cancel()
        with contextlib.suppress(*UNAVAILABLE_ERRORS):
            await self.finish()
            if getattr(self, "placed", False):
                await self._place("release")
        for group in list(getattr(self, "joined", ())):
            await self.leave(group)

    async def join(self, group: str) -> None:
        if group not in self.joined:
            await self.channel_layer.group_add(group, self.channel_name)
            self.joined.add(group)

    async def leave(self, group: str) -> None:
        if group in self.joined:
            self.joined.discard(group)
            await self.channel_layer.group_discard(group, self.channel_name)

    async def send_json(self, payload: events.Payload) -> None:
        await self.send(text_data=json.dumps(payload))

    async def error(self, code: str, message: str) -> None:
        await self.send_json(events.error(code, message))

    # ----------------------------------------------------------------- client -> server

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if not self.started:
            return
        size = len(text_data.encode()) if text_data is not None else len(bytes_data or b"")
        if size > MAX_FRAME_BYTES:
            await self.close(code=CLOSE_TOO_BIG)
            return
        if not self.bucket.take():
            await self._over_budget()
            return
        self.refused = 0
        message = await self._parse(text_data)
        if message is None:
            return
        action = message.get("action")
        name = self.actions.get(action) if isinstance(action, str) else None
        if name is None:
            await self.error("unknown_action", f"action must be one of: {', '.join(self.actions)}.")
            return
        handler: Handler = getattr(self, name)
        try:
            await handler(message)
        except UNAVAILABLE_ERRORS as error:
            logger.warning("live socket: %s in %s (%s)", type(error).__name__, name, error)
            await self.error("unavailable", "The live service is briefly unavailable; try again.")

    async def _parse(self, text_data: str | None) -> dict[str, Any] | None:
        if text_data is None:
            await self.error("malformed", "Send JSON text frames.")
            return None
        try:
            message = json.loads(text_data)
        except (ValueError, RecursionError):  # RecursionError: deeply nested arrays
            await self.error("malformed", "The message is not valid JSON.")
            return None
        if not isinstance(message, dict):
            await self.error("malformed", "The message must be a JSON object.")
            return None
        return message

    async def _over_budget(self) -> None:
        self.refused += 1
        if self.refused >= REFUSED_MESSAGES_MAX:
            await self.close(code=CLOSE_POLICY)
        elif self.refused == 1 or self.refused % 10 == 0:
            await self.error(
                "rate_limited",
                f"At most {MESSAGES_PER_SEC:g} messages a second (bursts of {MESSAGE_BURST}); this one was dropped.",
            )

    async def live_disconnect(self, event: dict[str, Any]) -> None:
        await self.close(code=CLOSE_RECONNECT)


class RefuseSocket(AsyncWebsocketConsumer):
    """Any other websocket path: refuse the handshake (instead of a routing error)."""

    async def connect(self) -> None:
        await self.close()


class OutageGuard:
    """Around the websocket application: Redis unreachable before a socket's consumer runs
    (channels_redis subscribes its channel first) closes the socket with 1013, as the
    consumer itself does, instead of failing the handshake with a 500."""

    def __init__(self, application: Any) -> None:
        self.application = application

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        state = {"connect_taken": False, "accepted": False, "closed": False}

        async def taking_receive() -> dict[str, Any]:
            message: dict[str, Any] = await receive()
            if message["type"] == "websocket.connect":
                state["connect_taken"] = True
            return message

        async def tracking_send(message: dict[str, Any]) -> None:
            state["accepted"] |= message["type"] == "websocket.accept"
            state["closed"] |= message["type"] == "websocket.close"
            await send(message)

        try:
            await self.application(scope, taking_receive, tracking_send)
        except UNAVAILABLE_ERRORS as error:
            if scope["type"] != "websocket" or state["closed"]:
                raise
            logger.warning(
                "live socket: %s before its consumer ran (%s); closing with 1013", type(error).__name__, error
            )
            if not state["connect_taken"]:
                await receive()
            if not state["accepted"]:
                await send({"type": "websocket.accept"})
            await send({"type": "websocket.close", "code": CLOSE_TRY_AGAIN})
