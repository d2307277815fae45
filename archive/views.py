"""History pages: a game's finished periods and each one's final standings. Each view
adapts archive/selectors.py to a template; the player page's placement history is
rendered by games/views.py with templates/archive/_placement_history.html."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from core import config
from core.pages import PAGE_SIZE, board_context, board_link, not_found, positive_int
from games import periods

from . import selectors

# Finished periods per page of the history list: about a month of daily periods.
HISTORY_PAGE_SIZE = 30


def _pages(total: int, page_size: int) -> int:
    return max(1, -(-total // page_size))


async def history_page(request: HttpRequest, game: str) -> HttpResponse:
    config_ = await config.get_game(game)
    if config_ is None:
        return not_found(request, f"There is no game “{game}”.")
    kind = request.GET.get("period") or None
    if kind is not None and kind not in selectors.ARCHIVED_KINDS:
        windows = ", ".join(selectors.ARCHIVED_KINDS)
        return not_found(request, f"{config_.name} has no “{kind}” history: windows are {windows}.")
    board_slug = request.GET.get("board") or None
    board = config_.board_named(board_slug) if board_slug else None
    if board_slug and board is None:
        return not_found(request, f"{config_.name} has no leaderboard “{board_slug[:70]}”.")

    page = positive_int(request.GET.get("page"), 1)
    total, archives = await selectors.archived_periods(
        game=config_, board=board, period=kind, offset=(page - 1) * HISTORY_PAGE_SIZE, limit=HISTORY_PAGE_SIZE
    )
    pages = _pages(total, HISTORY_PAGE_SIZE)
    if page > pages:
        # An old link past the end: show the last page rather than nothing.
        page = pages
        total, archives = await selectors.archived_periods(
            game=config_, board=board, period=kind, offset=(page - 1) * HISTORY_PAGE_SIZE, limit=HISTORY_PAGE_SIZE
        )
    winners = await selectors.winners(archives=archives)
    return render(
        request,
        "archive/history.html",
        {
            "game": config_,
            "kind": kind,
            **board_context(config_, board, find=request.GET.get("board_find", "")),
            "kinds": _history_kinds(config_, board, kind),
            "rows": [_history_row(config_, archive, winners.get(archive.pk)) for archive in archives],
            "total": total,
            "page": page,
            "pages": pages,
            "previous_page": page - 1 if page > 1 else None,
            "next_page": page + 1 if page < pages else None,
        },
    )


def _history_kinds(game: config.GameConfig, board: config.BoardConfig | None, kind: str | None) -> list[str]:
    """The tabs of the history: the windows whose periods end on the board shown (on any of the
    game's boards for "All boards"); all-time only on a board with a season, the one all-time
    that ends. A tab asked for by its link stays."""
    boards = [board] if board is not None else list(game.boards)
    ending = {k for b in boards for k in b.windows if k != periods.ALL_TIME or b.ends_at is not None}
    return [k for k in selectors.ARCHIVED_KINDS if k in ending or k == kind]


def _history_row(game: config.GameConfig, archive: selectors.Archived, winner: Any) -> dict[str, Any]:
    """One finished period in the history list, with its board (its name, format and link query)."""
    board = game.board_named(archive.leaderboard)
    return {"archive": archive, "winner": winner, "leaderboard": board, **board_link(game, board)}


async def period_page(request: HttpRequest, game: str, period: str, period_id: str) -> HttpResponse:
    config_ = await config.get_game(game)
    if config_ is None:
        return not_found(request, f"There is no game “{game}”.")
    board_slug = request.GET.get("board") or None
    board = config_.board_named(board_slug) if board_slug else config_.first_board
    archive = None
    if board is not None and period in selectors.ARCHIVED_KINDS:
        archive = await selectors.complete_period(board=board, period=period, period_id=period_id)
    if archive is None:
        return not_found(request, f"{config_.name} has no final {period} standings for “{period_id}”.")

    # ?player= opens the page that holds the player, with their row marked (links from the player page).
    player = request.GET.get("player") or None
    page = positive_int(request.GET.get("page"), 1)
    if player is not None and "page" not in request.GET:
        page = await selectors.player_page_number(archive=archive, player_id=player, page_size=PAGE_SIZE) or 1
    pages = _pages(archive.total, PAGE_SIZE)
    page = min(page, pages)
    standings = await selectors.archived_page(archive=archive, offset=(page - 1) * PAGE_SIZE, limit=PAGE_SIZE)
    return render(
        request,
        "archive/period.html",
        {
            "game": config_,
            **board_context(config_, board),
            "archive": archive,
            "period": period,
            "board": standings,
            "highlight": player,
            # The board table marks online players; a finished period shows none.
            "online": set(),
            "page": page,
            "pages": pages,
            "previous_page": page - 1 if page > 1 else None,
            "next_page": page + 1 if page < pages else None,
        },
    )
