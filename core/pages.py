"""What every server-rendered page shares: the not-found page, query parsing, and what a
page of one leaderboard tells its templates about the board."""

from __future__ import annotations

from dataclasses import dataclass
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
# ... and its list offers at most this many (the current board always among them): a page's
# size must not follow a tenant's board count (500 names were 37 KB of every page).
BOARD_CHOICES_MAX = 20
# A board name is at most 100 characters; a longer search matches nothing anyway.
BOARD_FIND_MAX_CHARS = 100


@dataclass(frozen=True)
class BoardPicker:
    """The game's boards a page offers: ``tabs`` while they are few, else ``choices`` (at most
    BOARD_CHOICES_MAX) among the ``matched`` of ``total`` whose name or slug holds ``find``."""

    total: int
    tabs: tuple[BoardConfig, ...] = ()
    choices: tuple[BoardConfig, ...] = ()
    find: str = ""
    matched: int = 0


def board_picker(game: GameConfig, board: BoardConfig | None, *, find: str = "") -> BoardPicker:
    listed = [b for b in game.boards if b.active or b == board]
    if len(listed) <= BOARD_TABS_MAX:
        return BoardPicker(total=len(listed), tabs=tuple(listed))
    find = " ".join(find.split())[:BOARD_FIND_MAX_CHARS]
    folded = find.casefold()
    matching = [b for b in listed if folded in b.name.casefold() or folded in b.slug] if folded else listed
    choices = matching[:BOARD_CHOICES_MAX]
    if board is not None and board not in choices:
        choices = [board, *choices[: BOARD_CHOICES_MAX - 1]]  # the one shown stays selected
    return BoardPicker(total=len(listed), choices=tuple(choices), find=find, matched=len(matching))


def board_context(game: GameConfig, board: BoardConfig | None, *, find: str = "") -> dict[str, Any]:
    """What a page of one of the game's boards needs to show and link it: its format for
    scores (also for the live scripts), the query naming it in links ('' for the game's first
    board), and the picker of the game's boards (``find``: what the visitor searched them for)."""
    return {
        "leaderboard": board,
        "picker": board_picker(game, board, find=find),
        **board_link(game, board),
    }


def board_link(game: GameConfig, board: BoardConfig | None) -> dict[str, Any]:
    """A board's format for its scores, and the query naming it in links ('' for the game's
    first board, which a link without one opens)."""
    named = board is not None and board != game.first_board
    return {
        "score_format": board.format if board is not None else "",
        "board_query": f"board={quote(board.slug)}&" if named and board is not None else "",
    }
