"""The webhooks' reads: a game's endpoints, an endpoint's deliveries with their attempts, and
the game's event log (every event of the game, from the outbox, kept EVENT_RETENTION_SECS)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from core import clock, errors, keys
from core.models import Event
from core.outbox import envelope_of
from core.redis import get_redis

from .models import Attempt, Delivery, Endpoint


def endpoints_of(*, game_id: int) -> list[Endpoint]:
    return list(Endpoint.objects.filter(game_id=game_id).select_related("game").order_by("id"))


def endpoint_get(*, game_id: int, endpoint_id: str) -> Endpoint:
    """The game's endpoint, or 404 webhook_not_found (none, or another game's)."""
    found = Endpoint.objects.select_related("game").filter(game_id=game_id, endpoint_id=endpoint_id[:40]).first()
    if found is None:
        raise errors.webhook_not_found(what=f"endpoint {endpoint_id[:40]!r}", field="endpoint_id")
    return found


def delivery_get(*, endpoint: Endpoint, delivery_id: str) -> Delivery:
    found = (
        Delivery.objects.select_related("endpoint", "endpoint__game")
        .filter(endpoint=endpoint, delivery_id=delivery_id[:40])
        .first()
    )
    if found is None:
        raise errors.webhook_not_found(what=f"delivery {delivery_id[:40]!r} of this endpoint", field="delivery_id")
    return found


def deliveries_page(
    *, endpoint: Endpoint, status: str | None, since: dt.datetime | None, offset: int, limit: int
) -> tuple[int, list[Delivery]]:
    """The endpoint's deliveries, newest first (``status``, and events from ``since``, if given)."""
    rows = Delivery.objects.filter(endpoint=endpoint)
    if status is not None:
        rows = rows.filter(status=status)
    if since is not None:
        rows = rows.filter(created_at__gte=since)
    return rows.count(), list(rows.order_by("-id")[offset : offset + limit])


def attempts_of(delivery: Delivery) -> list[Attempt]:
    return list(delivery.attempt_set.order_by("id"))


@dataclass(frozen=True)
class EventPage:
    events: list[dict[str, Any]]
    next_after: str | None  # the cursor of the next page; None: this is the last


def events_page(
    *, game_slug: str, since: dt.datetime | None, after: str | None, types: list[str], limit: int
) -> EventPage:
    """The game's events in the order they were written, from ``since`` or after the event
    ``after`` (a page's ``next_after``), ``limit`` at a time. 404 for an ``after`` not kept."""
    rows = Event.objects.filter(game_slug=game_slug)
    if after is not None:
        anchor = Event.objects.filter(game_slug=game_slug, event_id=after[:40]).values_list("pk", flat=True).first()
        if anchor is None:
            raise errors.webhook_not_found(what=f"event {after[:40]!r} (unknown, or past its retention)", field="after")
        rows = rows.filter(pk__gt=anchor)
    if since is not None:
        rows = rows.filter(created_at__gte=since)
    if types:
        rows = rows.filter(type__in=types)
    found = list(rows.order_by("id")[: limit + 1])
    page = found[:limit]
    return EventPage([dict(envelope_of(event)) for event in page], page[-1].event_id if len(found) > limit else None)


@dataclass(frozen=True)
class QueueState:
    """The delivery queue now (for /metrics): what waits, and how long the oldest has waited."""

    due: int  # due now: waiting for a run, or parked behind their endpoint's limit
    scheduled: int  # due later (retries)
    in_flight: int  # claimed by a run
    oldest_due_age_secs: float  # how long the oldest due delivery has been due; 0 when none


async def queue_state() -> QueueState:
    now_ms = clock.now_ms()
    pipe = get_redis().pipeline(transaction=False)
    pipe.zcount(keys.webhook_due(), "-inf", now_ms)
    pipe.zcard(keys.webhook_due())
    pipe.zcard(keys.webhook_claims())
    pipe.zcard(keys.webhook_parked())
    pipe.zrange(keys.webhook_due(), 0, 0, withscores=True)
    due_now, due_all, claimed, parked, first = await pipe.execute()
    oldest = float(first[0][1]) if first else None
    age = max(0.0, (now_ms - oldest) / 1000) if oldest is not None and oldest <= now_ms else 0.0
    return QueueState(int(due_now) + int(parked), int(due_all) - int(due_now), int(claimed), age)
