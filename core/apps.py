from __future__ import annotations

from django.apps import AppConfig


class CoreConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "core"
    verbose_name = "Games and keys"

    def ready(self) -> None:
        from . import signals  # noqa: F401 - connects the config-cache invalidation
