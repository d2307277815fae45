"""Server-rendered pages. Each view adapts selectors to a template."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from accounts.selectors import linked_player_id
from archive import selectors as archive_selectors
from competitions.selectors import pages as competition_pages
from competitions.selectors import phase as competition_selectors
from competitions.selectors import player_page as competition_player_page
from core import config, text
from core.config import BoardConfig, GameConfig
from core.errors import ServiceError
from core.models import is_player_id
from core.pages import PAGE_SIZE, board_context, board_link, not_found, positive_int
from games import selectors
from presence import selectors as presence_selectors

from . import events
from . import selectors as live_selectors

HOME_TOP_N = 3
AROUND_RADIUS = 5
# The game page lists this many of the most recently seen online players.
PRESENCE_LIST_SIZE = 20
# The player page's placement history shows this many of the latest finished periods.
PLACEMENT_HISTORY_SIZE = 30
# The player page reads the player's standing on at most this many of the game's other boards
# (a read each): the page costs the same however many boards a game has; it says how many it
# left out, which the board picker still reaches.
PLAYER_PAGE_OTHER_BOARDS = 20
# "Find a player" lists at most this many players whose names start alike.
FIND_RESULTS_MAX = 20
FIND_QUERY_MAX_CHARS = 64
# A cohort's id is short ("silver-12"); a longer ``?cohort=`` names none anyway.
COHORT_QUERY_MAX_CHARS = 64


async def home(request: HttpRequest) -> HttpResponse:
    cards = []
    for game in await config.list_games():
        leaderboard = game.first_board
        if leaderboard is None:
            continue  # no leaderboard yet: nothing to show
        period = live_selectors.home_period(leaderboard)
        board = await selectors.leaderboard_page(board=leaderboard, period=period, limit=HOME_TOP_N)
        cards.append({"game": game, "leaderboard": leaderboard, "board": board})
    return render(request, "live/home.html", {"cards": cards})


def _leaderboard(request: HttpRequest, game: GameConfig) -> tuple[BoardConfig, str] | HttpResponse:
    """The board (``?board=``, else the game's first active one) and window (``?period=``) asked for."""
    slug = request.GET.get("board")
    leaderboard = game.board_named(slug) if slug else game.first_board
    if leaderboard is None:
        if slug:
            return not_found(request, f"{game.name} has no leaderboard “{slug[:70]}”.")
        return not_found(request, f"{game.name} has no leaderboard yet.")
    period = request.GET.get("period") or leaderboard.windows[0]
    if period not in leaderboard.windows:
        return not_found(request, _no_such_window(game, leaderboard, period))
    return leaderboard, period


def _no_such_window(game: GameConfig, leaderboard: BoardConfig, period: str) -> str:
    """Names the board as the visitor knows it (the game, where the board is the game's only one
    or shares its name) and the windows it does keep."""
    whose = game.name if len(game.boards) == 1 or leaderboard.name == game.name else f"{game.name}'s {leaderboard.name}"
    kept = list(leaderboard.windows)
    listed = kept[0] if len(kept) == 1 else ", ".join(kept[:-1]) + " and " + kept[-1]
    return f"{whose} keeps no “{period[:70]}” window; it keeps {listed}."


async def game_page(request: HttpRequest, game: str) -> HttpResponse:
    config_ = await config.get_game(game)
    if config_ is None:
        return not_found(request, f"There is no game “{game}”.")
    chosen = _leaderboard(request, config_)
    if isinstance(chosen, HttpResponse):
        return chosen
    leaderboard, period = chosen
    search = await _find(request, config_, leaderboard, period)
    if isinstance(search, HttpResponse):
        return search
    page, pages, board = await _board_page(leaderboard, period, positive_int(request.GET.get("page"), 1))
    me = await linked_player_id(user=await request.auser(), game_id=config_.id)
    presence = await presence_selectors.presence_page(game=config_, limit=PRESENCE_LIST_SIZE)
    shown_ids = [e.player_id for e in board.entries]
    contest = await _contest(request, leaderboard, period, me)
    # The dots of online players, on the board and in the cohort shown.
    dotted = shown_ids + ([r.entry.player_id for r in contest.table.rows] if contest and contest.table else [])
    # The signed-in player's own name, rank and score in the you-bar, whichever page is shown.
    mine = None
    if me is not None:
        mine = await selectors.player_standing(board=leaderboard, period=period, player_id=me)
    context = {
        "me": me,
        "mine": mine,
        "mine_page": (mine.rank - 1) // PAGE_SIZE + 1 if mine is not None else None,
        "me_name": (await selectors.display_name(game=config_, player_id=me)) or me if me is not None else None,
        "online": await presence_selectors.online_among(game=config_, player_ids=dotted),
        "presence": presence,
        "presence_more": max(0, presence.online - len(presence.players)),
        "presence_list_size": PRESENCE_LIST_SIZE,
        "game": config_,
        **board_context(config_, leaderboard, find=request.GET.get("board_find", "")),
        "period": period,
        "periods": selectors.current_periods(board=leaderboard),
        "board": board,
        "page": page,
        "pages": pages,
        "page_size": PAGE_SIZE,
        "recent_limit": events.RECENT_LIVE_LIMIT,
        "previous_page": page - 1 if page > 1 else None,
        "next_page": page + 1 if page < pages else None,
        "recent": await selectors.recent_submissions(game=config_, limit=events.RECENT_LIVE_LIMIT),
        "several_boards": len(config_.boards) > 1,
        "competition": await competition_selectors.competition_phase(board=leaderboard),
        "contest": contest,
        "find_results_max": FIND_RESULTS_MAX,
        **vars(search),
    }
    return render(request, "live/game.html", context)


async def _contest(
    request: HttpRequest, leaderboard: BoardConfig, period: str, me: str | None
) -> competition_pages.GameCompetition | None:
    """A competing board's cohorts, ladder and the signed-in player's outlook (None without cohorts):
    the cohort asked for (``?cohort=``), else the player's own."""
    cohort = (request.GET.get("cohort") or "").strip()[:COHORT_QUERY_MAX_CHARS]
    return await competition_pages.game_competition(
        board=leaderboard,
        window=period,
        me=me,
        cohort=cohort if cohort and not text.has_control_characters(cohort) else None,
        page=positive_int(request.GET.get("cohort_page"), 1),
        list_page=positive_int(request.GET.get("cohorts_page"), 1),
    )


@dataclass(frozen=True)
class _Search:
    find: str = ""
    find_error: str | None = None
    matches: tuple[selectors.NamedPlayer, ...] = ()


async def _find(request: HttpRequest, game: GameConfig, board: BoardConfig, period: str) -> _Search | HttpResponse:
    """The page's "Find a player": by the start of a display name (any case or accents) or an id.

    One match (or an exact id) opens that player's page on the board and window shown; several
    are listed; none says so.
    """
    find = (request.GET.get("player") or "").strip()[:FIND_QUERY_MAX_CHARS]
    if not find:
        return _Search()
    if text.has_control_characters(find):
        return _Search(find="", find_error="Type a name or a player id.")
    matches = await selectors.players_named(game=game, query=find, limit=FIND_RESULTS_MAX)
    if len(matches) == 1 or (matches and matches[0].player_id == find):
        url = reverse("live:player", args=[game.slug, matches[0].player_id])
        return redirect(f"{url}?{board_link(game, board)['board_query']}{urlencode({'period': period})}")
    if not matches:
        return _Search(find=find, find_error=f"No player in {game.name} has a name starting with “{find}”.")
    return _Search(find=find, matches=tuple(matches))


async def _board_page(leaderboard: BoardConfig, period: str, page: int) -> tuple[int, int, selectors.Board]:
    """The page asked for, its count of pages, and its board; past the end, the last page."""
    board = await selectors.leaderboard_page(
        board=leaderboard, period=period, offset=(page - 1) * PAGE_SIZE, limit=PAGE_SIZE
    )
    pages = max(1, -(-board.total // PAGE_SIZE))
    if page > pages:
        # An old link after a reset: the last page rather than nothing.
        page = pages
        board = await selectors.leaderboard_page(
            board=leaderboard, period=period, offset=(page - 1) * PAGE_SIZE, limit=PAGE_SIZE
        )
    return page, pages, board


async def player_page(request: HttpRequest, game: str, player_id: str) -> HttpResponse:
    config_ = await config.get_game(game)
    if config_ is None:
        return not_found(request, f"There is no game “{game}”.")
    if not is_player_id(player_id):
        return not_found(request, "That is not a valid player id.")
    chosen = _leaderboard(request, config_)
    if isinstance(chosen, HttpResponse):
        return chosen
    leaderboard, period = chosen
    overview = await selectors.player_overview(board=leaderboard, player_id=player_id)
    placements = await archive_selectors.player_placements(
        game=config_, player_id=player_id, board=leaderboard, period=period, limit=PLACEMENT_HISTORY_SIZE
    )
    # A player with no current score still has a page while the game knows them (a score
    # in an earlier period, a past placement); a hidden player has none.
    known_name = await selectors.display_name(game=config_, player_id=player_id)
    if await selectors.is_hidden(game=config_, player_id=player_id) or (
        known_name is None
        and all(s is None for s in overview.values())
        and not (placements or await archive_selectors.has_placements(game=config_, player_id=player_id))
    ):
        return not_found(request, f"There is no player “{player_id}” in {config_.name}.")
    try:
        around = await selectors.players_around(
            board=leaderboard, period=period, player_id=player_id, radius=AROUND_RADIUS
        )
    except ServiceError as error:
        return not_found(request, error.message)
    name = next((s.display_name for s in overview.values() if s is not None), None)
    name = name or known_name or (placements[0].display_name if placements else player_id)
    current = {p.kind: p for p in selectors.current_periods(board=leaderboard)}
    others = [b for b in config_.boards if b.active and b != leaderboard]
    shown = others[:PLAYER_PAGE_OTHER_BOARDS]
    elsewhere = [(b, await selectors.player_overview(board=b, player_id=player_id)) for b in shown]
    around_ids = [e.player_id for e in around.entries] if around else []
    return render(
        request,
        "live/player.html",
        {
            "game": config_,
            **board_context(config_, leaderboard, find=request.GET.get("board_find", "")),
            "player_id": player_id,
            "display_name": name,
            "period": period,
            "periods": list(current.values()),
            "several_boards": len(config_.boards) > 1,
            "standings": [(current[kind], standing) for kind, standing in overview.items()],
            "around": around,
            "around_radius": AROUND_RADIUS,
            "presence": await presence_selectors.player_presence(game=config_, player_id=player_id),
            # The player on the game's other boards (the cards above follow the one shown).
            "elsewhere": [(b, overview) for b, overview in elsewhere if any(overview.values())],
            "elsewhere_read": len(shown),
            "elsewhere_unread": len(others) - len(shown),
            "online": await presence_selectors.online_among(game=config_, player_ids=around_ids),
            "placements": placements,
            "placement_kind": period,
            "competitions": await competition_player_page.player_competitions(
                game=config_, board=leaderboard, player_id=player_id
            ),
        },
    )
