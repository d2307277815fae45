"""What every page's live script needs from the settings."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest


def live_socket(request: HttpRequest) -> dict[str, int]:
    """The port the pages open their websockets on (0: the page's own)."""
    return {"live_socket_port": settings.LIVE_SOCKET_PORT}
