"""The pages in a real Chromium against the real ASGI app (see tests/live_server.py).

Plain sync tests: Playwright's sync API cannot run inside a running event loop.
Games and keys are made through services; scores go in through the live server's
API, as a game server would post them.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence

import httpx
import pytest
from playwright.sync_api import Page, expect

from archive.services import period_archive
from core import apikeys
from core.clock import now as clock_now
from core.config import GameConfig
from core.redis import run_sync
from games import periods, services
from tests.conftest import auth
from tests.live_server import asgi_live_server, browser  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

XSS_NAME = "<img src=x onerror=alert(1)>"
MOBILE_VIEWPORT = {"width": 375, "height": 812}
# Long enough for a once-a-second countdown to tick at least once.
COUNTDOWN_WAIT_MS = 1500
# site.js reloads 1.5 s after a period ends; a little more than that.
RELOAD_WAIT_MS = 2500


def fill_board(make_game, base_url: str, scores: Sequence[tuple[str, int, str | None]], slug: str = "tetris") -> None:
    game = make_game(slug, description="Stack the falling blocks; clear lines.")
    _, raw_key = apikeys.api_key_create(game=game, name="server")
    with httpx.Client(base_url=base_url, headers=auth(raw_key), timeout=10) as client:
        for player_id, score, name in scores:
            body: dict[str, object] = {"player_id": player_id, "score": score}
            if name is not None:
                body["display_name"] = name
            response = client.post(f"/api/v1/games/{slug}/leaderboards/main/scores", json=body)
            assert response.status_code == 200, response.text


SCORES = [
    ("alice", 1200, "Alice"),
    ("bob", 3400, "Bob the Builder"),
    ("carol", 2100, "Carol"),
    ("mallory", 3000, XSS_NAME),
    ("dave", 900, "Dave"),
    ("erin", 2750, "Erin"),
]


def board_rows(page: Page) -> list[list[str]]:
    """Each row's rank, player and score as shown (the rank without its ▲/▼ cue)."""
    return [
        [row.locator(".rank").inner_text().strip()]
        + [" ".join(cell.split()) for cell in row.locator("td").all_inner_texts()[1:]]
        for row in page.locator("table.board tbody tr").all()
    ]


def test_it_shows_the_board_filled_through_the_api(make_game, asgi_live_server, page, dialogs):  # noqa: F811
    fill_board(make_game, asgi_live_server, SCORES)

    page.goto(f"{asgi_live_server}/games/tetris/")

    assert board_rows(page) == [
        ["1", "Bob the Builder", "3,400"],
        ["2", XSS_NAME, "3,000"],
        ["3", "Erin", "2,750"],
        ["4", "Carol", "2,100"],
        ["5", "Alice", "1,200"],
        ["6", "Dave", "900"],
    ]
    expect(page.locator(".recent-list li")).to_have_count(len(SCORES))
    expect(page.locator(".recent-list time").first).to_have_text(re.compile(r"just now|second"))
    page.screenshot(path="/tmp/game_page.png", full_page=True)
    page.set_viewport_size(MOBILE_VIEWPORT)
    page.screenshot(path="/tmp/game_page_mobile.png", full_page=True)
    assert dialogs.fired == []


def test_it_shows_a_hostile_display_name_as_text(make_game, asgi_live_server, page, dialogs):  # noqa: F811
    fill_board(make_game, asgi_live_server, SCORES)

    for path in ("/", "/games/tetris/", "/games/tetris/players/mallory/"):
        page.goto(f"{asgi_live_server}{path}")
        expect(page.get_by_text(XSS_NAME, exact=True).first).to_be_visible()
        assert page.locator("img").count() == 0
    page.wait_for_timeout(200)  # an onerror handler would fire as the image fails to load

    assert page.locator("tr[data-player-id=mallory] a.player").text_content() == XSS_NAME
    assert page.locator("h1").text_content() == XSS_NAME
    assert dialogs.fired == []


