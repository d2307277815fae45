"""Who may open a socket: pages of this site (an ``Origin`` whose host is in ALLOWED_HOSTS, as
channels' AllowedHostsOriginValidator decides) and, on a game's socket, the websites the studio
listed as that game's embed origins (the widget, docs/embed.md), compared in full: scheme, host
and port. A socket from an embed origin is anonymous: its cookies are dropped before the
session is read, so another site never acts as the visitor's account."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlparse

from channels.security.websocket import OriginValidator, WebsocketDenier
from django.conf import settings
from django.core.exceptions import ValidationError

from core import branding, config

_GAME_PATH = re.compile(r"^/ws/games/([a-z0-9-]{1,50})/$")


def _allowed_hosts() -> list[str]:
    hosts = list(settings.ALLOWED_HOSTS)
    if settings.DEBUG and not hosts:
        hosts = ["localhost", "127.0.0.1", "[::1]"]  # as Django and channels allow in development
    return hosts


class GameOriginValidator(OriginValidator):
    def __init__(self, application: Any) -> None:
        super().__init__(application, _allowed_hosts())

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        headers = scope.get("headers") or []
        raw = next((value for name, value in headers if name == b"origin"), None)
        origin = raw.decode("latin-1") if raw is not None else None
        if self._site_origin(origin):
            return await self.application(scope, receive, send)
        if not await _embed_origin(scope.get("path", ""), origin):
            return await WebsocketDenier()(scope, receive, send)
        anonymous = [(name, value) for name, value in headers if name != b"cookie"]
        return await self.application({**scope, "headers": anonymous}, receive, send)

    def _site_origin(self, origin: str | None) -> bool:
        try:
            return bool(self.valid_origin(urlparse(origin) if origin is not None else None))
        except ValueError:  # a port past 65535: channels reads it and raises
            return False


async def _embed_origin(path: str, origin: str | None) -> bool:
    """Whether ``origin`` is one of the embed origins of the game whose socket ``path`` is."""
    found = _GAME_PATH.match(path)
    if origin is None or found is None:
        return False
    try:
        normal = branding.origin_normal(origin)
    except ValidationError:  # not an origin at all: refused like any other
        return False
    game = await config.get_game(found.group(1))
    return game is not None and normal in game.embed_origins
