"""Celery tasks of the competitions: thin adapters to services (schedule: leaderboard_site/schedule.py)."""

from __future__ import annotations

from celery import shared_task

from core import clock

from .services import cohorts, rewards

# Grants one run of the sweep expires at most (GRANT_EXPIRE_BATCH per transaction): a backlog
# (the sweep down for a day) is worked off over a few runs, none of them holding the worker long.
GRANT_EXPIRE_MAX_PER_RUN = 10_000


@shared_task
def split_cohorts() -> int:
    """Split the held entrants of every balanced period whose split time has passed."""
    return cohorts.cohorts_split_due()


@shared_task
def expire_grants() -> int:
    """Mark the pending rewards whose claim window has passed expired (a reward.expired each)."""
    return rewards.grants_expire(now=clock.now(), limit=GRANT_EXPIRE_MAX_PER_RUN)