def test_it_switches_tabs(make_game, asgi_live_server, page):  # noqa: F811
    fill_board(make_game, asgi_live_server, SCORES[:2])
    page.goto(f"{asgi_live_server}/games/tetris/")
    expect(page.locator(".tab[aria-current=page]")).to_have_text("Daily")

    page.get_by_role("link", name="All-time").click()

    expect(page).to_have_url(f"{asgi_live_server}/games/tetris/?period=all-time")
    expect(page.locator(".tab[aria-current=page]")).to_have_text("All-time")
    expect(page.locator(".countdown")).to_have_text("All-time board · never resets")
    assert board_rows(page) == [["1", "Bob the Builder", "3,400"], ["2", "Alice", "1,200"]]


def test_it_counts_down_to_the_reset(make_game, asgi_live_server, page):  # noqa: F811
    fill_board(make_game, asgi_live_server, SCORES[:1])
    page.goto(f"{asgi_live_server}/games/tetris/?period=weekly")
    countdown = page.locator("[data-ends-at]")
    # A duration with its units, not a time of day ("10:37:52").
    expect(countdown).to_have_text(re.compile(r"^(\d+d )?(\d+h )?(\d+m )?\d+s$"))
    before = countdown.text_content()

    page.wait_for_timeout(COUNTDOWN_WAIT_MS)

    assert countdown.text_content() != before


def test_it_finds_a_player(make_game, asgi_live_server, page):  # noqa: F811
    fill_board(make_game, asgi_live_server, SCORES)
    page.goto(f"{asgi_live_server}/games/tetris/?period=weekly")

    page.get_by_label("Find a player by name or id").fill("caro")
    page.get_by_role("button", name="Find").click()

    expect(page).to_have_url(f"{asgi_live_server}/games/tetris/players/carol/?period=weekly")
    expect(page.locator("h1")).to_have_text("Carol")
    expect(page.locator("tr.is-me")).to_contain_text("Carol")
    expect(page.locator(".tab[aria-current=page]")).to_have_text("Weekly")


def test_it_says_when_find_a_player_finds_nobody(make_game, asgi_live_server, page):  # noqa: F811
    fill_board(make_game, asgi_live_server, SCORES[:1])
    page.goto(f"{asgi_live_server}/games/tetris/")

    page.get_by_label("Find a player by name or id").fill("ghost")
    page.get_by_role("button", name="Find").click()

    expect(page.get_by_role("alert")).to_have_text("No player in Tetris has a name starting with “ghost”.")


def test_it_suggests_names_as_the_reader_types(make_game, asgi_live_server, page):  # noqa: F811
    fill_board(make_game, asgi_live_server, SCORES)
    page.goto(f"{asgi_live_server}/games/tetris/")

    page.get_by_label("Find a player by name or id").press_sequentially("BO")

    suggestions = page.locator("#find-suggestions option")
    expect(suggestions).to_have_count(1)
    assert suggestions.first.get_attribute("value") == "Bob the Builder"


def test_it_reloads_once_when_the_countdown_reaches_zero(make_game, asgi_live_server, page):  # noqa: F811
    """Without a live socket (a live page gets the server's reset message instead)."""
    fill_board(make_game, asgi_live_server, SCORES[:1])
    page.route_web_socket(re.compile(r"/ws/"), lambda ws: ws.close())
    loads: list[str] = []
    page.on("load", lambda loaded: loads.append(loaded.url))
    page.clock.install(time=clock_now())  # the browser's clock starts at the server's
    page.goto(f"{asgi_live_server}/games/tetris/?period=daily")
    remaining_ms = page.evaluate("Date.parse(document.querySelector('[data-ends-at]').dataset.endsAt) - Date.now()")

    page.clock.fast_forward(remaining_ms + 1000)
    expect(page.locator("[data-ends-at]")).to_have_text("now")
    page.clock.run_for(RELOAD_WAIT_MS)
    page.wait_for_load_state()
    expect(page.locator("[data-ends-at]")).not_to_have_text("now")

    # The server still says the same period (its clock did not move): no second reload.
    page.clock.fast_forward(remaining_ms + 1000)
    page.clock.run_for(RELOAD_WAIT_MS)
    page.wait_for_timeout(300)
    assert len(loads) == 2, loads


# How many lines an element's text takes (a wrapped text has one client rect per line).
TEXT_LINES_JS = """el => {
  const range = document.createRange();
  range.selectNodeContents(el);
  const tops = new Set(Array.from(range.getClientRects()).map(r => Math.round(r.top)));
  return tops.size;
}"""


