"""Admin of games: the settings in a few compact sections with the API keys first, a competing
board's rules in words, its current period and ending a season now (competition.py), and a
deletion that says what goes and goes through moderation.services.game_delete."""

from __future__ import annotations

from typing import Any
from zoneinfo import ZoneInfo

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.forms import BaseInlineFormSet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.safestring import SafeString

from archive.services import leaderboard_deactivate
from core import board_rules, clock
from core.audit import Actor
from core.errors import REDIS_DOWN_MESSAGE, REDIS_ERRORS, ServiceError
from core.models import AUDIT_REASON_MAX_CHARS, ApiKey, Game, Leaderboard
from games.leaderboards import leaderboard_reopen_mark

from .. import selectors, services
from .api_keys import save_key
from .competition import end_competition_view, end_link, preview_html, rules_html


class LeaderboardForm(forms.ModelForm):
    windows = forms.MultipleChoiceField(
        choices=[(w, w) for w in board_rules.WINDOWS],
        widget=forms.CheckboxSelectMultiple,
        help_text="custom resets on the cron below, or spans the season when there is no cron.",
    )

    class Meta:
        model = Leaderboard
        fields = "__all__"
        # A line or two: the board's settings, not its description, fill the inline.
        widgets = {"description": forms.Textarea(attrs={"rows": 2})}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            # A board's Redis keys are named after its slug, and its sort keys are signed by
            # its order: changing either on an existing board would orphan or invert them.
            for name in ("slug", "order"):
                self.fields[name].disabled = True

    def clean_windows(self) -> list[str]:
        chosen = set(self.cleaned_data["windows"])
        # Canonical order, so the stored list never depends on the order of the checkboxes.
        return [w for w in board_rules.WINDOWS if w in chosen]


class LeaderboardInline(admin.StackedInline):
    model = Leaderboard
    form = LeaderboardForm
    extra = 0
    # Deactivate a board instead: its archives stay readable.
    can_delete = False
    readonly_fields = ("next_resets", "rules_in_words", "this_period", "end_now")
    fieldsets = (
        (None, {"fields": (("name", "slug"), "active", "description")}),
        ("Scores", {"fields": (("mode", "order", "ties"), ("min_score", "max_score"), "format")}),
        ("Windows", {"fields": ("windows", ("cron", "timezone"), "next_resets", ("starts_at", "ends_at"))}),
        (
            "Competition",
            {
                "fields": (
                    ("competition_window", "entry"),
                    ("max_entrants", "entry_window_secs", "max_attempts"),
                    ("cohort_size", "cohort_fill", "cohort_by"),
                    "tiers",
                    ("start_tier", "min_scores"),
                    "rewards",
                    ("claim_window_secs", "settle_delay_secs"),
                    "rules_in_words",
                    "this_period",
                    "end_now",
                )
            },
        ),
    )

    @admin.display(description="next resets")
    def next_resets(self, obj: Leaderboard) -> str:
        if not obj.pk or not obj.cron:
            return "—"
        return board_preview(obj)

    @admin.display(description="rules in words")
    def rules_in_words(self, obj: Leaderboard) -> SafeString | str:
        return rules_html(obj)

    @admin.display(description="this period")
    def this_period(self, obj: Leaderboard) -> SafeString | str:
        return preview_html(obj)

    @admin.display(description="end now")
    def end_now(self, obj: Leaderboard) -> SafeString | str:
        return end_link(obj)


def board_preview(board: Leaderboard) -> str:
    """The custom window's cron in words and its next three resets, in the board's zone."""
    tz = ZoneInfo(board.zone_name)
    resets = board_rules.cron_next(board.cron, tz, clock.now(), 3)
    shown = ", ".join(r.astimezone(tz).strftime("%a %Y-%m-%d %H:%M") for r in resets)
    return f"{board_rules.cron_explain(board.cron)} ({board.zone_name}): {shown}"


class ApiKeyInline(admin.TabularInline):
    model = ApiKey
    extra = 0
    # Revoke instead (ApiKey admin): a revoked key still explains a client's 403.
    can_delete = False
    fields = (
        "name",
        "scope",
        "requests_per_minute",
        "items_per_minute",
        "prefix",
        "created_at",
        "last_used_at",
        "is_revoked",
    )
    readonly_fields = ("prefix", "created_at", "last_used_at", "is_revoked")
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


@admin.register(Game)
class GameAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "board_count", "active")
    list_filter = ("active",)
    search_fields = ("name", "slug", "description")
    inlines = (ApiKeyInline, LeaderboardInline)
    # The API keys come first on the page (moderation/templates/admin/core/game/change_form.html).
    change_form_template = "admin/core/game/change_form.html"
    fieldsets = (
        (None, {"fields": (("name", "slug"), "active", "description")}),
        ("Settings", {"fields": ("timezone", "max_submissions_per_minute", "presence_timeout_secs", "max_boards")}),
    )

    def get_readonly_fields(self, request: HttpRequest, obj: Game | None = None) -> tuple[str, ...]:
        # Every Redis key of a game is named after its slug: changing it would orphan them.
        return () if obj is None else ("slug",)

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
        if formset.model is Leaderboard:
            self._apply_active_changes(request, formset)
        if formset.model is not ApiKey:
            super().save_formset(request, form, formset, change)
            return
        for api_key in formset.save(commit=False):
            save_key(request, api_key, form.instance.slug)
        formset.save_m2m()

    def _apply_active_changes(self, request: HttpRequest, formset: BaseInlineFormSet) -> None:
        """A board whose "active" was unchecked is taken out of play as DELETE does it (its periods
        archived at once, the act audited and announced), before the rest of its row is saved; one
        checked again comes back as a PUT brings it (its periods' new generations)."""
        for board_form in formset.forms:
            instance = board_form.instance
            if not instance.pk or "active" not in board_form.changed_data:
                continue
            if instance.active:
                leaderboard_reopen_mark(board=instance)
                continue
            board = Leaderboard.objects.select_related("game").get(pk=instance.pk)
            leaderboard_deactivate(board=board, by=Actor.of(request.user))
            instance.closed_at = board.closed_at  # the row saved next must keep it

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
