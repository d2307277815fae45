"""The one JSON API at /api/v1/: each app's routers, mounted on the shared NinjaAPI."""

from __future__ import annotations

from accounts.api import router as accounts
from archive.api import router as archive
from games.api import api, reads, writes
from presence.api import router as presence

api.add_router("", writes)
api.add_router("", reads)
api.add_router("", presence)
api.add_router("", accounts)
api.add_router("", archive)

__all__ = ["api"]
