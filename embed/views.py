"""The iframe form of the widget and the game's logo. Each view adapts a selector to a response."""

from __future__ import annotations

from dataclasses import dataclass

from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.views.decorators.clickjacking import xframe_options_exempt

from core import branding, config
from core.config import GameConfig
from games import selectors

from . import selectors as embed_selectors

# The iframe's rows: as the widget's (static/embed/leaderboard.js, LIMIT_MAX and LIMIT_DEFAULT).
FRAME_LIMIT_MAX = 50
FRAME_LIMIT_DEFAULT = 10
THEMES = ("auto", "light", "dark")
# A logo named by its version never changes (its URL changes with it): cached for a year.
LOGO_CACHE_SECS = 365 * 24 * 3600
# Asked for without its version (or an old one): cached briefly, so a new logo shows soon.
LOGO_UNVERSIONED_CACHE_SECS = 300


@dataclass(frozen=True)
class FrameOptions:
    limit: int
    theme: str
    accent: str


def _options(query: QueryDict) -> FrameOptions | str:
    """The iframe's ``limit``, ``theme`` and ``accent``, or what is wrong with them."""
    raw = query.get("limit") or str(FRAME_LIMIT_DEFAULT)
    limit = int(raw) if raw.isascii() and raw.isdigit() and len(raw) <= 3 else 0
    if not 1 <= limit <= FRAME_LIMIT_MAX:
        return f"limit is 1 to {FRAME_LIMIT_MAX} rows, not “{raw[:20]}”."
    theme = query.get("theme") or "auto"
    if theme not in THEMES:
        return f"theme is auto, light or dark, not “{theme[:20]}”."
    accent = query.get("accent") or ""
    if accent and not branding.ACCENT_RE.match(accent):
        return f"accent is # and six hex digits (#1f6feb), not “{accent[:20]}”."
    return FrameOptions(limit=limit, theme=theme, accent=accent)


def _framed(response: HttpResponse, game: GameConfig | None) -> HttpResponse:
    """Only this site and the game's embed origins may frame the page (browsers that know
    CSP; X-Frame-Options cannot name origins, so the view is exempt from it)."""
    ancestors = " ".join(("'self'", *(game.embed_origins if game is not None else ())))
    response["Content-Security-Policy"] = f"frame-ancestors {ancestors}"
    return response


def _message(request: HttpRequest, game: GameConfig | None, message: str, status: int) -> HttpResponse:
    return _framed(render(request, "embed/message.html", {"message": message}, status=status), game)


@xframe_options_exempt
async def board_frame(request: HttpRequest, game: str, board: str) -> HttpResponse:
    found = await config.get_game(game)
    if found is None:
        return _message(request, None, f"There is no game “{game}”.", 404)
    leaderboard = found.board_named(board)
    if leaderboard is None:
        return _message(request, found, f"{found.name} has no board “{board}”.", 404)
    period = request.GET.get("period") or leaderboard.windows[0]
    if period not in leaderboard.windows:
        kept = ", ".join(leaderboard.windows)
        return _message(request, found, f"{leaderboard.name} keeps no “{period[:40]}” window; it keeps {kept}.", 404)
    asked = _options(request.GET)
    if isinstance(asked, str):
        return _message(request, found, asked, 400)
    page = await selectors.leaderboard_page(board=leaderboard, period=period, limit=asked.limit)
    context = {"game": found, "board": leaderboard, "period": period, "page": page, "options": asked}
    return _framed(render(request, "embed/board.html", context), found)


async def logo(request: HttpRequest, game: str) -> HttpResponse:
    found = await embed_selectors.logo_of(game_slug=game)
    if found is None:
        response = HttpResponse("This game has no logo.", status=404, content_type="text/plain; charset=utf-8")
        return response
    data, media_type, version = found
    response = HttpResponse(data, content_type=media_type)
    current = request.GET.get("v") == version
    response["Cache-Control"] = f"public, max-age={LOGO_CACHE_SECS if current else LOGO_UNVERSIONED_CACHE_SECS}" + (
        ", immutable" if current else ""
    )
    response["ETag"] = f'"{version}"'
    # An image only, whatever a browser might sniff; and shown on other sites' pages.
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'"
    response["Cross-Origin-Resource-Policy"] = "cross-origin"
    return response
