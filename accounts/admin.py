from __future__ import annotations

from django.contrib import admin

from .models import PlayerLink


@admin.register(PlayerLink)
class PlayerLinkAdmin(admin.ModelAdmin):
    list_display = ("user", "game", "player_id", "linked_at")
    list_filter = ("game",)
    search_fields = ("user__username", "user__email", "player_id", "game__slug")
    list_select_related = ("user", "game")
    raw_id_fields = ("user",)
    date_hierarchy = "linked_at"
