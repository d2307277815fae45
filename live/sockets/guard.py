"""Around the live sockets: the admission queue every socket's opening waits in, what
refuses a path no socket serves, and what turns an outage met before a socket's consumer
runs into the same 1013 the consumer itself closes with."""

from __future__ import annotations

import contextlib
import gc
import itertools
import logging
import os
import uuid
from typing import Any

from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from uvicorn.protocols.utils import ClientDisconnected

from core import clock, logs, metrics
from core.errors import UNAVAILABLE_ERRORS, report_unavailable

from .admission import Opening, Shed, gate

logger = logging.getLogger("live.sockets")

# The close code of an outage or of load shedding (docs/websocket.md): try again later.
CLOSE_TRY_AGAIN = 1013
# Scope keys under which OutageGuard hands the sockets the server's own ``send`` and the
# socket's opening turn (admission.Opening: the consumer gives it back once it is open).
RAW_SEND = "live.raw_send"
OPENING = "live.opening"
# The client went away (uvicorn refuses to send to it): nothing to report or to answer. An
# OSError, so it is caught before the outage errors (which include OSError).
CLIENT_GONE: tuple[type[BaseException], ...] = (ClientDisconnected,)
# A storm that sheds sockets logs one line per this long at most (with the count), not one per socket.
SHED_LOG_EVERY_SECS = 1.0
# The garbage collector of a process that serves sockets: a young collection every this many
# allocations (Python's default is 700). Open sockets are long-lived objects by the hundred
# thousand; with the default, a storm of 3,000 sockets ran 9 full collections, each walking
# the whole heap with the event loop stopped (0.3 s each, a third of the worker's CPU). At
# this threshold a full collection is considered every million allocations instead of every
# 70,000 (bench/storm.py: none during the storm), and young ones stay around a millisecond.
GC_YOUNG_ALLOCATIONS = 10_000


class _Ids:
    """Ids of sockets and of their log lines: a random prefix per process and a counter, as
    unique as uuid4 across processes and nodes without reading the kernel's random pool per
    socket (uuid4 three times per socket was a tenth of a connect storm's time on a busy VM)."""

    def __init__(self) -> None:
        self.reseed()

    def reseed(self) -> None:
        self.prefix = uuid.uuid4().hex[:16]
        self.count = itertools.count(1)

    def next(self) -> str:
        return f"{self.prefix}{next(self.count):016x}"


_ids = _Ids()
os.register_at_fork(after_in_child=_ids.reseed)  # a forked worker must not repeat its parent's ids


def new_id() -> str:
    """32 hex digits, unique across the processes of every node."""
    return _ids.next()


class RefuseSocket(AsyncWebsocketConsumer):
    """Any other websocket path: refuse the handshake (instead of a routing error)."""

    async def connect(self) -> None:
        await self.close()


class OutageGuard:
    """Around the websocket application: each socket waits for its opening turn (admission.py)
    before its handshake goes on, and is closed with 1013 when the queue is full; Redis or the
    database unreachable before the socket's consumer runs (the session is read first) closes
    it with 1013, as the consumer itself does, instead of failing the handshake with a 500."""

    def __init__(self, application: Any) -> None:
        self.application = application

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if not _gc_tuned:
            _tune_gc()
        # The socket's own request id, in every line logged while it is open.
        header = dict(scope.get("headers") or ()).get(logs.REQUEST_ID_HEADER.lower().encode(), b"")
        request_id = logs.request_id_from(header.decode("latin-1")) if header else new_id()
        with logs.context(request_id=request_id):
            arrived_at = clock.monotonic()
            opening = Opening(gate())
            try:
                await opening.take()
            except Shed:
                _shed()
                with contextlib.suppress(*CLIENT_GONE):
                    await _refuse(receive, send)
                return
            metrics.SOCKET_ADMISSION_WAIT_SECONDS.observe(clock.monotonic() - arrived_at)
            try:
                await self._guarded({**scope, OPENING: opening}, receive, send)
            finally:
                opening.release()

    async def _guarded(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        state = {"connect_taken": False, "accepted": False, "closed": False}

        async def taking_receive() -> dict[str, Any]:
            message: dict[str, Any] = await receive()
            if message["type"] == "websocket.connect":
                state["connect_taken"] = True
            return message

        async def tracking_send(message: dict[str, Any]) -> None:
            state["accepted"] |= message["type"] == "websocket.accept"
            if message["type"] == "websocket.close":
                state["closed"] = True
                scope[OPENING].release()  # refused (a path, an origin): no more work to do in turn
            await send(message)

        try:
            await self.application({**scope, RAW_SEND: send}, taking_receive, tracking_send)
        except CLIENT_GONE:
            return  # it left while waiting for its turn or during its handshake
        except UNAVAILABLE_ERRORS as error:
            if scope["type"] != "websocket" or state["closed"]:
                raise
            report_unavailable(error, during="a socket's handshake (closing it with 1013)")
            if not state["connect_taken"]:
                await receive()
            if not state["accepted"]:
                await send({"type": "websocket.accept"})
            await send({"type": "websocket.close", "code": CLOSE_TRY_AGAIN})


_gc_tuned = False


def _tune_gc() -> None:
    """Once per process, at its first socket: what the process loaded to start (Django, the
    app, its modules) is never garbage, so keep it out of every later collection, and collect
    the young generation less often (GC_YOUNG_ALLOCATIONS)."""
    global _gc_tuned
    _gc_tuned = True
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_ALLOCATIONS, middle, old)


async def _refuse(receive: Any, send: Any) -> None:
    """Accept, then close with 1013: a close before the accept reaches a browser as a failed
    handshake (1006), after which it retries at once instead of backing off."""
    await receive()  # websocket.connect
    await send({"type": "websocket.accept"})
    await send({"type": "websocket.close", "code": CLOSE_TRY_AGAIN})


_shed_log = {"at": -SHED_LOG_EVERY_SECS, "count": 0.0}


def _shed() -> None:
    """Count a socket refused by the admission queue, and say so in the log (at most once a second)."""
    metrics.SOCKET_ADMISSIONS_SHED.inc()
    _shed_log["count"] += 1
    now = clock.monotonic()
    if now - _shed_log["at"] >= SHED_LOG_EVERY_SECS:
        logger.warning(
            "load shedding: %d socket(s) closed with 1013 since the last line, %d others waiting to open "
            "already (WS_ADMISSION_QUEUE_SOCKETS); the process is saturated, Redis is not the cause",
            _shed_log["count"],
            settings.WS_ADMISSION_QUEUE_SOCKETS,
        )
        _shed_log.update(at=now, count=0)
