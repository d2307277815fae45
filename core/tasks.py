"""Celery tasks of the ground floor: thin adapters (schedule: leaderboard_site/schedule.py)."""

from __future__ import annotations

from celery import shared_task

from . import apikeys


@shared_task
def sync_api_key_last_used() -> int:
    return apikeys.api_keys_sync_last_used()
