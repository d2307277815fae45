"""Putting deliveries in the Redis queue, from sync code, after their rows commit. Best effort:
a delivery Redis did not take is pending in the database, and the sweep schedules it."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Literal

from celery import current_app
from django.db import transaction

from core import clock
from core.errors import REDIS_FAILURES
from core.redis import get_redis, run_sync

from .. import scripts
from ..models import Delivery

logger = logging.getLogger("webhooks")

# webhooks/tasks.py's task, by name (a service does not import its adapters).
DELIVER_TASK = "webhooks.tasks.deliver_webhooks"


def jobs_of(deliveries: Sequence[Delivery]) -> list[tuple[str, int]]:
    return [
        (
            scripts.job_name(endpoint_pk=d.endpoint_id, delivery_pk=d.pk),
            clock.to_ms(d.next_attempt_at or clock.now()),
        )
        for d in deliveries
    ]


def schedule_now(jobs: Sequence[tuple[str, int]], *, mode: Literal["missing", "sooner"]) -> int:
    """Schedule ``jobs`` and wake a delivery run; 0 when Redis could not be told (the sweep will)."""
    if not jobs:
        return 0
    try:
        changed = run_sync(lambda: scripts.webhook_schedule(get_redis(), jobs=jobs, mode=mode))
    except REDIS_FAILURES as error:
        logger.warning(
            "could not schedule %d webhook deliveries (%s: %s); the sweep will", len(jobs), type(error).__name__, error
        )
        return 0
    if changed:
        wake()
    return changed


def schedule_on_commit(deliveries: Sequence[Delivery], *, mode: Literal["missing", "sooner"]) -> None:
    jobs = jobs_of(deliveries)
    if jobs:
        transaction.on_commit(lambda: schedule_now(jobs, mode=mode), robust=True)


def wake() -> None:
    """Queue a delivery run now (beat's runs catch up if the broker is down)."""
    try:
        current_app.send_task(DELIVER_TASK, retry=False)
    except Exception as error:  # the broker unreachable: beat's next run delivers
        logger.warning("could not queue a webhook delivery run (%s: %s)", type(error).__name__, error)


def forget_on_commit(endpoint_pk: int) -> None:
    """After a deleted endpoint's transaction commits: drop its parked deliveries (best effort:
    a parked job whose row is gone is dropped when a run claims it anyway)."""

    def forget() -> None:
        try:
            run_sync(lambda: scripts.webhook_forget(get_redis(), endpoint_pk=endpoint_pk))
        except REDIS_FAILURES as error:
            logger.warning("could not forget webhook endpoint %s's parked jobs (%s)", endpoint_pk, error)

    transaction.on_commit(forget, robust=True)
