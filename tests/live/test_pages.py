"""The server-rendered pages, through the real ASGI stack (AsyncClient), real Redis and DB.

Boards are filled the way a game server fills them: POSTs to the scores API.
"""

from __future__ import annotations

import datetime as dt
import html
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from core import apikeys, config
from core.clock import now as clock_now
from games import services
from tests.conftest import auth, clock_at

pytestmark = pytest.mark.django_db(transaction=True)

XSS_NAME = "<img src=x onerror=alert(1)>"


@dataclass
class Row:
    rank: str
    name: str
    score: str
    href: str
    classes: str
    cells: list[str] = field(default_factory=list)


class _BoardParser(HTMLParser):
    """Rows of the ``table.board`` on a page, as text (what a reader sees)."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[Row] = []
        self._in_board = False
        self._in_body = False
        self._row: dict | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag == "table" and "board" in (attributes.get("class") or "").split():
            self._in_board = True
        elif self._in_board and tag == "tbody":
            self._in_body = True
        elif self._in_body and tag == "tr":
            self._row = {"cells": [], "href": "", "classes": attributes.get("class") or ""}
        elif self._row is not None and tag == "td":
            self._cell = []
        elif self._row is not None and tag == "a" and not self._row["href"]:
            self._row["href"] = attributes.get("href") or ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._row is not None and self._cell is not None:
            self._row["cells"].append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            cells = self._row["cells"]
            self.rows.append(Row(cells[0], cells[1], cells[2], self._row["href"], self._row["classes"], cells))
            self._row = None
        elif tag == "tbody":
            self._in_body = False
        elif tag == "table":
            self._in_board = False

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def board_rows(content: bytes) -> list[Row]:
    parser = _BoardParser()
    parser.feed(content.decode())
    return parser.rows


def text(content: bytes) -> str:
    """The page's text with tags dropped and whitespace collapsed, for phrase checks."""
    without_tags = re.sub(r"<[^>]+>", " ", content.decode())
    return " ".join(html.unescape(without_tags).split())


async def new_game(make_game, slug: str = "tetris", **kwargs: object) -> str:
    game = await sync_to_async(make_game)(slug, **kwargs)
    _, raw = await sync_to_async(apikeys.api_key_create)(game=game, name="server")
    return raw


async def post_score(client: AsyncClient, raw_key: str, slug: str, player_id: str, score: int, name: str | None = None):
    body: dict[str, object] = {"player_id": player_id, "score": score}
    if name is not None:
        body["display_name"] = name
    response = await client.post(
        f"/api/v1/games/{slug}/leaderboards/main/scores", body, content_type="application/json", headers=auth(raw_key)
    )
    assert response.status_code == 200, response.content
    return response


async def test_it_lists_games_with_their_top_three_on_home(make_game, aclient):
    key = await new_game(make_game, "tetris", description="Falling blocks.")
    await new_game(make_game, "snake")
    for player, score in [("p1", 10), ("p2", 40), ("p3", 30), ("p4", 20)]:
        await post_score(aclient, key, "tetris", player, score, name=f"Player {player}")

    response = await aclient.get("/")

    assert response.status_code == 200
    page = text(response.content)
    assert "Tetris" in page and "Snake" in page
    assert "Falling blocks." in page
    assert re.search(r"1 Player p2 40 2 Player p3 30 3 Player p4 20", page), page
    assert "Player p1" not in page
    assert b'href="/games/tetris/"' in response.content
    assert b'href="/games/tetris/players/p2/' in response.content
    assert "No scores yet today" in page  # snake's card


async def test_it_shows_an_empty_state_when_there_are_no_games(aclient):
    response = await aclient.get("/")

    assert response.status_code == 200
    assert "No games yet — create one with manage.py creategame" in text(response.content)


async def test_it_shows_the_board_filled_through_the_api(make_game, aclient):
    key = await new_game(make_game, "tetris")
    for player, score in [("alice", 120), ("bob", 300), ("carol", 120), ("dave", 5)]:
        await post_score(aclient, key, "tetris", player, score, name=player.title())

    response = await aclient.get("/games/tetris/")

    assert response.status_code == 200
    rows = board_rows(response.content)
    assert [(r.rank, r.name, r.score) for r in rows] == [
        ("1", "Bob", "300"),
        ("2", "Alice", "120"),
        ("2", "Carol", "120"),
        ("4", "Dave", "5"),
    ]
    assert rows[0].href == "/games/tetris/players/bob/?period=daily"
    page = text(response.content)
    assert "higher is better · best score counts" in page
    assert "Recent submissions" in page
    assert re.search(rb'<time datetime="\d{4}-\d\d-\d\dT[^"]+" data-relative>', response.content)


