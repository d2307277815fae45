"""Who is told of which events: handlers that apps above core subscribe, by name, in their
``AppConfig.ready()`` (core never imports them: it only calls what was registered here).

A handler's name is its identity in the delivery records: keep it stable across releases (a
renamed handler is a new one, and receives the events not yet delivered, not the old ones).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..models import EVENT_HANDLER_MAX_CHARS
from .events import EVENTS, EventEnvelope

Handler = Callable[[EventEnvelope], None]

_NAME_RE = re.compile(r"^[a-z][a-z0-9_.-]*$")


@dataclass(frozen=True)
class Subscription:
    name: str
    handler: Handler
    types: frozenset[str]


_SUBSCRIPTIONS: dict[str, Subscription] = {}


def subscribe(name: str, handler: Handler, *, types: Iterable[str] | None = None) -> Subscription:
    """Deliver every event of ``types`` (all types when None) to ``handler``, at least once each.

    ``handler(envelope)`` runs inside a database transaction with the record of its delivery:
    what it writes to the database happens exactly once per event, and if it raises, nothing it
    wrote stays and it is called again later (with a backoff). Anything it does outside the
    database (a Redis write, a queued job) may happen more than once: key it by ``envelope["id"]``.
    Keep it short (it holds a transaction): queue slow work rather than doing it here.
    """
    if not _NAME_RE.match(name) or len(name) > EVENT_HANDLER_MAX_CHARS:
        raise ValueError(f"handler name {name!r}: lowercase letters, digits and ._- (e.g. 'webhooks.enqueue')")
    wanted = frozenset(EVENTS if types is None else types)
    unknown = wanted - set(EVENTS)
    if unknown:
        raise ValueError(f"no such event types: {sorted(unknown)}")
    existing = _SUBSCRIPTIONS.get(name)
    if existing is not None and (existing.handler is not handler or existing.types != wanted):
        raise ValueError(f"another handler is already subscribed as {name!r}")
    _SUBSCRIPTIONS[name] = subscription = Subscription(name, handler, wanted)
    return subscription


def unsubscribe(name: str) -> None:
    """Stop delivering to ``name`` (tests; an app being switched off). Its records stay."""
    _SUBSCRIPTIONS.pop(name, None)


def subscriptions_for(event_type: str) -> list[Subscription]:
    return [s for s in _SUBSCRIPTIONS.values() if event_type in s.types]
