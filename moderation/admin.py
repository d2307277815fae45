"""Django admin: adapts forms and actions to services; it holds no business logic of its own."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django import forms
from django.contrib import admin, messages
from django.db.models import OuterRef, QuerySet, Subquery
from django.forms import BaseInlineFormSet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from accounts.models import PlayerLink
from core import apikeys
from core.config import GameConfig
from core.errors import REDIS_DOWN_MESSAGE, REDIS_ERRORS
from core.models import PERIOD_KINDS, ApiKey, Game, Player
from core.redis import run_sync
from games import selectors, services
from presence import selectors as presence_selectors

# How many entries of each current board, and how many online players, the game change page peeks at.
PEEK_TOP_N = 20


def _new_key_message(slug: str, raw_key: str) -> str:
    return f"New API key for {slug}: {raw_key} — copy it now, it will not be shown again."


def _save_key(request: HttpRequest, api_key: ApiKey, slug: str) -> None:
    """Save a key from an admin form; a new one gets its secret here and is shown once."""
    raw_key = None
    if api_key.pk is None:
        # Same as apikeys.api_key_create: only the prefix and a hash are stored.
        raw_key, api_key.prefix, api_key.secret_hash = ApiKey.generate()
    api_key.save()
    if raw_key:
        messages.warning(request, _new_key_message(slug, raw_key))


# --------------------------------------------------------------------------- games


class GameForm(forms.ModelForm):
    periods = forms.MultipleChoiceField(
        choices=[(p, p) for p in PERIOD_KINDS],
        widget=forms.CheckboxSelectMultiple,
        help_text="The boards this game keeps.",
    )

    class Meta:
        model = Game
        fields = "__all__"
        help_texts = {"timezone": "IANA name such as Europe/Paris: periods roll over at its local midnight."}

    def clean_periods(self) -> list[str]:
        chosen = set(self.cleaned_data["periods"])
        # Canonical order, so the stored list never depends on the order of the checkboxes.
        return [p for p in PERIOD_KINDS if p in chosen]


class ApiKeyInline(admin.TabularInline):
    model = ApiKey
    extra = 0
    # Revoke instead (ApiKey admin): a revoked key still explains a client's 403.
    can_delete = False
    fields = ("name", "requests_per_minute", "items_per_minute", "prefix", "created_at", "last_used_at", "is_revoked")
    readonly_fields = ("prefix", "created_at", "last_used_at", "is_revoked")
    show_change_link = True

    @admin.display(boolean=True, description="revoked")
    def is_revoked(self, obj: ApiKey) -> bool:
        return obj.revoked


async def _peek(game: GameConfig) -> list[selectors.Board]:
    return [await selectors.leaderboard_page(game=game, period=p, limit=PEEK_TOP_N) for p in game.periods]


def _board_table(board: selectors.Board) -> SafeString:
    caption = format_html(
        "<h4>{} {} — {} player{}</h4>",
        board.period.kind,
        board.period.id,
        board.total,
        "" if board.total == 1 else "s",
    )
    if not board.entries:
        return format_html("{}<p>No scores yet.</p>", caption)
    rows = format_html_join(
        "",
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
        ((e.rank, e.display_name, e.player_id, e.score) for e in board.entries),
    )
    return format_html(
        "{}<table><thead><tr><th>rank</th><th>name</th><th>player id</th><th>score</th></tr></thead>"
        "<tbody>{}</tbody></table>",
        caption,
        rows,
    )


@admin.register(Game)
class GameAdmin(admin.ModelAdmin):
    form = GameForm
    list_display = ("name", "slug", "mode", "order", "periods_kept", "active")
    list_filter = ("mode", "order", "active")
    search_fields = ("name", "slug", "description")
    inlines = (ApiKeyInline,)

    def get_readonly_fields(self, request: HttpRequest, obj: Game | None = None) -> tuple[str, ...]:
        if obj is None:
            return ("live_top", "online_now")
        # Every Redis key of a game is named after its slug, and boards store sort keys
        # signed by the order: changing either would orphan or invert the live boards.
        return ("slug", "order", "online_now", "live_top")

    @admin.display(description="periods")
    def periods_kept(self, obj: Game) -> str:
        return ", ".join(obj.periods)

    @admin.display(description=f"live top {PEEK_TOP_N}")
    def live_top(self, obj: Game | None) -> SafeString | str:
        if obj is None or obj.pk is None:
            return "—"
        game = GameConfig.from_model(obj, "0")
        try:
            boards = run_sync(lambda: _peek(game))
        except REDIS_ERRORS:
            return "Redis unavailable"
        return format_html_join("", "{}", ((_board_table(b),) for b in boards))

    @admin.display(description="online now")
    def online_now(self, obj: Game | None) -> SafeString | str:
        if obj is None or obj.pk is None:
            return "—"
        game = GameConfig.from_model(obj, "0")
        try:
            page = run_sync(lambda: presence_selectors.presence_page(game=game, limit=PEEK_TOP_N))
        except REDIS_ERRORS:
            return "Redis unavailable"
        summary = format_html(
            "<p>{} player{} online · {} watching (timeout {} s)</p>",
            page.online,
            "" if page.online == 1 else "s",
            page.watching,
            obj.presence_timeout_secs,
        )
        if not page.players:
            return summary
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            ((p.display_name, p.player_id, p.last_seen.isoformat(timespec="seconds")) for p in page.players),
        )
        return format_html(
            "{}<table><thead><tr><th>name</th><th>player id</th><th>last seen</th></tr></thead><tbody>{}</tbody>"
            "</table>",
            summary,
            rows,
        )

    def save_formset(
        self, request: HttpRequest, form: forms.ModelForm, formset: BaseInlineFormSet, change: bool
    ) -> None:
        if formset.model is not ApiKey:
            super().save_formset(request, form, formset, change)
            return
        for api_key in formset.save(commit=False):
            _save_key(request, api_key, form.instance.slug)
        formset.save_m2m()


# --------------------------------------------------------------------------- players


class PlayerForm(forms.ModelForm):
    class Meta:
        model = Player
        fields = ("display_name", "hidden")


@admin.register(Player)
class PlayerAdmin(admin.ModelAdmin):
    form = PlayerForm
    list_display = ("player_id", "display_name", "game", "hidden", "linked_user", "first_seen_at")
    list_filter = ("game", "hidden")
    search_fields = ("player_id", "display_name")
    list_select_related = ("game",)
    readonly_fields = ("game", "player_id", "first_seen_at", "linked_user", "presence", "score_events")
    fields = (
        "game",
        "player_id",
        "display_name",
        "hidden",
        "first_seen_at",
        "linked_user",
        "presence",
        "score_events",
    )
    actions = ("hide_players", "unhide_players")

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
        return f"last seen {found.last_seen.isoformat(timespec='seconds')}" if found.last_seen else "never seen online"

    def has_add_permission(self, request: HttpRequest) -> bool:
        # Rows mirror players first seen in Redis (services.players_sync_pending).
        return False

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
        if "display_name" in form.changed_data:
            services.player_rename(player=obj, display_name=obj.display_name)
        if "hidden" in form.changed_data:
            services.player_set_hidden(game=obj.game, player_id=obj.player_id, hidden=obj.hidden)

    def _set_hidden(self, request: HttpRequest, queryset: QuerySet[Player], hidden: bool) -> None:
        done = 0
        try:
            for player in queryset:
                services.player_set_hidden(game=player.game, player_id=player.player_id, hidden=hidden)
                done += 1
        except REDIS_ERRORS:
            self.message_user(request, f"Redis is unavailable; stopped after {done} player(s).", messages.ERROR)
            return
        verb = "Hid" if hidden else "Unhid"
        where = "from every board" if hidden else "on every board again"
        self.message_user(request, f"{verb} {done} player{'' if done == 1 else 's'} {where}.", messages.SUCCESS)

    @admin.action(description="Hide from every board")
    def hide_players(self, request: HttpRequest, queryset: QuerySet[Player]) -> None:
        self._set_hidden(request, queryset, True)

    @admin.action(description="Unhide")
    def unhide_players(self, request: HttpRequest, queryset: QuerySet[Player]) -> None:
        self._set_hidden(request, queryset, False)


# --------------------------------------------------------------------------- API keys


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = (
        "prefix",
        "name",
        "game",
        "requests_per_minute",
        "items_per_minute",
        "created_at",
        "last_used_at",
        "is_revoked",
    )
    list_filter = ("game", ("revoked_at", admin.EmptyFieldListFilter))
    search_fields = ("prefix", "name", "game__slug")
    list_select_related = ("game",)
    actions = ("revoke_keys",)

    def get_fields(self, request: HttpRequest, obj: ApiKey | None = None) -> tuple[str, ...]:
        if obj is None:
            return ("game", "name", "requests_per_minute", "items_per_minute")
        return (
            "game",
            "prefix",
            "name",
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
        _save_key(request, obj, obj.game.slug)

    @admin.action(description="Revoke")
    def revoke_keys(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        revoked = 0
        for api_key in queryset.select_related("game"):
            if not api_key.revoked:
                apikeys.api_key_revoke(api_key=api_key)
                revoked += 1
        self.message_user(request, f"Revoked {revoked} API key{'' if revoked == 1 else 's'}.", messages.SUCCESS)
