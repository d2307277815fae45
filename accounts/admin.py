from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.admin.forms import AdminAuthenticationForm

from core.errors import ServiceError

from . import services
from .models import PlayerLink


@admin.register(PlayerLink)
class PlayerLinkAdmin(admin.ModelAdmin):
    list_display = ("user", "game", "player_id", "linked_at")
    list_filter = ("game",)
    search_fields = ("user__username", "user__email", "player_id", "game__slug")
    list_select_related = ("user", "game")
    raw_id_fields = ("user",)
    date_hierarchy = "linked_at"


class LimitedAdminAuthenticationForm(AdminAuthenticationForm):
    """The admin's log-in, under the site log-in's limits (services.login_authenticate):
    without them, 40 wrong passwords and then the right one logged in."""

    def clean(self) -> dict[str, Any]:
        username = self.cleaned_data.get("username") or ""
        password = self.cleaned_data.get("password") or ""
        if not username or not password:
            return self.cleaned_data  # the fields say what is missing
        address = self.request.META.get("REMOTE_ADDR", "") if self.request is not None else ""
        try:
            self.user_cache = services.login_authenticate(username=username, password=password, ip=address)
        except ServiceError as error:
            if error.code == "too_many_logins":
                raise forms.ValidationError(error.message, code="too_many_logins") from None
            raise self.get_invalid_login_error() from None
        self.confirm_login_allowed(self.user_cache)
        return self.cleaned_data


admin.site.login_form = LimitedAdminAuthenticationForm
