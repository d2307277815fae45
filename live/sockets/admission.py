"""The admission queue: a connect storm waits in line instead of failing.

A socket's opening (its session and user, the accept, its place and presence in Redis)
is one *turn* of its process's :class:`Gate`, taken by OutageGuard before the handshake
goes on and given back once the socket is open or refused. At most
``WS_ADMITTING_SOCKETS_MAX`` openings are under way at once; the others wait, first come
first served. A socket that arrives while ``WS_ADMISSION_QUEUE_SOCKETS`` already wait is
refused at once (:class:`Shed`: closed with 1013, counted and logged as load shedding),
so a process never holds a backlog it cannot serve soon.

Why: 3,000 sockets opening at once each asked the Redis pool for connections while the
event loop, busy with 3,000 handshakes, gave them back slowly; most waits ran out (``No
connection available``) and the sockets were closed with 1013 while Redis was fine. In
turns, only so many handshakes are under way, the loop stays responsive, and the
sockets' Redis commands (coalesced into shared pipelines: core.redis.coalescing) return
well within their timeouts. What a socket does once open (requests, keep-alives, its
clean-up) needs no turn: its commands are coalesced the same way.
"""

from __future__ import annotations

import asyncio
import weakref
from collections import deque

from django.conf import settings


class Shed(Exception):
    """The admission queue is full: this socket is refused (load shedding, not an outage)."""


class Gate:
    """``slots`` turns, first come first served, with at most ``queue_max`` waiting."""

    def __init__(self, *, slots: int, queue_max: int) -> None:
        self.slots = slots
        self.queue_max = queue_max
        self.busy = 0  # turns taken
        self._waiting: deque[asyncio.Future[None]] = deque()

    @property
    def waiting(self) -> int:
        """Sockets in the admission queue."""
        return len(self._waiting)

    async def acquire(self) -> None:
        """Wait for a turn; raises Shed when the queue is at its bound."""
        if self.busy < self.slots and not self._waiting:
            self.busy += 1
            return
        if len(self._waiting) >= self.queue_max:
            raise Shed
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release()  # the turn was handed over just before the cancel: pass it on
            else:
                self._waiting.remove(waiter)
            raise

    def release(self) -> None:
        # A turn passes straight to the next in line (busy stays the same), so none jumps it.
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self.busy -= 1


class Opening:
    """A socket's turn: taken before its handshake goes on, given back once (idempotent)."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate
        self.held = False

    async def take(self) -> None:
        await self.gate.acquire()
        self.held = True

    def release(self) -> None:
        if self.held:
            self.held = False
            self.gate.release()


_gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Gate] = weakref.WeakKeyDictionary()


def gate() -> Gate:
    """The running event loop's gate (one per process in production; tests run several loops)."""
    loop = asyncio.get_running_loop()
    found = _gates.get(loop)
    if found is None:
        found = _gates[loop] = Gate(
            slots=settings.WS_ADMITTING_SOCKETS_MAX, queue_max=settings.WS_ADMISSION_QUEUE_SOCKETS
        )
    # The settings as they are now (tests change them): two attribute reads per socket.
    found.slots, found.queue_max = settings.WS_ADMITTING_SOCKETS_MAX, settings.WS_ADMISSION_QUEUE_SOCKETS
    return found
