"""Admin of the ground floor's own records: dead letters (what a background copy could
not store). Games, keys and players are administered in moderation/admin.py."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from .models import DeadLetter


@admin.register(DeadLetter)
class DeadLetterAdmin(admin.ModelAdmin):
    """Read-only; delete a letter once what made it fail is fixed (or it no longer matters)."""

    list_display = ("created_at", "game", "source", "key", "error")
    list_filter = ("source", "game")
    search_fields = ("key", "error")
    list_select_related = ("game",)
    fields = ("game", "source", "key", "payload", "error", "created_at")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: DeadLetter | None = None) -> bool:
        return False
