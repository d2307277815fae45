"""The ASGI application.

- Websockets (``/ws/games/{slug}/``, ``/ws/home/``) go to the live sockets, behind the
  allowed-hosts origin check and the session auth stack.
- Pages and admin go through Django's full middleware.
- The JSON API goes through a lean handler: under ASGI every sync middleware
  hook runs on a thread (two hand-offs per middleware per request), which cost
  the API more than all of its own work. The API needs no sessions, CSRF, auth
  or messages, so ``/api/v1/`` requests go to a handler whose only middlewares are
  async-native (see middleware.py): the request context (request id, access line,
  metrics), CORS for public reads, and the API's own.
- That handler also serves a request without Django's per-request hand-offs to the sync
  thread (the request_started/finished signals' database upkeep, the response's close):
  three thread hops a request, a fifth of a submission's time. The upkeep those signals
  did (closing a database connection that broke or aged out) runs at most once every
  DB_UPKEEP_SECS instead, on the thread that holds the connections.
- Both handlers read a request's body themselves before anything else (read_bounded_body): at
  most MAX_BODY_BYTES (413 body_too_large) and within BODY_READ_TIMEOUT_SECS of the headers
  (408 body_timeout), then close the connection; neither Django nor uvicorn bounds either.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import time
from typing import Any

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard_site.settings")
django.setup(set_prefix=False)  # as get_asgi_application() does, before the imports below

from asgiref.sync import sync_to_async  # noqa: E402
from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.conf import settings  # noqa: E402
from django.core.exceptions import RequestAborted, RequestDataTooBig  # noqa: E402
from django.core.handlers.asgi import ASGIHandler, get_script_prefix  # noqa: E402
from django.core.handlers.exception import convert_exception_to_response  # noqa: E402
from django.db import close_old_connections, reset_queries  # noqa: E402
from django.http import HttpResponse, HttpResponseBase  # noqa: E402
from django.urls import path, re_path, set_script_prefix  # noqa: E402

from core import errors  # noqa: E402
from live.sockets import GameOriginValidator, GameSocket, HomeSocket, OutageGuard, RefuseSocket  # noqa: E402

from .middleware import (  # noqa: E402
    API_PREFIX,
    ReadOnlyCorsMiddleware,
    api_middleware,
    error_json,
    request_context_middleware,
)

# How often the API handler checks its database connections (what Django's request signals
# did on every request): a connection broken by a database restart is replaced within this,
# and the check costs one thread hop a second instead of three a request.
DB_UPKEEP_SECS = 1.0


def _database_upkeep() -> None:
    """What Django's request signals do for the database, on the thread holding its connections:
    close one that broke or outlived CONN_MAX_AGE, and empty DEBUG's query log."""
    reset_queries()
    close_old_connections()


def _close(response: HttpResponseBase) -> None:
    """What response.close() does, less its request_finished signal (see _database_upkeep):
    each resource closed, one failing not keeping the others open."""
    for closer in getattr(response, "_resource_closers", ()):
        with contextlib.suppress(Exception):
            closer()


class BodyTimeout(Exception):
    """The request body was still incomplete BODY_READ_TIMEOUT_SECS after its headers."""


async def read_bounded_body(scope: dict[str, Any], receive: Any) -> io.BytesIO:
    """The request body, read whole within BODY_READ_TIMEOUT_SECS of the headers (else
    BodyTimeout: uvicorn waits on a stalled or trickling body for ever) and refused
    (RequestDataTooBig) past MAX_BODY_BYTES: by its Content-Length before any of it is read, or
    as a chunked one streams past it (Django's reader spools any size to disk first, and only
    then is it refused)."""
    for name, value in scope.get("headers", ()):
        if name == b"content-length" and value.isdigit() and int(value) > settings.MAX_BODY_BYTES:
            raise RequestDataTooBig
    body = io.BytesIO()  # at most MAX_BODY_BYTES: memory, never a file
    size = 0
    try:
        async with asyncio.timeout(settings.BODY_READ_TIMEOUT_SECS):
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    raise RequestAborted
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > settings.MAX_BODY_BYTES:
                    raise RequestDataTooBig
                body.write(chunk)
                if not message.get("more_body", False):
                    body.seek(0)
                    return body
    except TimeoutError:
        body.close()
        raise BodyTimeout from None
    except BaseException:
        body.close()
        raise


