"""What every server-rendered page shares: the not-found page, query parsing, and what a
page of one leaderboard tells its templates about the board."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string

from .config import BoardConfig, GameConfig
from .errors import UNAVAILABLE_RETRY_AFTER_SECS

# Board pages list this many entries per page (live boards and archived periods alike).
PAGE_SIZE = 50


def not_found(request: HttpRequest, message: str) -> HttpResponse:
    return render(request, "not_found.html", {"message": message}, status=404)


def positive_int(raw: str | None, default: int) -> int:
    """A page number from a query string: junk means the default, and it stays in 1..10^6."""
    try:
        value = int(raw) if raw else default
    except ValueError:
        return default
    return max(1, min(value, 10**6))


def unavailable(request: HttpRequest | None = None) -> HttpResponse:
    """503 + Retry-After while Redis or the database is unreachable (a page that needs neither)."""
    html = render_to_string("unavailable.html", {"retry_after": UNAVAILABLE_RETRY_AFTER_SECS})
    response = HttpResponse(html, status=503)
    response["Retry-After"] = str(UNAVAILABLE_RETRY_AFTER_SECS)
    return response


# A game with more boards than this lists them with a search box instead of tabs.
BOARD_TABS_MAX = 6


def board_context(game: GameConfig, board: BoardConfig | None) -> dict[str, Any]:
    """What a page of one of the game's boards needs to show and link it: its format for
    scores (also for the live scripts), every board's format (a recent panel mixes them),
    the query naming it in links ('' for the game's first board), and the board list."""
    named = board is not None and board != game.first_board
    return {
        "leaderboard": board,
        "boards": [b for b in game.boards if b.active or b == board],
        "board_tabs_max": BOARD_TABS_MAX,
        "score_format": board.format if board is not None else "",
        "board_formats": json.dumps({b.slug: b.format for b in game.boards}, separators=(",", ":")),
        "board_query": f"board={quote(board.slug)}&" if named and board is not None else "",
    }
