"""Admin of the ground floor's own records: dead letters (what a background copy could
not store) and the audit trail (who moderated what, when, why). Games, keys and players
are administered in moderation/admin/."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from .models import AuditEntry, DeadLetter


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


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin):
    """The audit trail: written by the services, never edited or deleted here."""

    list_display = ("at", "actor_name", "action", "game_slug", "player_id", "reason")
    list_filter = ("action", "game_slug")
    search_fields = ("player_id", "reason", "actor_name")
    date_hierarchy = "at"
    fields = ("at", "actor_name", "action", "game_slug", "player_id", "reason", "detail")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: AuditEntry | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: AuditEntry | None = None) -> bool:
        return False
