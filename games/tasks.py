"""Celery tasks: thin adapters to services."""

from __future__ import annotations

from celery import shared_task

from . import services


@shared_task
def sync_players() -> int:
    return services.players_sync_pending()


@shared_task
def sync_api_key_last_used() -> int:
    return services.api_keys_sync_last_used()
