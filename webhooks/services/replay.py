"""Replays: one delivery sent again, or every failed delivery of an endpoint since a time. A
replayed delivery is pending again with a fresh schedule (ten attempts), due now, with the
same event id (``webhook-id``) and body as before."""

from __future__ import annotations

import datetime as dt

from django.db import transaction
from django.db.models import F

from core import clock, errors
from core.audit import SYSTEM, Actor
from core.models import AuditEntry

from ..models import Delivery, Endpoint
from .endpoints import audit
from .queue import schedule_on_commit

# Deliveries one replay of an endpoint's failures takes at most (oldest first); ask again for more.
WEBHOOK_REPLAY_MAX = 10_000


def _enabled(endpoint: Endpoint) -> None:
    if not endpoint.enabled:
        raise errors.webhook_disabled(reason=endpoint.disabled_reason)


def delivery_replay(*, delivery: Delivery, now: dt.datetime, by: Actor = SYSTEM) -> Delivery:
    """Send it again now (a pending one: now rather than at its next retry)."""
    _enabled(delivery.endpoint)
    with transaction.atomic():
        audit(AuditEntry.Action.WEBHOOK_REPLAY, delivery.endpoint, by, {"delivery_id": delivery.delivery_id})
        if delivery.status != Delivery.Status.PENDING:
            Delivery.objects.filter(pk=delivery.pk).update(
                status=Delivery.Status.PENDING, attempts=0, finished_at=None, replays=F("replays") + 1
            )
        Delivery.objects.filter(pk=delivery.pk).update(next_attempt_at=now)
        delivery.refresh_from_db()
        schedule_on_commit([delivery], mode="sooner")
    return delivery


def failed_replay(
    *, endpoint: Endpoint, since: dt.datetime, until: dt.datetime | None, now: dt.datetime, by: Actor = SYSTEM
) -> int:
    """Every failed delivery of the endpoint whose event came from ``since`` (to ``until``),
    at most WEBHOOK_REPLAY_MAX, oldest first; returns how many. They are sent in event order
    (WEBHOOK_ENDPOINT_CONCURRENCY at a time)."""
    _enabled(endpoint)
    rows = Delivery.objects.filter(endpoint=endpoint, status=Delivery.Status.FAILED, created_at__gte=since)
    if until is not None:
        rows = rows.filter(created_at__lt=until)
    with transaction.atomic():
        pks = list(rows.order_by("id").values_list("pk", flat=True)[:WEBHOOK_REPLAY_MAX])
        Delivery.objects.filter(pk__in=pks, status=Delivery.Status.FAILED).update(
            status=Delivery.Status.PENDING, attempts=0, finished_at=None, next_attempt_at=now, replays=F("replays") + 1
        )
        detail = {"since": clock.iso(since), "until": clock.iso(until) if until else None, "replayed": len(pks)}
        audit(AuditEntry.Action.WEBHOOK_REPLAY, endpoint, by, detail)
        schedule_on_commit(
            list(Delivery.objects.filter(pk__in=pks).only("pk", "endpoint_id", "next_attempt_at")), mode="sooner"
        )
    return len(pks)
