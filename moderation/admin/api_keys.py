"""Admin of API keys: created in the game's page or here, shown once, revoked (never deleted)."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from core import apikeys
from core.models import ApiKey


def _new_key_message(slug: str, raw_key: str) -> str:
    return f"New API key for {slug}: {raw_key} — copy it now, it will not be shown again."


def save_key(request: HttpRequest, api_key: ApiKey, slug: str) -> None:
    """Save a key from an admin form; a new one gets its secret here and is shown once."""
    raw_key = None
    if api_key.pk is None:
        # Same as apikeys.api_key_create: only the prefix and a hash are stored.
        raw_key, api_key.prefix, api_key.secret_hash = ApiKey.generate()
    api_key.save()
    if raw_key:
        messages.warning(request, _new_key_message(slug, raw_key))


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = (
        "prefix",
        "name",
        "game",
        "scope",
        "requests_per_minute",
        "items_per_minute",
        "created_at",
        "last_used_at",
        "is_revoked",
    )
    list_filter = ("game", "scope", ("revoked_at", admin.EmptyFieldListFilter))
    search_fields = ("prefix", "name", "game__slug")
    list_select_related = ("game",)
    actions = ("revoke_keys",)

    def get_fields(self, request: HttpRequest, obj: ApiKey | None = None) -> tuple[str, ...]:
        if obj is None:
            return ("game", "name", "scope", "requests_per_minute", "items_per_minute")
        return (
            "game",
            "prefix",
            "name",
            "scope",
            "requests_per_minute",
            "items_per_minute",
            "created_at",
            "last_used_at",
            "revoked_at",
        )

    def get_readonly_fields(self, request: HttpRequest, obj: ApiKey | None = None) -> tuple[str, ...]:
        if obj is None:
            return ()
        return ("game", "prefix", "created_at", "last_used_at", "revoked_at")

    @admin.display(boolean=True, description="revoked", ordering="revoked_at")
    def is_revoked(self, obj: ApiKey) -> bool:
        return obj.revoked

    def save_model(self, request: HttpRequest, obj: ApiKey, form: forms.ModelForm, change: bool) -> None:
        save_key(request, obj, obj.game.slug)

    @admin.action(description="Revoke")
    def revoke_keys(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        revoked = 0
        for api_key in queryset.select_related("game"):
            if not api_key.revoked:
                apikeys.api_key_revoke(api_key=api_key)
                revoked += 1
        self.message_user(request, f"Revoked {revoked} API key{'' if revoked == 1 else 's'}.", messages.SUCCESS)
