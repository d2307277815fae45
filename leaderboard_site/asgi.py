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
"""

from __future__ import annotations

import os
from typing import Any

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard_site.settings")
site_application = get_asgi_application()  # sets Django up before the imports below

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.core.handlers.asgi import ASGIHandler  # noqa: E402
from django.core.handlers.exception import convert_exception_to_response  # noqa: E402
from django.urls import path, re_path  # noqa: E402

from live.sockets import GameSocket, HomeSocket, OutageGuard, RefuseSocket  # noqa: E402

from .middleware import (  # noqa: E402
    API_PREFIX,
    ReadOnlyCorsMiddleware,
    api_middleware,
    request_context_middleware,
)


class ApiASGIHandler(ASGIHandler):
    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        # No per-request ThreadSensitiveContext: it starts a new thread for every
        # request. The API's rare sync work (a config-cache miss reading the
        # database) runs on asgiref's one shared sync thread instead.
        await self.handle(scope, receive, send)

    def load_middleware(self, is_async: bool = False) -> None:
        self._view_middleware: list[Any] = []
        self._template_response_middleware: list[Any] = []
        self._exception_middleware: list[Any] = []
        # Django's own last resort stays outermost; api_middleware answers every error first.
        inner = self._get_response_async  # type: ignore[attr-defined]  # BaseHandler's, as ASGIHandler uses it
        self._middleware_chain = convert_exception_to_response(
            request_context_middleware(ReadOnlyCorsMiddleware(api_middleware(inner)))
        )


api_application = ApiASGIHandler()


async def http_application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["path"].startswith(API_PREFIX):
        await api_application(scope, receive, send)
    else:
        await site_application(scope, receive, send)


websocket_application = OutageGuard(
    AllowedHostsOriginValidator(
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
