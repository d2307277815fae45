"""Celery tasks of the boards: thin adapters to services (schedule: leaderboard_site/schedule.py)."""

from __future__ import annotations

from celery import shared_task

from . import services


@shared_task
def sync_players() -> int:
    written = services.players_sync_pending()
    services.names_index_backfill()
    return written
