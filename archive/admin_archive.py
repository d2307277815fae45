"""Admin of archived periods (read-only), their standings, and the close-job queue with
its dead letters and their retry action. Thin: reads and writes go through archive.services."""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from core.config import BoardConfig
from core.errors import REDIS_DOWN_MESSAGE, REDIS_ERRORS, ServiceError
from core.models import Leaderboard
from core.redis import run_sync

from . import exports, services
from .models import ArchivedPeriod, ArchivedStanding

# The archived period's page shows this many standings; the rest are a link away.
STANDINGS_PEEK_N = 20


class ReadOnlyAdmin(admin.ModelAdmin):
    """Archives are written by close jobs and `archive_period` only: admin reads them."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object | None = None) -> bool:
        return False


def _standings_url(archived: ArchivedPeriod) -> str:
    return reverse("admin:archive_archivedstanding_changelist") + f"?archived_period__id__exact={archived.pk}"


@admin.register(ArchivedPeriod)
class ArchivedPeriodAdmin(ReadOnlyAdmin):
    change_list_template = "admin/archive/archivedperiod/change_list.html"
    list_display = ("game", "period", "period_id", "starts_at", "ends_at", "total", "status", "archived_at", "rows")
    list_filter = ("game", "period", "status")
    search_fields = ("period_id", "game__slug")
    list_select_related = ("game",)
    fields = ("game", "period", "period_id", "starts_at", "ends_at", "status", "total", "archived_at", "export", "top")
    readonly_fields = fields

    @admin.display(description="standings")
    def rows(self, obj: ArchivedPeriod) -> SafeString:
        return format_html(
            '<a href="{}">{} standing{}</a>', _standings_url(obj), obj.total, "" if obj.total == 1 else "s"
        )

    @admin.display(description=f"top {STANDINGS_PEEK_N}")
    def top(self, obj: ArchivedPeriod) -> SafeString:
        standings = obj.standings.order_by("rank", "player_id")[:STANDINGS_PEEK_N]
        table = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            ((s.rank, s.display_name, s.player_id, s.score) for s in standings),
        )
        return format_html(
            "<table><thead><tr><th>rank</th><th>name</th><th>player id</th><th>score</th></tr></thead>"
            '<tbody>{}</tbody></table><p><a href="{}">All {} standings</a></p>',
            table,
            _standings_url(obj),
            obj.total,
        )

    @admin.display(description="export")
    def export(self, obj: ArchivedPeriod) -> SafeString:
        url = reverse("admin:archive_export", args=[obj.leaderboard_id, obj.period, obj.period_id])
        return format_html('<a href="{}?format=csv">CSV</a> · <a href="{}?format=jsonl">JSON Lines</a>', url, url)

    def get_urls(self) -> list[URLPattern]:
        close_jobs = self.admin_site.admin_view(self.close_jobs_view)
        export = self.admin_site.admin_view(self.export_view)
        return [
            path("close-jobs/", close_jobs, name="archive_close_jobs"),
            path("export/<int:board_pk>/<str:period>/<str:period_id>/", export, name="archive_export"),
            *super().get_urls(),
        ]

    def export_view(self, request: HttpRequest, board_pk: int, period: str, period_id: str) -> HttpResponseBase:
        """A period of a board (``current``, or an id) as a CSV or JSON Lines file, streamed as the
        API's export streams it; a period that cannot be read goes back with the reason."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        board = get_object_or_404(Leaderboard.objects.select_related("game"), pk=board_pk)
        config = BoardConfig.from_model(board, board.game)
        fmt = request.GET.get("format", "csv")
        try:
            found = run_sync(lambda: exports.export_open(board=config, period=period, period_id=period_id, format=fmt))
        except ServiceError as error:
            self.message_user(request, error.message, messages.ERROR)
            return HttpResponseRedirect(reverse("admin:core_leaderboard_change", args=[board.pk]))
        except REDIS_ERRORS:
            self.message_user(request, REDIS_DOWN_MESSAGE, messages.ERROR)
            return HttpResponseRedirect(reverse("admin:core_leaderboard_change", args=[board.pk]))
        # An async iterator: the ASGI handler streams it chunk by chunk (a sync one it would
        # first read whole into a list).
        response = StreamingHttpResponse(exports.export_chunks(found), content_type=found.content_type)
        response["Content-Disposition"] = f'attachment; filename="{found.filename(board.game.slug)}"'
        return response

    def close_jobs_view(self, request: HttpRequest) -> HttpResponse:
        """Every game's close-job queue; POST retries one dead job."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        can_retry = request.user.has_perm("archive.change_archivedperiod")
        if request.method == "POST":
            if not can_retry:
                raise PermissionDenied
            self._retry(request)
            return HttpResponseRedirect(request.path)
        rows = []
        redis_down = False
        for board in Leaderboard.objects.select_related("game").order_by("game__name", "id"):
            queue = None
            if not redis_down:
                try:
                    queue = services.close_jobs_queue(board=board)
                except REDIS_ERRORS:
                    redis_down = True
            rows.append({"game": board.game, "board": board, "queue": queue})
        if redis_down:
            self.message_user(request, "Redis is unavailable, so the close jobs cannot be shown.", messages.ERROR)
        context = {
            **self.admin_site.each_context(request),
            "title": "Close jobs",
            "opts": self.opts,
            "games": rows,
            "can_retry": can_retry,
            "max_attempts": services.CLOSE_JOB_MAX_ATTEMPTS,
        }
        return TemplateResponse(request, "admin/archive/close_jobs.html", context)

    def _retry(self, request: HttpRequest) -> None:
        board_pk = request.POST.get("board", "")
        board = (
            Leaderboard.objects.select_related("game").filter(pk=int(board_pk)).first() if board_pk.isdigit() else None
        )
        job = request.POST.get("job", "")
        if board is None:
            self.message_user(request, "No such leaderboard.", messages.ERROR)
            return
        try:
            services.close_job_retry(board=board, job=job)
        except ServiceError as error:
            self.message_user(request, error.message, messages.ERROR)
        except REDIS_ERRORS:
            self.message_user(request, REDIS_DOWN_MESSAGE, messages.ERROR)
        else:
            self.message_user(
                request,
                f"Close job {job} of {board.game.slug}/{board.slug} is due again; it runs within seconds.",
                messages.SUCCESS,
            )


@admin.register(ArchivedStanding)
class ArchivedStandingAdmin(ReadOnlyAdmin):
    list_display = ("rank", "player_id", "display_name", "score", "archived_period")
    search_fields = ("player_id", "display_name")
    list_select_related = ("archived_period__game",)
    fields = ("archived_period", "rank", "player_id", "display_name", "score")
    readonly_fields = fields
    # Filtered by one archive through the link on its page (?archived_period__id__exact=N).
    list_per_page = 100