def _refusal(refused: RequestDataTooBig | BodyTimeout, *, api: bool) -> HttpResponseBase:
    """The answer to a body read_bounded_body refused: the envelope on the API, its message
    alone on pages (before any middleware: no session, no template)."""
    if isinstance(refused, BodyTimeout):
        error = errors.body_timeout(secs=settings.BODY_READ_TIMEOUT_SECS)
    else:
        error = errors.body_too_large()
    if api:
        response: HttpResponseBase = error_json(error)
    else:
        response = HttpResponse(error.message, status=error.status, content_type="text/plain; charset=utf-8")
    # The rest of the body is never read, so the connection can carry no next request: closed
    # (uvicorn would otherwise go on reading, and dropping, a body that may never end).
    response["Connection"] = "close"
    return response


class ApiASGIHandler(ASGIHandler):
    _upkept_at = 0.0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        # No per-request ThreadSensitiveContext: it starts a new thread for every
        # request. The API's rare sync work (a config-cache miss reading the
        # database) runs on asgiref's one shared sync thread instead.
        await self.handle(scope, receive, send)

    async def handle(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        # Django's handle() less its thread hops, and less its disconnect listener: a request
        # whose client left is served to the end (a submission accepted is never half-done).
        body_file = await _body_or_refusal(self, scope, receive, send, api=True)
        if body_file is None:
            return
        response: HttpResponseBase | None = None
        try:
            set_script_prefix(get_script_prefix(scope))
            await self._upkeep()
            request, error_response = self.create_request(scope, body_file)
            if request is not None:
                response = await self.run_get_response(request)
            elif error_response is not None:  # a request Django refused to build (a bad header)
                response = error_response
            else:
                raise AssertionError("create_request returned neither a request nor a response")
            await self.send_response(response, send)
        finally:
            body_file.close()
            if response is not None:
                _close(response)

    async def _upkeep(self) -> None:
        now = time.monotonic()
        if now - self._upkept_at >= DB_UPKEEP_SECS:
            ApiASGIHandler._upkept_at = now
            await sync_to_async(_database_upkeep)()

    def load_middleware(self, is_async: bool = False) -> None:
        self._view_middleware: list[Any] = []
        self._template_response_middleware: list[Any] = []
        self._exception_middleware: list[Any] = []
        # Django's own last resort stays outermost; api_middleware answers every error first.
        inner = self._get_response_async  # type: ignore[attr-defined]  # BaseHandler's, as ASGIHandler uses it
        self._middleware_chain = convert_exception_to_response(
            request_context_middleware(ReadOnlyCorsMiddleware(api_middleware(inner)))
        )


async def _body_or_refusal(
    handler: ASGIHandler, scope: dict[str, Any], receive: Any, send: Any, *, api: bool
) -> io.BytesIO | None:
    """The request's body, read within its bounds; None when the client left, or when it was
    refused (413, 408: answered here, before any view runs)."""
    try:
        return await read_bounded_body(scope, receive)
    except RequestAborted:
        return None
    except (RequestDataTooBig, BodyTimeout) as refused:
        await handler.send_response(_refusal(refused, api=api), send)
        return None


def _replayed(body: bytes, receive: Any) -> Any:
    """``receive`` handing out the body already read first, as one message, then the real one's."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def replay() -> dict[str, Any]:
        return pending.pop() if pending else await receive()

    return replay


class SiteASGIHandler(ASGIHandler):
    """Django's handler for pages and admin, with its body read by read_bounded_body first: its
    own reader takes any size, spooled to disk, for as long as the client takes."""

    async def handle(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        body_file = await _body_or_refusal(self, scope, receive, send, api=False)
        if body_file is None:
            return
        with body_file:
            body = body_file.getvalue()
        await super().handle(scope, _replayed(body, receive), send)


api_application = ApiASGIHandler()
site_application = SiteASGIHandler()


async def http_application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["path"].startswith(API_PREFIX):
        await api_application(scope, receive, send)
    else:
        await site_application(scope, receive, send)


websocket_application = OutageGuard(
    GameOriginValidator(
        AuthMiddlewareStack(
            URLRouter(
                [
                    path("ws/games/<slug:game>/", GameSocket.as_asgi()),
                    path("ws/home/", HomeSocket.as_asgi()),
                    re_path(r"", RefuseSocket.as_asgi()),
                ]
            )
        )
    )
)

application = ProtocolTypeRouter({"http": http_application, "websocket": websocket_application})
