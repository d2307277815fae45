"""Celery tasks of the webhooks app: thin adapters (schedule: leaderboard_site/schedule.py)."""

from __future__ import annotations

import asyncio

from asgiref.sync import sync_to_async
from celery import shared_task
from django.db import close_old_connections

from core import clock
from core.redis import close_redis

from .services import delivery, sweep


@shared_task
def deliver_webhooks() -> int:
    """Queued when deliveries are scheduled, and by beat: one run (one at a time) sends what is due."""

    async def run() -> int:
        try:
            result = await delivery.webhooks_run()
        finally:
            await close_redis()
            # The run's database work ran on asgiref's thread: let its connection go as a
            # request's would (CONN_MAX_AGE, or broken by a database restart).
            await sync_to_async(close_old_connections)()
        return result.delivered + result.retried + result.failed

    return asyncio.run(run())


@shared_task
def sweep_webhooks() -> int:
    """Pending deliveries Redis lost go back in its queue; finished ones past their retention go."""
    now = clock.now()
    scheduled = sweep.deliveries_sweep(now=now)
    sweep.deliveries_prune(now=now)
    return scheduled
