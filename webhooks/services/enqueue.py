"""An event's deliveries: the outbox hands each event of a game to :func:`event_enqueue` once
(in a transaction with its record of that), which writes one delivery per endpoint that wants
the event and schedules them when that transaction commits."""

from __future__ import annotations

import json
import secrets

from core import clock
from core.outbox import EventEnvelope

from ..models import Delivery, Endpoint
from .queue import schedule_on_commit

# The outbox knows the handler by this name: keep it (a renamed handler is a new one).
HANDLER_NAME = "webhooks.enqueue"
# What webhook.test carries to name the one endpoint it is for.
TEST_EVENT = "webhook.test"


def delivery_id_new() -> str:
    return "dlv_" + secrets.token_urlsafe(12)


def payload_of(envelope: EventEnvelope) -> str:
    """The body every attempt of the event sends: its envelope, compact JSON."""
    return json.dumps(dict(envelope), separators=(",", ":"), ensure_ascii=False)


def event_enqueue(envelope: EventEnvelope) -> None:
    """One pending delivery of the event per enabled endpoint of its game that wants its type
    (``webhook.test``: only the endpoint it names, enabled or not)."""
    data = envelope["data"]
    endpoints = Endpoint.objects.filter(game__slug=data.get("game", ""))
    if envelope["type"] == TEST_EVENT:
        # Asked for by name: it goes whatever types the endpoint wants.
        wanted = list(endpoints.filter(endpoint_id=data.get("endpoint_id", "")).only("pk"))
    else:
        found = endpoints.filter(enabled=True).only("pk", "event_types")
        wanted = [e for e in found if not e.event_types or envelope["type"] in e.event_types]
    if not wanted:
        return
    now = clock.now()
    payload = payload_of(envelope)
    deliveries = Delivery.objects.bulk_create(
        [
            Delivery(
                delivery_id=delivery_id_new(),
                endpoint=endpoint,
                event_id=envelope["id"],
                event_type=envelope["type"],
                payload=payload,
                next_attempt_at=now,
                created_at=now,
            )
            for endpoint in wanted
        ]
    )
    schedule_on_commit(deliveries, mode="missing")
