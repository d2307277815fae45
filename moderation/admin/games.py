"""Admin of games: the API keys first as a short table, the settings in a few compact sections,
the boards as a list of links to their own pages (boards.py: a competing board's rules, its
period, ending a season now), and a deletion that says what goes and goes through
moderation.services.game_delete."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.forms import BaseInlineFormSet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from core import branding
from core.audit import Actor, audit_record
from core.errors import REDIS_DOWN_MESSAGE, REDIS_ERRORS, ServiceError
from core.models import AUDIT_REASON_MAX_CHARS, ApiKey, AuditEntry, Game

from .. import selectors, services
from .api_keys import save_key
from .competition import end_competition_view

Action = AuditEntry.Action
# A game's settings whose change the audit trail records (by name: the values are the studio's).
AUDITED_GAME_FIELDS = (
    "name",
    "description",
    "timezone",
    "max_submissions_per_minute",
    "max_boards",
    "presence_timeout_secs",
    "active",
    "short_name",
    "accent",
    "logo_version",
    "embed_origins",
)


class ApiKeyInline(admin.TabularInline):
    model = ApiKey
    extra = 0
    # Revoke instead (ApiKey admin): a revoked key still explains a client's 403.
    can_delete = False
    # A short table: a key's limits and dates are on its own page (the change link).
    fields = ("name", "scope", "prefix", "last_used_at", "is_revoked")
    readonly_fields = ("prefix", "last_used_at", "is_revoked")
    show_change_link = True

    @admin.display(boolean=True, description="revoked")
    def is_revoked(self, obj: ApiKey) -> bool:
        return obj.revoked


class DeleteGameForm(forms.Form):
    confirm_slug = forms.CharField(label="Type the game's slug to confirm", max_length=50)
    reason = forms.CharField(
        max_length=AUDIT_REASON_MAX_CHARS, help_text="Why it goes (kept in the audit trail after the game is gone)."
    )

    def __init__(self, *args: Any, slug: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.slug = slug

    def clean_confirm_slug(self) -> str:
        typed = self.cleaned_data["confirm_slug"].strip()
        if typed != self.slug:
            raise forms.ValidationError(f"Type {self.slug} exactly.")
        return typed


class OriginsField(forms.CharField):
    """A game's embed origins, one per line (stored as a list in their normal form)."""

    widget = forms.Textarea(attrs={"rows": 3, "placeholder": "https://studio.example"})

    def prepare_value(self, value: Any) -> Any:
        return "\n".join(value) if isinstance(value, list) else value

    def to_python(self, value: Any) -> list[str]:  # type: ignore[override]  # a list, from lines
        text = super().to_python(value) or ""
        return branding.origins_check(text.splitlines())


class GameForm(forms.ModelForm):
    embed_origins = OriginsField(
        required=False,
        help_text="Other websites that may show this game's boards live (the widget and the iframe, "
        "docs/embed.md): one origin per line, such as https://studio.example or http://localhost:3000.",
    )
    logo_upload = forms.FileField(
        required=False,
        label="Logo",
        help_text=f"PNG, JPEG, GIF or WebP, at most {branding.LOGO_MAX_BYTES // 1000} KB; shown 28-32 px high.",
    )
    logo_remove = forms.BooleanField(required=False, label="Remove the logo")

    class Meta:
        model = Game
        fields = "__all__"
        widgets = {"accent": forms.TextInput(attrs={"placeholder": "#1f6feb", "size": 8})}

    def clean_logo_upload(self) -> bytes | None:
        upload = self.cleaned_data.get("logo_upload")
        if upload is None:
            return None
        data = upload.read(branding.LOGO_MAX_BYTES + 1)
        branding.logo_type(data)  # refuses what is not a small raster image, with the reason
        return data


