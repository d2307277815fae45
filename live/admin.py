"""The game's admin page with a live peek: each current board's top and who is online,
rendered at load and then kept current over the game's websocket (live/static/live/
admin-peek.js), as the public pages are. Built on moderation's GameAdmin."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.forms import Media, Script
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from core.config import GameConfig
from core.errors import REDIS_ERRORS
from core.models import Game
from core.redis import run_sync
from games import selectors
from moderation.admin.games import GameAdmin
from presence import selectors as presence_selectors

# How many entries of each current board, and how many online players, the page shows.
PEEK_TOP_N = 20
NO_SCORES = "No scores yet."


async def _peek(game: GameConfig) -> list[selectors.Board]:
    return [await selectors.leaderboard_page(game=game, period=p, limit=PEEK_TOP_N) for p in game.periods]


def _board_table(board: selectors.Board) -> SafeString:
    rows = format_html_join(
        "",
        '<tr><td class="peek-rank">{}</td><td>{}</td><td class="peek-id">{}</td><td class="peek-score">{}</td></tr>',
        ((e.rank, e.display_name, e.player_id, f"{e.score:,}") for e in board.entries),
    )
    if not board.entries:
        rows = format_html('<tr><td colspan="4">{}</td></tr>', NO_SCORES)
    return format_html(
        '<section class="peek-board"><h4 data-peek-caption="{}">{} {} — {} player{}</h4>'
        '<table data-peek-period="{}"><thead><tr><th>#</th><th>name</th><th>player id</th><th>score</th></tr>'
        "</thead><tbody>{}</tbody></table></section>",
        board.period.kind,
        board.period.kind,
        board.period.id,
        f"{board.total:,}",
        "" if board.total == 1 else "s",
        board.period.kind,
        rows,
    )


class LiveGameAdmin(GameAdmin):
    @property
    def media(self) -> Media:
        # django-stubs types Media's js as paths only; Django 5.2 takes Script objects too.
        module = Script("live/admin-peek.js", type="module")
        return super().media + Media(css={"all": ["live/admin-peek.css"]}, js=[module])  # type: ignore[list-item]

    def get_fieldsets(self, request: HttpRequest, obj: Game | None = None) -> Any:
        fieldsets = super().get_fieldsets(request, obj)
        if obj is None:
            return fieldsets
        return (("Live now", {"fields": ("live_top", "online_now")}), *fieldsets)

    def get_readonly_fields(self, request: HttpRequest, obj: Game | None = None) -> tuple[str, ...]:
        fields = super().get_readonly_fields(request, obj)
        return fields if obj is None else (*fields, "live_top", "online_now")

    @admin.display(description=f"top {PEEK_TOP_N}")
    def live_top(self, obj: Game) -> SafeString | str:
        game = GameConfig.from_model(obj, "0")
        try:
            boards = run_sync(lambda: _peek(game))
        except REDIS_ERRORS:
            return "Redis unavailable"
        tables = format_html_join("", "{}", ((_board_table(b),) for b in boards))
        return format_html(
            '<div class="peek" data-admin-peek data-game="{}" data-limit="{}">'
            '<p class="peek-status" data-live-status hidden><span data-live-status-text></span></p>{}</div>',
            obj.slug,
            PEEK_TOP_N,
            tables,
        )

    @admin.display(description="online now")
    def online_now(self, obj: Game) -> SafeString | str:
        game = GameConfig.from_model(obj, "0")
        try:
            page = run_sync(lambda: presence_selectors.presence_page(game=game, limit=PEEK_TOP_N))
        except REDIS_ERRORS:
            return "Redis unavailable"
        items = format_html_join(
            "",
            '<li data-player-id="{}">{} <span class="peek-id">{}</span></li>',
            ((p.player_id, p.display_name, p.player_id) for p in page.players),
        )
        return format_html(
            "<div data-peek-presence><p><span data-peek-online>{}</span> online · "
            "<span data-peek-watching>{}</span> watching (timeout {} s)</p>"
            '<ul class="peek-online">{}</ul></div>',
            f"{page.online:,}",
            f"{page.watching:,}",
            obj.presence_timeout_secs,
            items,
        )


admin.site.unregister(Game)
admin.site.register(Game, LiveGameAdmin)
