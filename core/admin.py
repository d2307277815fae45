"""Admin of the ground floor's own records: dead letters (what a background copy could
not store), the audit trail (who moderated what, when, why) and domain events with their
deliveries (core/outbox/). Games, keys and players are administered in moderation/admin/."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from .models import AuditEntry, DeadLetter, Event, EventDelivery


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


class _EventDeliveryInline(admin.TabularInline):
    model = EventDelivery
    fields = ("handler", "status", "attempts", "next_attempt_at", "delivered_at", "last_error")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Event | None = None) -> bool:
        return False


@admin.register(Event)
class EventAdmin(admin.ModelAdmin):
    """Domain events, as written with their facts, and each handler's delivery (read-only: the
    delivery runs write them; a failed handler is retried by itself, see docs/events.md)."""

    list_display = ("created_at", "type", "game_slug", "event_id", "delivered_at", "next_attempt_at", "attempts")
    list_filter = ("type", ("delivered_at", admin.EmptyFieldListFilter))
    search_fields = ("event_id", "game_slug")
    date_hierarchy = "created_at"
    fields = ("event_id", "type", "version", "game_slug", "created_at", "data", "delivered_at", "next_attempt_at")
    readonly_fields = fields
    inlines = [_EventDeliveryInline]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Event | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Event | None = None) -> bool:
        return False
