"""Upkeep: the sweep schedules pending deliveries Redis does not hold (a scheduling lost with a
broker or a Redis down, a Redis restored or flushed), so the database alone is enough to
deliver everything; the prune deletes deliveries finished past WEBHOOK_RETENTION_SECS."""

from __future__ import annotations

import datetime as dt

from django.conf import settings

from ..models import Delivery
from .queue import jobs_of, schedule_now

# The sweep looks this far ahead: a delivery due by then is in the queue after it.
WEBHOOK_SWEEP_AHEAD_SECS = 120
# Deliveries one sweep schedules at most (oldest due first; the next sweep goes on).
WEBHOOK_SWEEP_BATCH = 5000
# The prune deletes this many deliveries per statement, and at most this many statements per run.
WEBHOOK_PRUNE_BATCH = 1000
WEBHOOK_PRUNE_ROUNDS = 50


def deliveries_sweep(*, now: dt.datetime) -> int:
    """Schedule the pending deliveries due within WEBHOOK_SWEEP_AHEAD_SECS that Redis lacks
    (those it holds, due or claimed, are left as they are); returns how many it added."""
    ahead = now + dt.timedelta(seconds=WEBHOOK_SWEEP_AHEAD_SECS)
    due = list(
        Delivery.objects.filter(status=Delivery.Status.PENDING, next_attempt_at__lte=ahead)
        .order_by("next_attempt_at", "id")
        .only("pk", "endpoint_id", "next_attempt_at")[:WEBHOOK_SWEEP_BATCH]
    )
    return schedule_now(jobs_of(due), mode="missing")


def deliveries_prune(*, now: dt.datetime) -> int:
    cutoff = now - dt.timedelta(seconds=settings.WEBHOOK_RETENTION_SECS)
    pruned = 0
    for _ in range(WEBHOOK_PRUNE_ROUNDS):
        pks = list(Delivery.objects.filter(finished_at__lt=cutoff).values_list("pk", flat=True)[:WEBHOOK_PRUNE_BATCH])
        if not pks:
            break
        Delivery.objects.filter(pk__in=pks).delete()
        pruned += len(pks)
    return pruned
