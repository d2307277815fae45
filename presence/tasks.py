"""Celery tasks: thin adapters to presence services."""

from __future__ import annotations

from celery import shared_task

from . import services


@shared_task
def prune_presence() -> int:
    return services.presence_prune_all()
