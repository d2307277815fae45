"""Reads whose size a tenant decides are paged (issue 21): the games list, a game's boards and a
player's profile across them each answer one page, so no request grows with what a tenant creates."""

from __future__ import annotations

import re
from typing import Any

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.test import AsyncClient

from core import services as core_services
from core.config import GameConfig
from core.models import Game
from games import api, services
from tests.conftest import game_with_board

pytestmark = pytest.mark.django_db(transaction=True)

BOARDS = 25


def many_boards() -> Game:
    game = game_with_board("rally", board=None, max_submissions_per_minute=0)
    for n in range(BOARDS):
        core_services.leaderboard_create(game=game, slug=f"track-{n:02d}", windows=["daily"])
    return Game.objects.prefetch_related("leaderboards").get(pk=game.pk)


@pytest.fixture
async def rally() -> Game:
    return await sync_to_async(many_boards)()


async def get(client: AsyncClient, path: str) -> tuple[int, Any]:
    response = await client.get(f"/api/v1{path}")
    return response.status_code, response.json()


def slugs(boards: list[dict[str, Any]]) -> list[str]:
    return [b["slug"] for b in boards]


async def test_it_shows_a_games_first_boards_and_pages_through_the_rest(aclient, rally):
    status, game = await get(aclient, "/games/rally")
    assert status == 200
    assert (slugs(game["leaderboards"]), game["leaderboards_total"]) == (
        [f"track-{n:02d}" for n in range(api.GAME_BOARDS_SHOWN)],
        BOARDS,
    )
    pages = [await get(aclient, f"/games/rally/leaderboards?offset={o}&limit=10") for o in (0, 10, 20)]
    assert [slug for _, page in pages for slug in slugs(page)] == [f"track-{n:02d}" for n in range(BOARDS)]
    assert len((await get(aclient, "/games/rally/leaderboards"))[1]) == BOARDS  # under the default page
    status, body = await get(aclient, f"/games/rally/leaderboards?limit={api.BOARDS_PAGE_MAX + 1}")
    assert (status, body["error"]["code"], body["error"]["field"]) == (422, "invalid", "limit")


async def test_it_pages_the_games_list_by_name(aclient, rally, make_game):
    await sync_to_async(make_game)("asteroids", name="Asteroids")
    await sync_to_async(make_game)("zork", name="Zork")
    first = (await get(aclient, "/games?limit=2"))[1]
    rest = (await get(aclient, "/games?offset=2&limit=2"))[1]
    assert [g["slug"] for g in first + rest] == ["asteroids", "rally", "zork"]
    assert len(first[1]["leaderboards"]) == api.GAME_BOARDS_SHOWN  # the list stays a page however many boards
    for bad in ("limit=0", f"limit={api.GAMES_PAGE_MAX + 1}", "offset=-1"):
        status, body = await get(aclient, f"/games?{bad}")
        assert (status, body["error"]["code"]) == (422, "invalid"), bad


async def test_it_pages_a_players_profile_across_the_games_boards(aclient, rally):
    config = GameConfig.from_model(rally, "0")
    last = config.board_named(f"track-{BOARDS - 1:02d}")
    assert last is not None
    await services.score_submit(game=config, board=last, player_id="ada", score=7, display_name="Ada")

    status, first = await get(aclient, "/games/rally/players/ada")
    assert status == 200 and first["leaderboards_total"] == BOARDS
    assert len(first["leaderboards"]) == api.PROFILE_BOARDS_DEFAULT
    assert all(w["daily"]["standing"] is None for w in first["leaderboards"].values())
    status, rest = await get(aclient, f"/games/rally/players/ada?offset={api.PROFILE_BOARDS_DEFAULT}")
    assert len(rest["leaderboards"]) == BOARDS - api.PROFILE_BOARDS_DEFAULT
    assert rest["leaderboards"][last.slug]["daily"]["standing"]["score"] == 7


async def test_it_reads_a_bounded_number_of_boards_for_a_player_page(aclient, rally):
    from live.views import PLAYER_PAGE_OTHER_BOARDS

    config = GameConfig.from_model(rally, "0")
    for slug in ("track-01", f"track-{BOARDS - 1:02d}"):
        board = config.board_named(slug)
        assert board is not None
        await services.score_submit(game=config, board=board, player_id="ada", score=7, display_name="Ada")
    response = await aclient.get("/games/rally/players/ada/")
    assert response.status_code == 200
    page = response.content.decode()
    unread = BOARDS - 1 - PLAYER_PAGE_OTHER_BOARDS
    assert f"From the first {PLAYER_PAGE_OTHER_BOARDS} other boards; {unread} more" in page
    assert "?board=track-01&amp;period=daily" in page  # read: shown
    assert f"?board=track-{BOARDS - 1:02d}&amp;period=daily" not in page.split("elsewhere-title")[1]


def add_boards(game: Game, first: int, count: int) -> None:
    for n in range(first, first + count):
        core_services.leaderboard_create(game=game, slug=f"track-{n:03d}", windows=["daily"])


def page_sizes(client: Any) -> dict[str, int]:
    paths = ("/games/rally/", "/games/rally/players/ada/", "/games/rally/history/")
    sizes = {}
    for path in paths:
        response = client.get(path)
        assert response.status_code == 200, path
        sizes[path] = len(response.content)
    return sizes


@pytest.mark.django_db(transaction=True)
def test_it_keeps_the_game_player_and_history_pages_one_size_whatever_the_number_of_boards(client):
    # Issue 21: a board picker of one option per board (and a table of every board's format)
    # made every page grow by ~74 B a board: 64 KB at 500.
    game = game_with_board("rally", board=None, max_submissions_per_minute=0)
    add_boards(game, 0, 30)
    config = GameConfig.from_model(Game.objects.prefetch_related("leaderboards").get(pk=game.pk), "0")
    board = config.board_named("track-000")
    assert board is not None
    async_to_sync(services.score_submit)(game=config, board=board, player_id="ada", score=7)
    before = page_sizes(client)

    add_boards(game, 30, 270)
    after = page_sizes(client)

    for path, size in after.items():
        assert abs(size - before[path]) < 64, (path, before[path], size)  # a count's digits at most


@pytest.mark.django_db(transaction=True)
def test_it_finds_a_board_by_name_among_many_and_keeps_the_one_shown(client):
    from core.pages import BOARD_CHOICES_MAX

    game = game_with_board("rally", board=None, max_submissions_per_minute=0)
    add_boards(game, 0, BOARD_CHOICES_MAX + 15)

    page = client.get("/games/rally/", {"board": "track-030", "board_find": "  Track 01 "}).content.decode()
    picker = page.split('class="board-picker"')[1].split("</div>")[0]
    options = re.findall(r'<option value="([^"]*)"( selected)?>', picker)
    assert options == [("track-030", " selected")] + [(f"track-{n:03d}", "") for n in range(10, 20)]
    assert "10 of 35 leaderboards match “Track 01”: choose one and Show." in picker
    assert 'name="board" value="track-030"' in picker and 'value="Track 01"' in picker  # the search stays here

    page = client.get("/games/rally/", {"board_find": "x" * 5000}).content.decode()
    assert "0 of 35 leaderboards match" in page

    page = client.get("/games/rally/").content.decode()
    assert page.count("<option ") == BOARD_CHOICES_MAX
    assert f"The list offers {BOARD_CHOICES_MAX} of 35 leaderboards; find the others by name." in page
