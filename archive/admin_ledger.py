"""Admin of the score ledger: every player's score events (read-only), and the
"Correct a score" view, which adapts a form to archive.ledger.score_correct."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.http import urlencode

from core.audit import Actor
from core.errors import REDIS_DOWN_MESSAGE, REDIS_ERRORS, ServiceError
from core.models import MAX_SAFE_SCORE, Game, Leaderboard
from core.text import validate_single_line

from . import ledger
from .models import ScoreEvent

# A correction adds a ledger event, so it takes the permission to add one.
CORRECT_PERMISSION = "archive.add_scoreevent"
CORRECT_URL_NAME = "admin:archive_scoreevent_correct"


@admin.register(ScoreEvent)
class ScoreEventAdmin(admin.ModelAdmin):
    """The ledger as the drain copied it: never edited here (a correction is a new event)."""

    change_list_template = "admin/archive/scoreevent/change_list.html"
    # Who and what first: with the filters beside it, a list of nine columns led by the game and
    # ending with the event id pushed the player off a 1280 px screen. The id and the mode are
    # on each event's page.
    list_display = ("at", "player_id", "display_name", "value", "kind", "leaderboard", "game")
    list_filter = ("game", "kind")
    search_fields = ("player_id",)
    list_select_related = ("game", "leaderboard")
    ordering = ("-stream_ms", "-stream_seq")
    fields = (
        "game",
        "event_id",
        "kind",
        "player_id",
        "display_name",
        "value",
        "mode",
        "at",
        "reason",
    )
    readonly_fields = fields
    actions = ("correct_player",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: ScoreEvent | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: ScoreEvent | None = None) -> bool:
        return False

    def has_correct_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(CORRECT_PERMISSION)

    @admin.action(description="Correct the score of this event's player", permissions=["correct"])
    def correct_player(self, request: HttpRequest, queryset: QuerySet[ScoreEvent]) -> HttpResponse | None:
        players = list(queryset.order_by().values_list("leaderboard_id", "player_id").distinct()[:2])
        if len(players) != 1:
            self.message_user(request, "Select the events of one player to correct their score.", messages.WARNING)
            return None
        ((board_id, player_id),) = players
        return HttpResponseRedirect(
            f"{reverse(CORRECT_URL_NAME)}?{urlencode({'leaderboard': str(board_id), 'player_id': str(player_id)})}"
        )

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, object] | None = None) -> HttpResponse:
        context = {**(extra_context or {}), "can_correct": self.has_correct_permission(request)}
        return super().changelist_view(request, context)

    def get_urls(self) -> list[URLPattern]:
        view = self.admin_site.admin_view(self.correct_view)
        return [path("correct/", view, name=CORRECT_URL_NAME.removeprefix("admin:")), *super().get_urls()]

    def correct_view(self, request: HttpRequest) -> HttpResponse:
        """GET: the correction form (prefilled from ?leaderboard=&player_id=); POST: apply it."""
        if not self.has_correct_permission(request):
            raise PermissionDenied
        if request.method == "POST":
            form = CorrectionForm(request.POST)
            if form.is_valid() and self._correct(request, form):
                board = form.cleaned_data["leaderboard"]
                return HttpResponseRedirect(self._events_url(board.game, form.cleaned_data["player_id"]))
        else:
            form = CorrectionForm(initial=request.GET.dict())
        context = {
            **self.admin_site.each_context(request),
            "title": "Correct a score",
            "opts": self.opts,
            "form": form,
        }
        return TemplateResponse(request, "admin/archive/scoreevent/correct.html", context)

    def _correct(self, request: HttpRequest, form: CorrectionForm) -> bool:
        data = form.cleaned_data
        board: Leaderboard = data["leaderboard"]
        game = board.game
        try:
            corrected = ledger.score_correct(
                board=board,
                player_id=data["player_id"],
                value=data["value"],
                reason=data["reason"],
                by=Actor.of(request.user),
            )
        except ServiceError as error:
            if error.field in form.fields:
                form.add_error(error.field, error.message)
            else:
                form.add_error(None, error.message)
            self.message_user(request, f"Nothing was changed: {error.message}", messages.ERROR)
            return False
        except REDIS_ERRORS:
            self.message_user(request, REDIS_DOWN_MESSAGE, messages.ERROR)
            return False
        standings = ", ".join(f"{s.period} {s.period_id}: {s.score} (#{s.rank})" for s in corrected.periods.values())
        self.message_user(
            request,
            f"Corrected {corrected.player_id} in {game.slug}: {standings}. "
            "Its ledger event appears here within seconds.",
            messages.SUCCESS,
        )
        return True

    def _events_url(self, game: Game, player_id: str) -> str:
        query = urlencode({"game__id__exact": str(game.pk), "q": player_id})
        return f"{reverse('admin:archive_scoreevent_changelist')}?{query}"


class CorrectionForm(forms.Form):
    leaderboard = forms.ModelChoiceField(
        queryset=Leaderboard.objects.select_related("game").order_by("game__name", "id"), label="Game and leaderboard"
    )
    player_id = forms.CharField(max_length=64)
    value = forms.IntegerField(
        min_value=-MAX_SAFE_SCORE,
        max_value=MAX_SAFE_SCORE,
        help_text="Increment boards: the amount to add (negative to take away). "
        "Best and latest boards: the player's new score in the current periods, even if lower than their best.",
    )
    reason = forms.CharField(
        max_length=ledger.CORRECTION_REASON_MAX_CHARS,
        required=False,
        widget=forms.TextInput,
        validators=[validate_single_line],
    )