def text_lines(page: Page, selector: str) -> list[int]:
    return [locator.evaluate(TEXT_LINES_JS) for locator in page.locator(selector).all()]


def test_it_keeps_the_header_pager_and_dates_on_one_line_on_a_phone(make_game, asgi_live_server, page):  # noqa: F811
    game = make_game("tetris", max_submissions_per_minute=0)
    config = GameConfig.from_model(game, "0")
    yesterday = clock_now() - dt.timedelta(days=1)
    items = [services.Submission(f"player-{i:03}", i, f"Player {i:03}", leaderboard="main") for i in range(120)]
    run_sync(lambda: services.score_import(game=config, board=config.boards[0], items=items, at=yesterday))
    run_sync(lambda: services.score_import(game=config, board=config.boards[0], items=items, at=clock_now()))
    period_archive(
        board=game.leaderboards.first(), period="daily", period_id=periods.current("daily", "UTC", yesterday).id
    )
    page.set_viewport_size({"width": 390, "height": 844})

    page.goto(f"{asgi_live_server}/games/tetris/?page=2")
    header = page.locator(".site-header .wrap")
    nav = page.locator(".site-nav").bounding_box()
    brand = page.locator(".brand").bounding_box()
    assert nav is not None and brand is not None
    assert abs((nav["y"] + nav["height"] / 2) - (brand["y"] + brand["height"] / 2)) < 4  # side by side
    assert set(text_lines(page, ".site-nav a")) == {1}
    header_box = header.bounding_box()
    assert header_box is not None and header_box["height"] < 80
    assert set(text_lines(page, ".pager .button")) == {1}  # "← Previous", "Next →"

    page.goto(f"{asgi_live_server}/games/tetris/history/")
    assert set(text_lines(page, ".history-table .nowrap")) == {1}  # period ids, dates
    page.goto(f"{asgi_live_server}/games/tetris/players/player-007/")
    assert set(text_lines(page, ".history-table .nowrap")) == {1}
    assert set(text_lines(page, ".chart-date, .chart-rank")) == {1}


def test_it_says_what_a_player_page_of_a_many_board_game_left_out_without_scrolling_sideways(
    make_game,
    asgi_live_server,  # noqa: F811
    page,
    tmp_path,
):
    from core import services as core_services
    from core.models import Game
    from live.views import PLAYER_PAGE_OTHER_BOARDS

    game = make_game("tetris", max_submissions_per_minute=0)
    for n in range(PLAYER_PAGE_OTHER_BOARDS + 5):
        core_services.leaderboard_create(game=game, slug=f"track-{n:02d}", name=f"Track {n:02d}", windows=["daily"])
    config = GameConfig.from_model(Game.objects.prefetch_related("leaderboards").get(pk=game.pk), "0")
    for slug in ("main", "track-00"):
        board = config.board_named(slug)
        assert board is not None
        run_sync(
            lambda b=board: services.score_submit(game=config, board=b, player_id="ada", score=7, display_name="Ada")
        )
    for width in (1280, 390, 320):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{asgi_live_server}/games/tetris/players/ada/")
        expect(page.locator(".elsewhere")).to_contain_text(
            f"From the first {PLAYER_PAGE_OTHER_BOARDS} other boards; 5 more"
        )
        expect(page.locator(".elsewhere table")).to_contain_text("Track 00")
        page.screenshot(path=str(tmp_path / f"player-{width}.png"), full_page=True)
        box = page.locator(".elsewhere").bounding_box()
        assert box is not None and box["x"] + box["width"] <= width, width
        assert page.evaluate("document.documentElement.scrollWidth") <= width, width
        for part in (".board-picker", ".board-find button", ".board-search button"):
            part_box = page.locator(part).bounding_box()
            assert part_box is not None and part_box["x"] + part_box["width"] <= width - 16, (part, width)

    # The list offers the first boards; the others are found by name, then chosen.
    expect(page.locator(".board-picker-count")).to_contain_text("find the others by name")
    page.fill("#board-find", "track 2")
    page.click(".board-search button")
    expect(page.locator(".board-picker-count")).to_contain_text("match “track 2”")
    page.select_option("#board-choice", "track-24")
    page.click(".board-find button")
    expect(page.locator("#board-choice")).to_have_value("track-24")
    assert "board=track-24" in page.url
