"""The Lua scripts of the ground floor (core/lua/), each with its one typed wrapper: the API
keys' rate limit (rate_limit, on every API request) and the sliding-window limit
(sliding_window). Each builds its script's KEYS and ARGV from named arguments through the
layouts bound to the script's header (core/lua.py) and parses the reply into a typed
result; nothing else reads these replies.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import NamedTuple

from redis.asyncio import Redis

from . import keys
from .lua import ScriptReplyError, load

RATE_LIMIT = load(__file__, "rate_limit")
SLIDING_WINDOW = load(__file__, "sliding_window")


# --------------------------------------------------------------------------- rate_limit


class _RateKeys(NamedTuple):
    requests: str
    items: str
    last_used: str
    config_version: str


class _RateArgs(NamedTuple):
    now_ms: int
    window_ms: int
    prefix: str
    requests_limit: int
    items_limit: int
    items: int


RATE_LIMIT.bind(keys=_RateKeys, args=_RateArgs)


class Budget(enum.StrEnum):
    """The budget of an API key that refused a request."""

    REQUESTS = "requests"
    ITEMS = "items"


# The script's 'refused by' field: '' when the request was allowed.
_REFUSED_BY: dict[str, Budget | None] = {"": None, "requests": Budget.REQUESTS, "items": Budget.ITEMS}


@dataclass(frozen=True, slots=True)
class RateTaken:
    """One request's pass through an API key's two budgets (taken from both, or neither)."""

    refused_by: Budget | None  # None: allowed, and taken
    retry_ms: int  # refused: ms until both budgets allow it; else 0
    requests_left: int
    requests_reset_ms: int  # ms until the request budget is full again
    items_left: int
    items_reset_ms: int
    config_version: str  # the game's config version counter, '0' when absent


async def rate_limit(
    client: Redis,
    *,
    slug: str,
    prefix: str,
    now_ms: int,
    window_ms: int,
    requests_per_window: int,
    items_per_window: int,
    items: int,
) -> RateTaken:
    """Take one request and ``items`` items from the budgets of the API key ``prefix`` of
    game ``slug`` (GCRA, both or neither), record the key's use, and read the game's config
    version."""
    call = RATE_LIMIT.flatten(
        _RateKeys(
            keys.api_rate(slug, prefix),
            keys.api_items_rate(slug, prefix),
            keys.api_last_used(slug),
            keys.config_version(slug),
        ),
        _RateArgs(now_ms, window_ms, prefix, requests_per_window, items_per_window, items),
    )
    raw = await RATE_LIMIT(client, *call)
    try:
        allowed, refused, retry_ms, requests_left, requests_reset_ms, items_left, items_reset_ms, version = raw
        refused_by = _REFUSED_BY[refused]
    except (ValueError, TypeError, KeyError):
        raise ScriptReplyError(f"rate_limit replied {raw!r}") from None
    if (allowed == 1) is not (refused_by is None):
        raise ScriptReplyError(f"rate_limit replied {raw!r}")
    return RateTaken(refused_by, retry_ms, requests_left, requests_reset_ms, items_left, items_reset_ms, str(version))


# --------------------------------------------------------------------------- sliding_window


class _WindowKeys(NamedTuple):
    window: str


class _WindowArgs(NamedTuple):
    now_ms: int
    window_ms: int
    limit: int
    member: str


SLIDING_WINDOW.bind(keys=_WindowKeys, args=_WindowArgs)


async def sliding_window(client: Redis, *, key: str, now_ms: int, window_ms: int, limit: int, member: str) -> int:
    """Record one event (``member``, unique to it) in the sliding window ZSET ``key`` if
    it has room for ``limit`` events per ``window_ms``; returns 0 if recorded, else the ms
    until it has room (nothing recorded)."""
    call = SLIDING_WINDOW.flatten(_WindowKeys(key), _WindowArgs(now_ms, window_ms, limit, member))
    wait = await SLIDING_WINDOW(client, *call)
    if not isinstance(wait, int) or wait < 0:
        raise ScriptReplyError(f"sliding_window replied {wait!r}")
    return wait
