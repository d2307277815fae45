"""Admin of players: rename, hide, unhide and erase, each with a reason that goes in the
audit trail. Rows are never deleted by Django's own delete: erasing goes through
moderation.services.player_erase, which also clears Redis and the ledger."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import OuterRef, QuerySet, Subquery
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from accounts.models import PlayerLink
from core import clock
from core.audit import Actor, checked_reason
from core.config import GameConfig
from core.errors import REDIS_DOWN_MESSAGE, REDIS_ERRORS, ServiceError
from core.models import AUDIT_REASON_MAX_CHARS, AuditEntry, Player
from core.redis import run_sync
from games import services as game_services
from presence import selectors as presence_selectors

from .. import services

# The player page shows this many of the player's latest audit entries.
AUDIT_PEEK_SIZE = 5
ERASE_PERMISSION = "core.delete_player"

REASON_HELP = "Why (kept in the audit trail with your name and the time)."


class PlayerForm(forms.ModelForm):
    reason = forms.CharField(
        required=False, max_length=AUDIT_REASON_MAX_CHARS, help_text=REASON_HELP + " Needed to rename, hide or unhide."
    )

    class Meta:
        model = Player
        fields = ("display_name", "hidden")

    def clean(self) -> dict[str, Any]:
        data: dict[str, Any] = super().clean() or {}
        if {"display_name", "hidden"} & set(self.changed_data):
            try:
                data["reason"] = checked_reason(data.get("reason") or "", required=True)
            except ServiceError as error:
                self.add_error("reason", error.message)
        return data


class ReasonForm(forms.Form):
    reason = forms.CharField(max_length=AUDIT_REASON_MAX_CHARS, help_text=REASON_HELP)


# What each confirmed act says and does: (title, button, what happens, done message).
ACTS: dict[str, tuple[str, str, str]] = {
    "hide": (
        "Hide",
        "They vanish from every board at once and their scores are refused until they are unhidden. "
        "Nothing is lost: unhiding restores them exactly.",
        "Hid {n} from every board.",
    ),
    "unhide": ("Unhide", "They come back on every board with the scores they had.", "Unhid {n} on every board again."),
    "erase": (
        "Erase",
        "Everything of them goes, for good: boards, name, presence, account links, idempotency records "
        "and score events. Past periods keep their ranks, held by “deleted player”. This is what an "
        "erasure request (GDPR) needs; it cannot be undone. A later score under the same id starts a new player.",
        "Erased {n}.",
    ),
}


def _players(count: int) -> str:
    return f"{count} player{'' if count == 1 else 's'}"


@admin.register(Player)
class PlayerAdmin(admin.ModelAdmin):
    form = PlayerForm
    list_display = ("player_id", "display_name", "game", "hidden", "linked_user", "first_seen_at")
    list_filter = ("game", "hidden")
    search_fields = ("player_id", "display_name")
    list_select_related = ("game",)
    fields = (
        "game",
        "player_id",
        "display_name",
        "hidden",
        "reason",
        "first_seen_at",
        "linked_user",
        "presence",
        "score_events",
        "audit_trail",
        "erase",
    )
    # All but what the form edits: the rest are read-only, or computed here.
    readonly_fields = tuple(f for f in fields if f not in ("display_name", "hidden", "reason"))
    actions = ("hide_players", "unhide_players", "erase_players")

    def get_queryset(self, request: HttpRequest) -> QuerySet[Player]:
        # The services read player.game inside the Redis bridge, where a lazy query cannot run.
        linked = PlayerLink.objects.filter(game=OuterRef("game"), player_id=OuterRef("player_id"))
        return (
            super()
            .get_queryset(request)
            .select_related("game")
            .annotate(linked_username=Subquery(linked.values("user__username")[:1]))
        )

    @admin.display(description="linked user", ordering="linked_username")
    def linked_user(self, obj: Player) -> str:
        return getattr(obj, "linked_username", None) or "—"

    @admin.display(description="score events")
    def score_events(self, obj: Player) -> SafeString:
        """The player's ledger (read-only, with the correction form one click away)."""
        url = reverse("admin:archive_scoreevent_changelist")
        query = urlencode({"game__id__exact": obj.game_id, "player_id": obj.player_id})
        return format_html('<a href="{}?{}">Score events of {}</a>', url, query, obj.player_id)

    @admin.display(description="presence")
    def presence(self, obj: Player) -> str:
        game = GameConfig.from_model(obj.game, "0")
        try:
            found = run_sync(lambda: presence_selectors.player_presence(game=game, player_id=obj.player_id))
        except REDIS_ERRORS:
            return "Redis unavailable"
        if found.online:
            return "online now"
        return f"last seen {clock.shown(found.last_seen)}" if found.last_seen else "never seen online"

    @admin.display(description="audit trail")
    def audit_trail(self, obj: Player) -> SafeString | str:
        entries = list(AuditEntry.objects.filter(game_slug=obj.game.slug, player_id=obj.player_id)[:AUDIT_PEEK_SIZE])
        if not entries:
            return "No moderation yet."
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            ((clock.shown(e.at), e.actor_name, e.get_action_display(), e.reason) for e in entries),
        )
        url = reverse("admin:core_auditentry_changelist")
        query = urlencode({"game_slug": obj.game.slug, "player_id": obj.player_id})
        return format_html(
            "<table><thead><tr><th>when</th><th>who</th><th>what</th><th>why</th></tr></thead><tbody>{}</tbody></table>"
            '<p><a href="{}?{}">Every entry for {}</a></p>',
            rows,
            url,
            query,
            obj.player_id,
        )

    @admin.display(description="erase")
    def erase(self, obj: Player) -> SafeString:
        url = reverse("admin:core_player_erase", args=[obj.pk])
        return format_html('<a class="deletelink" href="{}">Erase this player everywhere…</a>', url)

    def has_add_permission(self, request: HttpRequest) -> bool:
        # Rows mirror players first seen in Redis (services.players_sync_pending).
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Player | None = None) -> bool:
        # Django's delete would leave the player on every board: erase instead.
        return False

    def has_erase_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(ERASE_PERMISSION)

    def get_urls(self) -> list[URLPattern]:
        view = self.admin_site.admin_view(self.erase_view)
        return [path("<path:object_id>/erase/", view, name="core_player_erase"), *super().get_urls()]

    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        # The view runs in one transaction, so a Redis failure here rolls the row back too.
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except REDIS_ERRORS:
            self.message_user(request, REDIS_DOWN_MESSAGE, messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())

    def save_model(self, request: HttpRequest, obj: Player, form: forms.ModelForm, change: bool) -> None:
        by, reason = Actor.of(request.user), form.cleaned_data.get("reason", "")
        if "display_name" in form.changed_data:
            game_services.player_rename(player=obj, display_name=obj.display_name, by=by, reason=reason)
        if "hidden" in form.changed_data:
            game_services.player_set_hidden(
                game=obj.game, player_id=obj.player_id, hidden=obj.hidden, by=by, reason=reason
            )

    # ------------------------------------------------------------------ confirmed acts

    def _act(self, request: HttpRequest, act: str, players: list[Player], back: str) -> HttpResponse | None:
        """The confirmation page of an act (with its reason), or the act once confirmed."""
        form = ReasonForm(request.POST if "confirm" in request.POST else None)
        if form.is_bound and form.is_valid():
            self._apply(request, act, players, form.cleaned_data["reason"])
            return None
        title, explains, _ = ACTS[act]
        context = {
            **self.admin_site.each_context(request),
            "title": f"{title} {_players(len(players))}?",
            "opts": self.opts,
            "act": act,
            "verb": title,
            "explains": explains,
            "players": players,
            "form": form,
            "back": back,
            "action_name": request.POST.get("action", ""),
        }
        return TemplateResponse(request, "admin/core/player/confirm.html", context)

    def _apply(self, request: HttpRequest, act: str, players: list[Player], reason: str) -> None:
        by = Actor.of(request.user)
        do: dict[str, Callable[[Player], object]] = {
            "hide": lambda p: game_services.player_set_hidden(
                game=p.game, player_id=p.player_id, hidden=True, by=by, reason=reason
            ),
            "unhide": lambda p: game_services.player_set_hidden(
                game=p.game, player_id=p.player_id, hidden=False, by=by, reason=reason
            ),
            "erase": lambda p: services.player_erase(game=p.game, player_id=p.player_id, reason=reason, by=by),
        }
        done = 0
        try:
            for player in players:
                do[act](player)
                done += 1
        except REDIS_ERRORS:
            self.message_user(request, f"Redis is unavailable; stopped after {_players(done)}.", messages.ERROR)
            return
        except ServiceError as error:
            self.message_user(request, f"Stopped after {_players(done)}: {error.message}", messages.ERROR)
            return
        self.message_user(request, ACTS[act][2].format(n=_players(done)), messages.SUCCESS)

    def _bulk(self, request: HttpRequest, act: str, queryset: QuerySet[Player]) -> HttpResponse | None:
        return self._act(request, act, list(queryset), reverse("admin:core_player_changelist"))

    @admin.action(description="Hide from every board…", permissions=["change"])
    def hide_players(self, request: HttpRequest, queryset: QuerySet[Player]) -> HttpResponse | None:
        return self._bulk(request, "hide", queryset)

    @admin.action(description="Unhide…", permissions=["change"])
    def unhide_players(self, request: HttpRequest, queryset: QuerySet[Player]) -> HttpResponse | None:
        return self._bulk(request, "unhide", queryset)

    @admin.action(description="Erase everywhere (GDPR)…", permissions=["erase"])
    def erase_players(self, request: HttpRequest, queryset: QuerySet[Player]) -> HttpResponse | None:
        return self._bulk(request, "erase", queryset)

    def erase_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The player page's "Erase this player everywhere…"."""
        if not self.has_erase_permission(request):
            raise PermissionDenied
        player = get_object_or_404(self.get_queryset(request), pk=object_id)
        back = reverse("admin:core_player_change", args=[player.pk])
        response = self._act(request, "erase", [player], back)
        return response or HttpResponseRedirect(reverse("admin:core_player_changelist"))
