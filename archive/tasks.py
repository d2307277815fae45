"""Celery tasks of the archive app: thin adapters to its services (schedule: leaderboard_site/schedule.py)."""

from __future__ import annotations

from celery import shared_task

from . import ledger, services


@shared_task
def run_close_jobs() -> int:
    """Return expired claims, then claim and archive the due close jobs of the boards the close index names."""
    return services.close_jobs_run()


@shared_task
def sweep_work() -> int:
    """The safety net's next slice: missing close jobs scheduled, lost work marks set again."""
    return services.work_sweep().scheduled


@shared_task
def catch_up_close_jobs() -> int:
    """Schedule a close job for any finished, unarchived period board that has none (every board at once)."""
    return services.close_jobs_catch_up()


@shared_task
def drain_ledger() -> int:
    """Copy the new ledger entries of the boards marked for the drain into the ScoreEvent table."""
    return ledger.ledger_drain()