async def test_it_describes_a_lower_is_better_increment_game(make_game, aclient):
    await new_game(make_game, "speedrun", order="asc", mode="increment")

    response = await aclient.get("/games/speedrun/")

    assert "lower is better · scores add up" in text(response.content)


async def test_it_shows_an_empty_board(make_game, aclient):
    await new_game(make_game, "tetris")

    response = await aclient.get("/games/tetris/")

    assert response.status_code == 200
    assert board_rows(response.content) == []
    page = text(response.content)
    assert "No scores on the daily board yet" in page
    assert "No submissions yet." in page


async def test_it_marks_the_current_period_tab(make_game, aclient):
    await new_game(make_game, "tetris")

    response = await aclient.get("/games/tetris/?period=weekly")

    assert response.status_code == 200
    tabs = re.findall(rb'<a class="tab" href="\?period=([a-z-]+)"( aria-current="page")?>', response.content)
    assert [(kind.decode(), bool(current)) for kind, current in tabs] == [
        ("daily", False),
        ("weekly", True),
        ("monthly", False),
        ("all-time", False),
    ]


async def test_it_renders_a_countdown_for_a_period_that_resets(make_game, aclient):
    await new_game(make_game, "tetris")

    daily = await aclient.get("/games/tetris/?period=daily")
    all_time = await aclient.get("/games/tetris/?period=all-time")

    assert re.search(rb'data-ends-at="\d{4}-\d\d-\d\dT00:00:00.000Z"', daily.content)
    assert "Resets in" in text(daily.content)
    assert b"data-ends-at" not in all_time.content
    assert "never resets" in text(all_time.content)


async def test_it_paginates_the_board(make_game, aclient):
    key = await new_game(make_game, "tetris")
    for i in range(60):
        await post_score(aclient, key, "tetris", f"p{i:02d}", 1000 - i)

    first = await aclient.get("/games/tetris/")
    second = await aclient.get("/games/tetris/?page=2")

    first_rows, second_rows = board_rows(first.content), board_rows(second.content)
    assert [r.rank for r in first_rows] == [str(n) for n in range(1, 51)]
    assert [r.rank for r in second_rows] == [str(n) for n in range(51, 61)]
    assert second_rows[0].name == "p50" and second_rows[0].score == "950"
    assert "Page 1 of 2" in text(first.content)
    assert b'href="?period=daily&amp;page=2"' in first.content
    assert "Page 2 of 2" in text(second.content)
    assert b'href="?period=daily&amp;page=1"' in second.content


@pytest.mark.parametrize("raw_page", ["abc", "-3", "0", "1.5", "", "99999999999999999999"])
async def test_it_treats_a_garbage_page_number_as_page_one(make_game, aclient, raw_page):
    key = await new_game(make_game, "tetris")
    for i in range(60):
        await post_score(aclient, key, "tetris", f"p{i:02d}", 1000 - i)

    response = await aclient.get("/games/tetris/", {"page": raw_page})

    assert response.status_code == 200
    if raw_page.startswith("9"):
        # Past the end is clamped to the last page rather than showing nothing.
        assert "Page 2 of 2" in text(response.content)
    else:
        assert board_rows(response.content)[0].rank == "1"
        assert "Page 1 of 2" in text(response.content)


async def test_it_redirects_find_a_player_to_the_player_page(make_game, aclient):
    key = await new_game(make_game, "tetris")
    await post_score(aclient, key, "tetris", "alice", 10)

    response = await aclient.get("/games/tetris/", {"period": "weekly", "player": " alice "})

    assert response.status_code == 302
    assert response["Location"] == "/games/tetris/players/alice/?period=weekly"


async def test_it_says_when_find_a_player_finds_nobody(make_game, aclient):
    key = await new_game(make_game, "tetris")
    await post_score(aclient, key, "tetris", "alice", 10)

    response = await aclient.get("/games/tetris/", {"player": "nobody"})

    assert response.status_code == 200
    assert "No player in Tetris has a name starting with “nobody”." in text(response.content)
    assert b'role="alert"' in response.content
    assert b'value="nobody"' in response.content
    assert len(board_rows(response.content)) == 1


async def test_it_asks_again_when_find_a_player_gets_control_characters(make_game, aclient):
    key = await new_game(make_game, "tetris")
    await post_score(aclient, key, "tetris", "alice", 10)

    response = await aclient.get("/games/tetris/", {"player": "al\x00ice"})

    assert response.status_code == 200
    assert "Type a name or a player id." in text(response.content)
    assert len(board_rows(response.content)) == 1


async def test_it_finds_a_player_by_the_start_of_their_name_in_any_case(make_game, aclient):
    key = await new_game(make_game, "tetris")
    await post_score(aclient, key, "tetris", "p-17", 10, name="Zoë Quinn")

    response = await aclient.get("/games/tetris/", {"player": "zoe q"})

    assert response.status_code == 302
    assert response["Location"] == "/games/tetris/players/p-17/?period=daily"


