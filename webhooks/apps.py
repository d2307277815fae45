from __future__ import annotations

from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "webhooks"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from core import outbox

        from .services import enqueue

        # Every event type: the handler finds which endpoints want it.
        outbox.subscribe(enqueue.HANDLER_NAME, enqueue.event_enqueue)
