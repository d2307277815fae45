"""What every live websocket shares (protocol: docs/websocket.md).

- Admission: a client address (IPv4, or an IPv6 /64) holds at most
  WS_SOCKETS_PER_ADDRESS open sockets across every web process and node; the
  next one is closed with 4429. A socket keeps its place by beating.
- A message budget per socket (a token bucket): over it, messages are refused
  with an ``error`` and dropped, and a client that keeps on is closed with 1008.
- Frames: JSON objects with an ``action``, at most MAX_FRAME_BYTES (1009 beyond), each
  validated against its action's model and dispatched from the socket's ``actions``
  table (messages.py).
- Openings in turns (admission.py): at most WS_ADMITTING_SOCKETS_MAX sockets of a
  process open at once, the others wait in line; a socket that arrives while
  WS_ADMISSION_QUEUE_SOCKETS wait already is closed with 1013 (load shedding).
- Every Redis command a socket sends is coalesced with those of the process's other
  sockets into shared pipelines (core.redis.coalescing): a storm costs a few round trips
  and a few pooled connections.
- Redis or the database unreachable: at connect the socket closes with 1013 (try
  again later); later, an action answers an ``unavailable`` error.
- Group membership is remembered, so a closing socket leaves every group it joined.
- Messages of the groups a socket joined come from its process's hub (fanout.py): a
  socket takes them synchronously and queues the frames; frames go out in order
  through the socket's outbox, and a client that stops reading is closed with 1013
  once OUTBOX_MAX_FRAMES wait (it reconnects and starts from a fresh snapshot).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import types
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

from channels.consumer import get_handler_name
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from core import clock, logs, metrics
from core.addresses import client_address
from core.errors import UNAVAILABLE_ERRORS, report_unavailable
from core.redis import coalescing, get_redis

from .. import events, fanout, scripts
from .admission import Opening
from .guard import CLIENT_GONE, CLOSE_TRY_AGAIN, OPENING, RAW_SEND, new_id
from .messages import Action, Refusal, parse

logger = logging.getLogger("live.sockets")
access_log = logs.get_logger("live.sockets.access")
_FRAMES_SENT = metrics.SOCKET_MESSAGES

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
# CLOSE_TRY_AGAIN (1013, from guard.py): Redis or the database unreachable, or load shed
CLOSE_NO_SUCH_GAME = 4404
CLOSE_TOO_MANY = 4429  # this address has WS_SOCKETS_PER_ADDRESS open already
# Frames (and hub messages held while a client's request is handled) a socket queues at
# most. A live client has one or two in flight; 256 is a page opening 50 followed players
# twice over, or about 50 s of a stalled client at 5 standings messages a second. Past
# it the client is closed with 1013 and reconnects to fresh snapshots, instead of the
# process holding an ever longer backlog for it.
OUTBOX_MAX_FRAMES = 256
# Sockets take their group messages from the process's hub, not from a channel of their
# own: an alias with no layer behind it spares each socket a subscription in Redis.
NO_CHANNEL_LAYER = "live sockets use the hub"
__all__ = ["CLOSE_TRY_AGAIN", "RAW_SEND", "LiveSocket"]


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
    """Subclasses set ``actions`` (name -> messages.Action) and implement :meth:`start` and :meth:`take`."""

    actions: ClassVar[dict[str, Action[Any]]] = {}
    channel_layer_alias = NO_CHANNEL_LAYER

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Names this socket in its address's admission set and in presence.
        self.socket_id = new_id()
        self.joined: set[str] = set()
        self.placed = False
        # Set once start() succeeded: a socket closed while connecting ignores what the
        # client sent meanwhile (the closing frame is on its way).
        self.started = False
        self.bucket = TokenBucket(MESSAGE_BURST, MESSAGES_PER_SEC)
        self.refused = 0
        self.tasks: list[asyncio.Task[None]] = []
        # Frames to send, in order (a close code last, when one is asked for while frames wait).
        self.outbox: deque[str | int] = deque()
        self.writer: asyncio.Task[None] | None = None
        self.closing = False
        # While the socket handles a request (a subscribe reads its snapshot) or moves a
        # cohort view (sockets/cohorts.py), the hub's messages wait here and are taken after
        # the last of them, in the order they came. A count: a move may overlap a request.
        self.busy = 0
        self.held: list[fanout.Delivery] = []
        self.opened_at: float | None = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        # Frames go straight to the server's send: the middleware wrappers around ``send``
        # (sessions, the outage guard) only care about the handshake and the close.
        self.raw_send = scope.get(RAW_SEND, send)
        with coalescing():  # this socket's Redis commands, and its tasks', share pipelines
            await super().__call__(scope, receive, send)

    async def dispatch(self, message: dict[str, Any]) -> None:
        # Channels' own dispatch first closes the sync thread's stale database connections: a
        # hop to that thread for every connect, frame and close, a third of a connect storm's
        # CPU. These handlers work on Redis; what reads the database at connect (the session's
        # user, a config-cache miss, a player link) comes after the auth middleware's own hop
        # (get_user), which closes stale connections before and after it.
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await handler(message)

    async def connect(self) -> None:
        # This runs in the socket's turn of the admission queue (OutageGuard took it); it is
        # given back once the socket is open or refused.
        opening: Opening | None = self.scope.get(OPENING)
        try:
            opened = await self._open()
        finally:
            if opening is not None:
                opening.release()
        if not opened:
            return
        self.repeat(self.keepalive_secs(), self._keepalive)
        self.opened_at = clock.monotonic()
        metrics.SOCKETS_OPEN.inc()
        access_log.info("socket open", path=self.scope.get("path", ""), socket_id=self.socket_id)

    async def _open(self) -> bool:
        """Accept, admit and start the socket; False if it was closed instead."""
        # Accepted first: a close before accept reaches a browser as a refused
        # handshake (1006), and it would retry forever.
        await self.accept()
        try:
            if not await self._place("admit"):
                await self.close(code=CLOSE_TOO_MANY)
                return False
            self.placed = True
            if not await self._handling(self.start()):
                return False
            self.started = True
            return True
        except CLIENT_GONE:
            return False  # it left during its handshake
        except UNAVAILABLE_ERRORS as error:
            report_unavailable(error, during="a socket's connect (closing it with 1013)")
            await self.close(code=CLOSE_TRY_AGAIN)
            return False

    async def start(self) -> bool:
        """Set the socket up after admission; False if it closed itself."""
        raise NotImplementedError

    def keepalive_secs(self) -> float:
        return KEEPALIVE_SECS

    async def keepalive(self) -> None:
        """What the socket renews every keepalive_secs() besides its place (presence)."""

    async def finish(self) -> None:
        """What the socket undoes when it closes, besides its groups and place."""

    def take(self, delivery: fanout.Delivery) -> None:
        """Queue what this socket sends of a message of a group it joined (synchronously)."""
        raise NotImplementedError

    def repeat(self, every_secs: float, work: Callable[[], Awaitable[None]]) -> None:
        """Run ``work`` every ``every_secs`` while the socket is open (an outage skips a round)."""

        async def loop() -> None:
            while True:
                await asyncio.sleep(every_secs)
                try:
                    await work()
                except UNAVAILABLE_ERRORS as error:
                    report_unavailable(error, during=f"a socket's {work.__name__.lstrip('_')} (retried next round)")

        self.tasks.append(asyncio.create_task(loop()))

    async def _keepalive(self) -> None:
        await self._place("admit")
        await self.keepalive()

    async def _place(self, op: str) -> bool:
        address = client_address((self.scope.get("client") or ("", 0))[0])
        return await scripts.socket_admit(
            get_redis(),
            address=address,
            socket_id=self.socket_id,
            op="admit" if op == "admit" else "release",
            now_ms=clock.now_ms(),
            lifetime_ms=SOCKET_PLACE_MS,
            cap=settings.WS_SOCKETS_PER_ADDRESS,
        )

    async def disconnect(self, code: int) -> None:
        self.closing = True
        if self.opened_at is not None:
            metrics.SOCKETS_OPEN.dec()
            seconds = clock.monotonic() - self.opened_at
            access_log.info("socket closed", path=self.scope.get("path", ""), code=code, open_secs=round(seconds, 1))
            self.opened_at = None
        self.outbox.clear()
        for task in [*self.tasks, *([self.writer] if self.writer else [])]:
            task.cancel()
        with contextlib.suppress(*UNAVAILABLE_ERRORS):
            await self.finish()
            if self.placed:
                await self._place("release")
        for group in list(self.joined):
            await self.leave(group)

    async def join(self, group: str) -> None:
        if group not in self.joined:
            await fanout.hub().watch(group, self)
            self.joined.add(group)

    async def leave(self, group: str) -> bool:
        """Leave ``group``; True if this process's last watcher of it left."""
        if group not in self.joined:
            return False
        self.joined.discard(group)
        return await fanout.hub().unwatch(group, self)

    # ----------------------------------------------------------------- frames out

    async def send_json(self, payload: events.Payload) -> None:
        self.push(fanout.encode(payload))

    def push(self, frame: str) -> None:
        """Send a frame after those before it: at once while the client keeps up (the write
        completes without waiting), otherwise queued for the socket's writer task."""
        if self.closing:
            return
        _FRAMES_SENT.inc()
        if self.writer is None:
            self._send_now(frame)
        elif len(self.outbox) < OUTBOX_MAX_FRAMES:
            self.outbox.append(frame)
        else:
            logger.warning("live socket: the client reads too slowly (%d frames wait); closing", len(self.outbox))
            self.outbox.clear()
            self._close_after_frames(CLOSE_TRY_AGAIN)

    def _send_now(self, frame: str) -> None:
        # Driven by hand rather than awaited: a task per frame and socket cost more than
        # the write itself (the benchmark's profile), and a write only waits when the
        # transport is paused because the client stopped reading.
        sending = self.raw_send({"type": "websocket.send", "text": frame})
        try:
            waiting = sending.send(None)
        except StopIteration:
            return
        except (OSError, RuntimeError):
            self._gone()
            return
        # This write waits for the client: it, and the frames queued meanwhile, finish in a task.
        self.writer = asyncio.create_task(self._write(_resumed(sending, waiting)))

    def _close_after_frames(self, code: int) -> None:
        self.closing = True
        self.outbox.append(code)
        if self.writer is None:
            self.writer = asyncio.create_task(self._write(None))

    async def _write(self, first: Awaitable[None] | None) -> None:
        try:
            if first is not None:
                await first
            while self.outbox:
                item = self.outbox.popleft()
                if isinstance(item, int):
                    await super().close(code=item)
                else:
                    await self.raw_send({"type": "websocket.send", "text": item})
        except (OSError, RuntimeError):
            self._gone()
        finally:
            self.writer = None

    def _gone(self) -> None:
        """The client is gone (the server refuses writes after a close): nothing more to send."""
        self.closing = True
        self.outbox.clear()

    async def close(self, code: int | bool | None = None, reason: str | None = None) -> None:
        """Close after the frames already queued (at once when none wait); once only: a socket
        already closed, closing or gone is left as it is (a second close is an ASGI error)."""
        if self.closing:
            return
        if self.writer is None and not self.outbox:
            self.closing = True
            await super().close(code=code, reason=reason)
        else:
            self._close_after_frames(code if isinstance(code, int) and not isinstance(code, bool) else 1000)

    # ----------------------------------------------------------------- hub -> socket

    def deliver(self, delivery: fanout.Delivery) -> None:
        if self.closing:
            return
        if not self.busy:
            self.take(delivery)
        elif len(self.held) < OUTBOX_MAX_FRAMES:
            self.held.append(delivery)
        else:
            self.held.clear()
            self._close_after_frames(CLOSE_TRY_AGAIN)

    def reconnect(self) -> None:
        self.tasks.append(asyncio.create_task(self.close(code=CLOSE_RECONNECT)))

    async def _handling(self, request: Awaitable[bool | None]) -> bool | None:
        """Await a request's handler with the hub's messages held, then take them in order."""
        self.busy += 1
        try:
            return await request
        finally:
            self.busy -= 1
            if not self.busy:
                held, self.held = self.held, []
                for delivery in held:
                    self.deliver(delivery)

    async def error(self, code: events.ErrorCode, message: str) -> None:
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
        parsed = parse(self.actions, message)
        if isinstance(parsed, Refusal):
            await self.error(parsed.code, self.refusal_text(parsed, message))
            return
        action, request = parsed
        try:
            await self._handling(action.handler(self, request))
        except UNAVAILABLE_ERRORS as error:
            report_unavailable(error, during=f"a socket's {message['action']}")
            await self.error("unavailable", "The live service is briefly unavailable; try again.")

    def refusal_text(self, refusal: Refusal, message: dict[str, Any]) -> str:
        """What the ``error`` for a refused message says (a socket fills in its game's names)."""
        return refusal.message

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


@types.coroutine
def _resumed(sending: Any, waiting: Any) -> Any:
    """The rest of a write that had to wait: first what it waits on, then the write itself."""
    try:
        yield waiting
    except BaseException:
        sending.close()
        raise
    return (yield from sending)