@admin.register(Game)
class GameAdmin(admin.ModelAdmin):
    form = GameForm
    list_display = ("name", "slug", "board_count", "active")
    list_filter = ("active",)
    search_fields = ("name", "slug", "description")
    inlines = (ApiKeyInline,)

    class Media:
        css = {"all": ["moderation/admin-game.css"]}

    # The API keys come first on the page (moderation/templates/admin/core/game/change_form.html).
    change_form_template = "admin/core/game/change_form.html"
    fieldsets = (
        (None, {"fields": (("name", "slug"), "active", "description")}),
        ("Settings", {"fields": ("timezone", "max_submissions_per_minute", "presence_timeout_secs", "max_boards")}),
        ("Leaderboards", {"fields": ("board_list",)}),
        (
            "Branding and embedding",
            {"fields": (("short_name", "accent"), "logo_shown", "logo_upload", "logo_remove", "embed_origins")},
        ),
    )

    def get_readonly_fields(self, request: HttpRequest, obj: Game | None = None) -> tuple[str, ...]:
        # Every Redis key of a game is named after its slug: changing it would orphan them.
        return ("board_list", "logo_shown") if obj is None else ("slug", "board_list", "logo_shown")

    def view_on_site(self, obj: Game) -> str:
        return reverse("live:game", args=[obj.slug])

    @admin.display(description="leaderboards")
    def board_list(self, obj: Game) -> SafeString | str:
        """A line per board, linking to its own page; a new one is added there."""
        if not obj.pk:
            return "Save the game first; then add its leaderboards."
        add = reverse("admin:core_leaderboard_add") + f"?game={obj.pk}"
        rows = format_html_join(
            "",
            '<li><a href="{}">{}</a> <code>{}</code> · {} · {}{}</li>',
            (
                (
                    reverse("admin:core_leaderboard_change", args=[board.pk]),
                    board.name,
                    board.slug,
                    board.mode,
                    ", ".join(board.windows),
                    "" if board.active else " · out of play",
                )
                for board in obj.leaderboards.order_by("slug")
            ),
        )
        return format_html(
            '<ul class="board-list">{}</ul><p><a class="addlink" href="{}">Add a leaderboard</a></p>', rows, add
        )

    @admin.display(description="current logo")
    def logo_shown(self, obj: Game) -> SafeString | str:
        if not obj.logo_version:
            return "None yet."
        return format_html('<img class="game-logo" src="{}" alt="">', branding.logo_path(obj.slug, obj.logo_version))

    def save_model(self, request: HttpRequest, obj: Game, form: forms.ModelForm, change: bool) -> None:
        """The logo set or removed, then the game saved; a change of its settings is audited."""
        before = Game.objects.defer("logo").get(pk=obj.pk) if change else None
        upload = form.cleaned_data.get("logo_upload")
        if upload is not None:
            obj.logo, obj.logo_type = upload, branding.logo_type(upload)
            obj.logo_version = branding.logo_version(upload)
        elif form.cleaned_data.get("logo_remove"):
            obj.logo, obj.logo_type, obj.logo_version = None, "", ""
        super().save_model(request, obj, form, change)
        if before is not None:
            changed = sorted(f for f in AUDITED_GAME_FIELDS if getattr(obj, f) != getattr(before, f))
            if changed:
                audit_record(
                    action=Action.CHANGE_GAME,
                    game_slug=obj.slug,
                    by=Actor.of(request.user),
                    detail={"changed": changed},
                )

    @admin.display(description="leaderboards")
    def board_count(self, obj: Game) -> int:
        return obj.leaderboards.count()

    def get_urls(self) -> list[URLPattern]:
        def end_view(request: HttpRequest, object_id: str, slug: str) -> HttpResponse:
            return end_competition_view(self, request, object_id, slug)

        view = self.admin_site.admin_view(end_view)
        end = path("<path:object_id>/leaderboards/<slug:slug>/end/", view, name="core_game_end_competition")
        return [end, *super().get_urls()]

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        # Deleting a game is one game at a time, from its page, through the service.
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    def save_formset(
        self, request: HttpRequest, form: forms.ModelForm, formset: BaseInlineFormSet, change: bool
    ) -> None:
        for api_key in formset.save(commit=False):
            save_key(request, api_key, form.instance.slug)
        formset.save_m2m()

    def delete_view(
        self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        """What deleting this game takes with it, and a confirmation (its slug, and why)."""
        game = get_object_or_404(Game, pk=object_id)
        if not self.has_delete_permission(request, game):
            raise PermissionDenied
        form = DeleteGameForm(request.POST or None, slug=game.slug)
        if request.method == "POST" and form.is_valid():
            done = self._delete(request, game, form)
            if done:
                return HttpResponseRedirect(reverse("admin:core_game_changelist"))
        try:
            summary = selectors.game_deletion_summary(game=game)
        except REDIS_ERRORS:
            self.message_user(request, REDIS_DOWN_MESSAGE, messages.ERROR)
            return HttpResponseRedirect(reverse("admin:core_game_change", args=[game.pk]))
        context = {
            **self.admin_site.each_context(request),
            "title": f"Delete {game.name}?",
            "opts": self.opts,
            "object": game,
            "form": form,
            "summary": summary,
        }
        return TemplateResponse(request, "admin/core/game/delete.html", context)

    def _delete(self, request: HttpRequest, game: Game, form: DeleteGameForm) -> bool:
        try:
            deleted = services.game_delete(game=game, reason=form.cleaned_data["reason"], by=Actor.of(request.user))
        except ServiceError as error:
            form.add_error("reason" if error.field == "reason" else None, error.message)
            return False
        except REDIS_ERRORS:
            self.message_user(
                request, f"{REDIS_DOWN_MESSAGE} The game is inactive now; delete it again later.", messages.ERROR
            )
            return False
        rows = sum(deleted.rows.values())
        self.message_user(
            request,
            f"Deleted {game.name} ({deleted.slug}): {rows:,} rows and {deleted.redis_keys:,} Redis keys.",
            messages.SUCCESS,
        )
        return True
