"""Admin of leaderboards: every board of every game in one searchable list, and each board on a
page of its own (its settings in a few sections, a competing board's rules in words, its
current period, ending a season now, its files to export). A game's page lists its boards as
links here (games.py). Taking a board out of play and bringing it back go through the same
services as the API's DELETE and PUT; every creation and change is in the audit trail."""

from __future__ import annotations

from typing import Any
from zoneinfo import ZoneInfo

from django import forms
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from archive.services import leaderboard_deactivate
from core import board_rules, clock
from core.audit import Action, Actor, audit_record
from core.models import Leaderboard
from games.leaderboards import SETTINGS, leaderboard_reopen_mark

from .competition import end_link, preview_html, rules_html


class LeaderboardForm(forms.ModelForm):
    windows = forms.MultipleChoiceField(
        choices=[(w, w) for w in board_rules.WINDOWS],
        widget=forms.CheckboxSelectMultiple,
        help_text="custom resets on the cron below, or spans the season when there is no cron.",
    )

    class Meta:
        model = Leaderboard
        fields = "__all__"
        # A line or two: the board's settings, not its description, fill the page.
        widgets = {"description": forms.Textarea(attrs={"rows": 2})}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            # A board's Redis keys are named after its game and slug, and its sort keys are
            # signed by its order: changing any of them on an existing board would orphan or
            # invert them.
            for name in ("game", "slug", "order"):
                if name in self.fields:
                    self.fields[name].disabled = True

    def clean_windows(self) -> list[str]:
        chosen = set(self.cleaned_data["windows"])
        # Canonical order, so the stored list never depends on the order of the checkboxes.
        return [w for w in board_rules.WINDOWS if w in chosen]


def board_preview(board: Leaderboard) -> str:
    """The custom window's cron in words and its next three resets, in the board's zone."""
    tz = ZoneInfo(board.zone_name)
    resets = board_rules.cron_next(board.cron, tz, clock.now(), 3)
    shown = ", ".join(r.astimezone(tz).strftime("%a %Y-%m-%d %H:%M") for r in resets)
    return f"{board_rules.cron_explain(board.cron)} ({board.zone_name}): {shown}"


def export_links(board: Leaderboard) -> SafeString | str:
    """Each window's current period as a file (archive/admin_archive.py streams it)."""
    if not board.pk:
        return "—"

    def url(window: str, fmt: str) -> str:
        return reverse("admin:archive_export", args=[board.pk, window, "current"]) + f"?format={fmt}"

    return format_html(
        "<ul class='export-links'>{}</ul>",
        format_html_join(
            "",
            '<li>{}: <a href="{}">CSV</a> · <a href="{}">JSON Lines</a></li>',
            ((window, url(window, "csv"), url(window, "jsonl")) for window in board.windows),
        ),
    )


@admin.register(Leaderboard)
class LeaderboardAdmin(admin.ModelAdmin):
    form = LeaderboardForm
    list_display = ("name", "slug", "game", "mode", "window_list", "active")
    list_display_links = ("name", "slug")
    list_filter = ("active", "mode", "game")
    search_fields = ("name", "slug", "game__slug", "game__name")
    list_select_related = ("game",)
    ordering = ("game__name", "slug")
    readonly_fields = ("next_resets", "exports", "rules_in_words", "this_period", "end_now")
    fieldsets = (
        (None, {"fields": ("game", ("name", "slug"), "active", "description")}),
        ("Scores", {"fields": (("mode", "order", "ties"), ("min_score", "max_score"), "format")}),
        (
            "Windows",
            {
                "fields": (
                    "windows",
                    "window_labels",
                    ("cron", "timezone"),
                    "next_resets",
                    ("starts_at", "ends_at"),
                    "exports",
                )
            },
        ),
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

    def get_queryset(self, request: HttpRequest) -> QuerySet[Leaderboard]:
        return super().get_queryset(request).select_related("game")

    def view_on_site(self, obj: Leaderboard) -> str:
        return reverse("live:game", args=[obj.game.slug]) + f"?board={obj.slug}"

    def has_delete_permission(self, request: HttpRequest, obj: Leaderboard | None = None) -> bool:
        return False  # take a board out of play instead (uncheck "active"): its archives stay readable

    @admin.display(description="windows")
    def window_list(self, obj: Leaderboard) -> str:
        return ", ".join(obj.windows)

    @admin.display(description="next resets")
    def next_resets(self, obj: Leaderboard) -> str:
        if not obj.pk or not obj.cron:
            return "—"
        return board_preview(obj)

    @admin.display(description="export the current period")
    def exports(self, obj: Leaderboard) -> SafeString | str:
        return export_links(obj)

    @admin.display(description="rules in words")
    def rules_in_words(self, obj: Leaderboard) -> SafeString | str:
        return rules_html(obj) if obj.pk else "—"

    @admin.display(description="this period")
    def this_period(self, obj: Leaderboard) -> SafeString | str:
        return preview_html(obj) if obj.pk else "—"

    @admin.display(description="end now")
    def end_now(self, obj: Leaderboard) -> SafeString | str:
        return end_link(obj) if obj.pk else "—"

    def save_model(self, request: HttpRequest, obj: Leaderboard, form: forms.ModelForm, change: bool) -> None:
        """A board whose "active" was unchecked is taken out of play as DELETE does it (its periods
        archived at once, the act audited and announced) before the rest is saved; one checked
        again comes back as a PUT brings it (its periods' new generations)."""
        by = Actor.of(request.user)
        before = Leaderboard.objects.get(pk=obj.pk) if change else Leaderboard(game=obj.game, slug=obj.slug)
        if change and "active" in form.changed_data:
            if obj.active:
                leaderboard_reopen_mark(board=obj)
            else:
                board = Leaderboard.objects.select_related("game").get(pk=obj.pk)
                leaderboard_deactivate(board=board, by=by)
                obj.closed_at = board.closed_at  # the row saved next must keep it
        super().save_model(request, obj, form, change)
        # Compared as stored: a form's changed_data also names JSON fields posted unchanged.
        changed = sorted(f for f in SETTINGS if getattr(obj, f) != getattr(before, f))
        if not change or changed:
            audit_record(
                action=Action.CHANGE_BOARD if change else Action.CREATE_BOARD,
                game_slug=obj.game.slug,
                by=by,
                detail={"board": obj.slug, "changed": changed},
            )