async def test_it_lists_the_players_when_several_names_start_alike(make_game, aclient):
    key = await new_game(make_game, "tetris")
    for player, name in [("p1", "Ada Lovelace"), ("p2", "Adam Smith"), ("p3", "Bob")]:
        await post_score(aclient, key, "tetris", player, 10, name=name)

    response = await aclient.get("/games/tetris/", {"player": "ada"})

    assert response.status_code == 200
    assert "Players whose name starts with “ada”" in text(response.content)
    results = response.content.split(b'class="card find-results"')[1].split(b"</section>")[0]
    assert re.findall(rb'href="/games/tetris/players/(p\d)/\?period=daily"', results) == [b"p1", b"p2"]
    assert b"Bob" not in results


async def test_it_answers_an_unknown_game_with_a_404_page(aclient):
    response = await aclient.get("/games/nope/")

    assert response.status_code == 404
    page = text(response.content)
    assert "There is no game “nope”." in page
    assert b'href="/"' in response.content


async def test_it_answers_an_unknown_period_with_a_404_page(make_game, aclient):
    await new_game(make_game, "tetris", periods_kept=["daily", "all-time"])

    unknown = await aclient.get("/games/tetris/?period=yearly")
    not_kept = await aclient.get("/games/tetris/?period=weekly")

    assert unknown.status_code == 404
    assert "Tetris keeps no “yearly” window; it keeps daily and all-time." in text(unknown.content)
    assert not_kept.status_code == 404


async def test_it_shows_the_player_in_every_period(make_game, aclient):
    key = await new_game(make_game, "tetris")
    for i in range(10):
        await post_score(aclient, key, "tetris", f"p{i}", 100 - i, name=f"Name {i}")

    response = await aclient.get("/games/tetris/players/p1/")

    assert response.status_code == 200
    page = text(response.content)
    assert "Name 1" in page and "p1" in page
    for label in ("Daily", "Weekly", "Monthly", "All-time"):
        assert f"{label} #2 of 10 Score 99 better than 80% of players" in page
    rows = board_rows(response.content)
    assert [r.rank for r in rows] == [str(n) for n in range(1, 11)]
    highlighted = [r for r in rows if "is-me" in r.classes]
    assert [(h.rank, h.name) for h in highlighted] == [("2", "Name 1")]


async def test_it_says_no_score_this_period_for_a_period_without_one(make_game, aclient):
    key = await new_game(make_game, "tetris", periods_kept=["daily", "all-time"])
    await post_score(aclient, key, "tetris", "alice", 7)
    # Bob scored two days ago: he has an all-time score and none on today's board.
    game = await config.get_game("tetris")
    assert game is not None
    with clock_at(clock_now() - dt.timedelta(days=2)):
        await services.score_submit(game=game, board=game.boards[0], player_id="bob", score=3)

    response = await aclient.get("/games/tetris/players/bob/?period=daily")

    assert response.status_code == 200
    page = text(response.content)
    assert "Daily — no score this period" in page
    assert "All-time #2 of 2 Score 3" in page
    assert board_rows(response.content) == []


async def test_it_switches_the_period_of_the_table_around_the_player(make_game, aclient):
    key = await new_game(make_game, "tetris")
    await post_score(aclient, key, "tetris", "alice", 7)

    response = await aclient.get("/games/tetris/players/alice/?period=monthly")

    assert b'<a class="tab" href="?period=monthly" aria-current="page">' in response.content
    assert board_rows(response.content)[0].classes == "is-me"


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/games/tetris/players/ghost/", "There is no player “ghost” in Tetris."),
        ("/games/tetris/players/bad!id/", "That is not a valid player id."),
        ("/games/nope/players/alice/", "There is no game “nope”."),
        ("/games/tetris/players/alice/?period=yearly", "Tetris keeps no “yearly” window; it keeps daily, weekly"),
    ],
)
async def test_it_answers_an_unknown_player_with_a_404_page(make_game, aclient, path, message):
    key = await new_game(make_game, "tetris")
    await post_score(aclient, key, "tetris", "alice", 7)

    response = await aclient.get(path)

    assert response.status_code == 404
    assert message in text(response.content)


async def test_it_escapes_display_names(make_game, aclient):
    key = await new_game(make_game, "tetris")
    await post_score(aclient, key, "tetris", "mallory", 50, name=XSS_NAME)

    pages = [
        await aclient.get("/"),
        await aclient.get("/games/tetris/"),
        await aclient.get("/games/tetris/players/mallory/"),
    ]

    escaped = html.escape(XSS_NAME, quote=False).encode()
    for response in pages:
        assert response.status_code == 200
        assert XSS_NAME.encode() not in response.content
        assert b"<img" not in response.content
        assert escaped in response.content
    assert board_rows(pages[1].content)[0].name == XSS_NAME
