"""Fan-out inside one web process: each message received once, each frame encoded once.

The broadcaster publishes every event once to a channel-layer group (events.py). Each
web process keeps one :class:`Hub` per event loop: it subscribes a channel of its own to
the groups its sockets watch (one subscription per group, however many sockets watch
it), receives each message once, and hands it to the watching sockets as a
:class:`Delivery`. A socket decides synchronously whether the message is for it (its
versions, period ids, row limit, followed players); the text it sends comes from the
delivery, which encodes each distinct frame (one view at one row limit, a presence
change, ...) once for the whole process. What stays per socket is the write (and its
compression when the client negotiated permessage-deflate), queued by the socket's
outbox (sockets/base.py) so that one client that stops reading holds up nobody else.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
import weakref
from collections.abc import Callable, Hashable
from typing import Any, Protocol

from channels.layers import get_channel_layer

logger = logging.getLogger(__name__)

# The hub's own channel: the only channel of a web process that the broadcaster's groups reach.
HUB_CHANNEL_PREFIX = "hub."
# Message types the hub passes on (events.py sends them with the group they went to).
EVENT = "live.event"
DISCONNECT = "live.disconnect"


def encode(payload: object) -> str:
    """The text of one websocket frame (every frame a live socket sends is made here)."""
    return json.dumps(payload)


class Delivery:
    """One group message on its way to this process's sockets: its payload, decoded once,
    and each distinct frame made from it, encoded once on first use."""

    __slots__ = ("_frames", "payload")

    def __init__(self, payload: dict[str, Any]) -> None:
        self.payload = payload
        self._frames: dict[Hashable, str] = {}

    def frame(self, key: Hashable = None, build: Callable[[], object] | None = None) -> str:
        """The frame called ``key`` (the payload itself when there is no ``build``)."""
        text = self._frames.get(key)
        if text is None:
            text = self._frames[key] = encode(build() if build is not None else self.payload)
        return text


class Watcher(Protocol):
    """A socket as the hub sees it."""

    def deliver(self, delivery: Delivery) -> None:
        """Take a message of a watched group (synchronously: queue what to send, never wait)."""

    def reconnect(self) -> None:
        """Close with 1012 so that the client comes back (manage.py live_reconnect)."""


class Hub:
    """The groups this process's sockets watch, and the one receive loop that serves them."""

    def __init__(self) -> None:
        self.layer = get_channel_layer()
        # Names this hub (one per process and event loop) where the broadcaster keeps what a
        # process's sockets watch (live cohorts), so that the last watcher to leave can drop it.
        self.token = uuid.uuid4().hex[:16]
        self.groups: dict[str, set[Watcher]] = {}
        self.channel: str | None = None
        self.task: asyncio.Task[None] | None = None
        self._starting = asyncio.Lock()

    async def _start(self) -> str:
        async with self._starting:
            if self.channel is None:
                channel = await self.layer.new_channel(prefix=HUB_CHANNEL_PREFIX)
                self.task = asyncio.create_task(self._receive(channel), name="live-hub")
                self.channel = channel
        return self.channel

    async def watch(self, group: str, watcher: Watcher) -> None:
        """Deliver ``group``'s messages to ``watcher`` from now on (Redis errors propagate)."""
        channel = await self._start()
        self.groups.setdefault(group, set()).add(watcher)
        try:
            # The layer subscribes once per group; later calls only wait for that subscription.
            await self.layer.group_add(group, channel)
        except BaseException:
            self._drop(group, watcher)
            raise

    async def unwatch(self, group: str, watcher: Watcher) -> bool:
        """Stop delivering ``group`` to ``watcher``; True if nobody in this process watches it any more."""
        if not self._drop(group, watcher):
            return False
        if self.channel is not None:
            await self.layer.group_discard(group, self.channel)
        return True

    def _drop(self, group: str, watcher: Watcher) -> bool:
        """Forget ``watcher`` in ``group``; True if nobody in this process watches it any more."""
        watchers = self.groups.get(group)
        if watchers is None:
            return False
        watchers.discard(watcher)
        if watchers:
            return False
        del self.groups[group]
        return True

    async def _receive(self, channel: str) -> None:
        while True:
            message = await self.layer.receive(channel)
            try:
                self.dispatch(message)
            except Exception:
                # A malformed message must not end the process's fan-out for good.
                logger.exception("live hub: a message could not be dispatched: %.200r", message)

    def dispatch(self, message: dict[str, Any]) -> None:
        watchers = self.groups.get(message.get("group", ""))
        if not watchers:
            return  # the last watcher left while the message was on its way
        is_event = message.get("type") == EVENT
        delivery = Delivery(message["payload"]) if is_event else None
        for watcher in list(watchers):
            # One socket's failure must not cost the others their message.
            try:
                if delivery is not None:
                    watcher.deliver(delivery)
                elif message.get("type") == DISCONNECT:
                    watcher.reconnect()
            except Exception:
                logger.exception("live hub: a socket failed to take a %s message", message.get("type"))


_hubs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Hub] = weakref.WeakKeyDictionary()


def hub() -> Hub:
    """This process's hub (one per event loop: the channel layer keeps one connection per loop)."""
    loop = asyncio.get_running_loop()
    found = _hubs.get(loop)
    if found is None:
        found = _hubs[loop] = Hub()
    return found
