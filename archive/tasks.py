"""Celery tasks of the archive app: thin adapters to its services (schedule: leaderboard_site/schedule.py)."""

from __future__ import annotations

from celery import shared_task

from . import ledger, services


@shared_task
def run_close_jobs() -> int:
    """Return expired claims, then claim and archive every due period close job."""
    return services.close_jobs_run()


@shared_task
def catch_up_close_jobs() -> int:
    """Schedule a close job for any finished, unarchived period board that has none."""
    return services.close_jobs_catch_up()


@shared_task
def drain_ledger() -> int:
    """Copy every game's new ledger entries into the ScoreEvent table."""
    return ledger.ledger_drain()
