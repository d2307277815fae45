"""A studio's webhook receiver, for the tests: a real HTTP server on a free port that verifies
every request with ``standardwebhooks`` (the specification's own library, not the product's
code) and answers as the test scripts it: 2xx, 500, 429 with Retry-After, 410, or a hang.

Requests signed with the wall clock are verified by ``Webhook.verify`` as a studio would; on
the suite's pinned clock (a date in March 2026), or the time suite's moved one, the library's
five-minute tolerance is taken against that clock instead, and everything else is the library's."""

from __future__ import annotations

import datetime as dt
import json
import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from core import clock

# The library's own tolerance, kept when another clock stands in for its wall clock.
TOLERANCE = dt.timedelta(minutes=5)


class _ClockedWebhook(Webhook):
    """The library's Webhook, whose timestamp check reads another clock than the wall's: the
    suite's pinned one, or the moved clock of the whole-stack time suite."""

    def __init__(self, secret: str, now: Callable[[], dt.datetime], tolerance: dt.timedelta) -> None:
        super().__init__(secret)
        self._now = now
        self._tolerance = tolerance

    def _Webhook__verify_timestamp(self, timestamp_header: str) -> dt.datetime:  # the library's name
        stamped = dt.datetime.fromtimestamp(float(timestamp_header), tz=dt.UTC)
        if abs(self._now() - stamped) > self._tolerance:
            raise WebhookVerificationError("Message timestamp too old or too new")
        return stamped


@dataclass(frozen=True)
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b"ok"
    hang_secs: float = 0.0


@dataclass(frozen=True)
class Received:
    headers: dict[str, str]
    body: bytes
    event: dict[str, Any]
    path: str

    @property
    def webhook_id(self) -> str:
        return self.headers["webhook-id"]


class Receiver:
    """``with Receiver(secret).running() as receiver``: ``receiver.url``; ``receiver.replies``
    answers each request in turn (then ``Reply()``); ``received`` holds verified requests,
    ``refused`` those no secret verified (answered 401). ``now``: the clock the timestamps are
    checked against (None: the wall clock, the library's own check), within ``tolerance``;
    ``port``: 0 for any."""

    def __init__(
        self,
        *secrets: str,
        now: Callable[[], dt.datetime] | None = clock.now,
        tolerance: dt.timedelta = TOLERANCE,
        port: int = 0,
    ) -> None:
        self.secrets = list(secrets)
        self.now = now
        self.tolerance = tolerance
        self.replies: deque[Reply] = deque()
        self.received: list[Received] = []
        self.refused: list[tuple[dict[str, str], str]] = []
        self.arrived = threading.Event()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/hooks/leaderboard"

    def verify(self, body: bytes, headers: dict[str, str]) -> dict[str, Any] | str:
        """The verified event, or why none of the secrets verified it."""
        why = "no secret"
        for secret in self.secrets:
            hook = Webhook(secret) if self.now is None else _ClockedWebhook(secret, self.now, self.tolerance)
            try:
                return dict(hook.verify(body, headers))
            except WebhookVerificationError as error:
                why = str(error)
        return why

    def _next(self) -> Reply:
        with self._lock:
            return self.replies.popleft() if self.replies else Reply()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # the base class's name
                return

            def do_POST(self) -> None:  # http.server's name
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                headers = {name.lower(): value for name, value in self.headers.items()}
                reply = receiver._next()
                verified = receiver.verify(body, headers)
                with receiver._lock:
                    if isinstance(verified, dict):
                        receiver.received.append(Received(headers, body, verified, self.path))
                    else:
                        receiver.refused.append((headers, verified))
                receiver.arrived.set()
                if reply.hang_secs:
                    threading.Event().wait(reply.hang_secs)
                status = reply.status if isinstance(verified, dict) else 401
                try:
                    self.send_response(status)
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.send_header("content-length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)
                except OSError:  # the sender gave up waiting (its timeout): nobody reads this
                    pass

        return Handler

    def events(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r.event for r in self.received]

    def ids(self) -> list[str]:
        with self._lock:
            return [r.webhook_id for r in self.received]

    @contextmanager
    def running(self) -> Iterator[Receiver]:
        thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._server.shutdown()
            self._server.server_close()


def body_json(received: Received) -> dict[str, Any]:
    return dict(json.loads(received.body))
