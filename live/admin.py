"""The game's admin page with a live peek: each current board's top and who is online,
rendered at load and then kept current over the game's websocket (live/static/live/
admin-peek.js), as the public pages are. Built on moderation's GameAdmin."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.forms import Media, Script
from django.http import HttpRequest, HttpResponse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from core import board_rules
from core.config import BoardConfig, GameConfig
from core.errors import REDIS_ERRORS
from core.models import Game
from core.redis import run_sync
from games import selectors
from moderation.admin.games import GameAdmin
from presence import selectors as presence_selectors

# How many entries of each board's current windows, and how many online players, the page shows.
PEEK_TOP_N = 20
NO_SCORES = "No scores yet."
REDIS_DOWN = "Redis is unavailable: the boards cannot be read now."


async def _peek(boards: list[BoardConfig]) -> list[list[selectors.Board]]:
    """The top of every window of each board."""
    return [
        [await selectors.leaderboard_page(board=board, period=p, limit=PEEK_TOP_N) for p in board.windows]
        for board in boards
    ]


def _board_table(leaderboard: BoardConfig, board: selectors.Board) -> SafeString:
    rows = format_html_join(
        "",
        '<tr><td class="peek-rank">{}</td><td title="{}">{}</td><td class="peek-score">{}</td></tr>',
        (
            (e.rank, e.player_id, e.display_name, board_rules.format_score(e.score, leaderboard.format))
            for e in board.entries
        ),
    )
    if not board.entries:
        rows = format_html('<tr><td colspan="3">{}</td></tr>', NO_SCORES)
    period = board.period
    view = f"{leaderboard.slug}/{period.kind}"
    name = period.kind if period.kind == period.id else f"{period.kind} {period.id}"
    return format_html(
        '<section class="peek-board"><h4 data-peek-caption="{}">{} — {} player{}</h4>'
        '<table data-peek-view="{}" data-peek-board="{}" data-peek-period="{}" data-format="{}">'
        "<thead><tr><th>#</th><th>name</th><th>score</th></tr></thead><tbody>{}</tbody></table></section>",
        view,
        name,
        f"{board.total:,}",
        "" if board.total == 1 else "s",
        view,
        leaderboard.slug,
        period.kind,
        leaderboard.format,
        rows,
    )


class LiveGameAdmin(GameAdmin):
    change_form_template = "admin/core/game/live_change_form.html"

    @property
    def media(self) -> Media:
        # django-stubs types Media's js as paths only; Django 5.2 takes Script objects too.
        module = Script("live/admin-peek.js", type="module")
        return super().media + Media(css={"all": ["live/admin-peek.css"]}, js=[module])  # type: ignore[list-item]

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        game = self.get_object(request, object_id)
        peek = format_html("{}{}", self.live_top(game), self.online_now(game)) if game is not None else None
        return super().change_view(request, object_id, form_url, {**(extra_context or {}), "live_peek": peek})

    def live_top(self, obj: Game) -> SafeString:
        boards = [b for b in GameConfig.from_model(obj, "0").boards if b.active]
        if not boards:
            return format_html("<p>{}</p>", "No leaderboard yet.")
        try:
            pages = run_sync(lambda: _peek(boards))
        except REDIS_ERRORS:
            return format_html("<p>{}</p>", REDIS_DOWN)
        sections = format_html_join(
            "",
            '<div class="peek-leaderboard"><h3>{}</h3>{}</div>',
            (
                (board.name, format_html_join("", "{}", ((_board_table(board, page),) for page in board_pages)))
                for board, board_pages in zip(boards, pages, strict=True)
            ),
        )
        return format_html(
            '<div class="peek" data-admin-peek data-game="{}" data-limit="{}">'
            '<p class="peek-status" data-live-status hidden><span data-live-status-text></span></p>{}</div>',
            obj.slug,
            PEEK_TOP_N,
            sections,
        )

    def online_now(self, obj: Game) -> SafeString:
        game = GameConfig.from_model(obj, "0")
        try:
            page = run_sync(lambda: presence_selectors.presence_page(game=game, limit=PEEK_TOP_N))
        except REDIS_ERRORS:
            return mark_safe("")  # nothing to show: the boards above say Redis is down
        items = format_html_join(
            "",
            '<li data-player-id="{}">{} <span class="peek-id">{}</span></li>',
            ((p.player_id, p.display_name, p.player_id) for p in page.players),
        )
        return format_html(
            '<div class="peek-presence" data-peek-presence><h3>Online now</h3>'
            "<p><span data-peek-online>{}</span> online · "
            "<span data-peek-watching>{}</span> watching (timeout {} s)</p>"
            '<ul class="peek-online">{}</ul></div>',
            f"{page.online:,}",
            f"{page.watching:,}",
            obj.presence_timeout_secs,
            items,
        )


admin.site.unregister(Game)
admin.site.register(Game, LiveGameAdmin)
