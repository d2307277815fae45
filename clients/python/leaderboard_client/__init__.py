"""A small typed client for the Leaderboard API (docs/clients.md).

from leaderboard_client import Client

with Client("https://lb.example.com", game="tetris", api_key=KEY) as lb:
    lb.submit_score("main", "ada", 1200, display_name="Ada")
    top = lb.page("main", "daily", limit=10)

A webhook receiver verifies each request with ``leaderboard_client.webhooks.verify``.
"""

from __future__ import annotations

from . import webhooks
from ._calls import MAX_BATCH_ITEMS, RetryPolicy
from .async_client import AsyncClient
from .client import Client
from .errors import (
    BadRequest,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    LeaderboardError,
    NotFound,
    RateLimited,
    TransportError,
    Unauthorized,
    Unavailable,
)
from .webhooks import WebhookEvent, WebhookVerificationError

__all__ = [
    "MAX_BATCH_ITEMS",
    "AsyncClient",
    "BadRequest",
    "Client",
    "Conflict",
    "Forbidden",
    "Gone",
    "Invalid",
    "LeaderboardError",
    "NotFound",
    "RateLimited",
    "RetryPolicy",
    "TransportError",
    "Unauthorized",
    "Unavailable",
    "WebhookEvent",
    "WebhookVerificationError",
    "webhooks",
]
