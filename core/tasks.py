"""Celery tasks of the ground floor: thin adapters (schedule: leaderboard_site/schedule.py)."""

from __future__ import annotations

from celery import shared_task

from . import apikeys, outbox


@shared_task
def sync_api_key_last_used() -> int:
    return apikeys.api_keys_sync_last_used()


@shared_task
def deliver_events() -> int:
    """Queued when a transaction that wrote events commits, and by beat's sweep."""
    return outbox.outbox_deliver().events


@shared_task
def prune_events() -> int:
    return outbox.outbox_prune()
