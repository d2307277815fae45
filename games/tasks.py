"""Celery tasks of the boards: thin adapters to services (schedule: leaderboard_site/schedule.py)."""

from __future__ import annotations

from celery import shared_task

from . import services


@shared_task
def sync_players() -> int:
    """Copy the players of the games marked as having new ones to the database."""
    written = services.players_sync_pending()
    services.names_index_backfill()
    return written


@shared_task
def sweep_pending_players() -> int:
    """Mark every game that has players waiting: the safety net for a lost mark."""
    return services.players_mark_all()
