"""A game with three boards in a real browser: tabs between boards and windows, each board's
format, entry metadata, and the board in view updated live."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page, expect

from core import apikeys, services
from tests.conftest import auth
from tests.live.test_pages_browser import board_rows
from tests.live_server import LIVE_WITHIN_MS, DialogWatch, asgi_live_server, browser, live_broadcaster  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCREENSHOTS = Path("/tmp/lb-screenshots")


@pytest.fixture
def rally(asgi_live_server) -> Iterator[httpx.Client]:  # noqa: F811
    """Rally: two time-trial tracks and a points board; a client with a key of the game."""
    game = services.game_create(slug="rally", name="Rally", max_submissions_per_minute=0)
    for slug, name in (("track-1", "Track 1"), ("track-2", "Track 2")):
        # A time trial: the lowest time wins, and the first to set it keeps it.
        services.leaderboard_create(
            game=game,
            slug=slug,
            name=name,
            windows=["daily", "weekly"],
            mode="best",
            order="asc",
            ties="earliest",
            score_format="time_ms",
            min_score=1,
            max_score=3_600_000,
        )
    services.leaderboard_create(
        game=game, slug="points", name="Points", mode="increment", windows=["daily", "all-time"]
    )
    _, raw_key = apikeys.api_key_create(game=game, name="server")
    client = httpx.Client(base_url=asgi_live_server, headers=auth(raw_key), timeout=10)
    items = [
        {"leaderboard": "track-1", "player_id": "ann", "score": 81_999, "metadata": {"car": "mx-5"}},
        {"leaderboard": "track-1", "player_id": "bo", "score": 83_250},
        {"leaderboard": "track-2", "player_id": "ann", "score": 95_000},
        {"leaderboard": "points", "player_id": "bo", "score": 1_200},
    ]
    response = client.post("/api/v1/games/rally/scores/batch", json={"scores": items})
    assert response.status_code == 200 and all("error" not in r for r in response.json()["results"])
    yield client
    client.close()


def shoot(page: Page, name: str) -> None:
    SCREENSHOTS.mkdir(exist_ok=True)
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=str(SCREENSHOTS / f"{name}-{width}.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 900})


def test_it_switches_boards_and_windows_and_shows_each_boards_format_live(
    asgi_live_server,  # noqa: F811
    live_broadcaster,  # noqa: F811
    rally,
    page: Page,
    dialogs: DialogWatch,
):
    page.goto(f"{asgi_live_server}/games/rally/")

    tabs = page.locator("nav.board-tabs .tab")
    expect(tabs).to_have_text(["Track 1", "Track 2", "Points"])
    expect(page.locator("nav.board-tabs [aria-current=page]")).to_have_text("Track 1")
    assert board_rows(page) == [["1", "ann car: mx-5", "1:21.999"], ["2", "bo", "1:23.250"]]
    shoot(page, "boards-track-1")

    tabs.nth(1).click()
    expect(page).to_have_url(f"{asgi_live_server}/games/rally/?board=track-2")
    assert board_rows(page) == [["1", "ann", "1:35.000"]]
    page.locator("nav[aria-label=Period] .tab", has_text="Weekly").click()
    expect(page).to_have_url(f"{asgi_live_server}/games/rally/?board=track-2&period=weekly")
    expect(page.locator("[data-live-status]")).to_have_attribute("data-state", "live")

    # A faster lap on the board in view shows up live, in its format.
    response = rally.post("/api/v1/games/rally/leaderboards/track-2/scores", json={"player_id": "cy", "score": 75_000})
    assert response.status_code == 200
    expect(page.locator("table.board tbody tr").first).to_have_attribute("data-player-id", "cy", timeout=LIVE_WITHIN_MS)
    assert board_rows(page) == [["1", "cy", "1:15.000"], ["2", "ann", "1:35.000"]]
    # A score on another board does not touch this one.
    rally.post("/api/v1/games/rally/leaderboards/points/scores", json={"player_id": "dee", "score": 5})
    page.wait_for_timeout(500)
    assert [row[1] for row in board_rows(page)] == ["cy", "ann"]

    page.locator("nav.board-tabs .tab", has_text="Points").click()
    assert board_rows(page) == [["1", "bo", "1,200"], ["2", "dee", "5"]]
    shoot(page, "boards-points")
    assert dialogs.fired == []


def recent_scores(page: Page) -> list[str]:
    return page.locator("[data-recent-list] li .score").all_text_contents()


def test_it_shows_each_recent_score_in_its_boards_format_live_and_polled(
    asgi_live_server,  # noqa: F811
    live_broadcaster,  # noqa: F811
    rally,
    page: Page,
):
    # The page holds only its own board's format (a table of every board's grew with them): the
    # socket's items carry theirs, and a polling page asks the API once per board it meets.
    page.goto(f"{asgi_live_server}/games/rally/?board=track-2")
    expect(page.locator("[data-live-status]")).to_have_attribute("data-state", "live")
    rally.post("/api/v1/games/rally/leaderboards/points/scores", json={"player_id": "dee", "score": 5})
    expect(page.locator("[data-recent-list] li").first).to_have_attribute(
        "data-player-id", "dee", timeout=LIVE_WITHIN_MS
    )
    assert recent_scores(page)[:2] == ["5", "1,200"]

    blocked = page.context.new_page()
    blocked.route_web_socket(re.compile(r"/ws/"), lambda ws: ws.close())
    blocked.goto(f"{asgi_live_server}/games/rally/?board=track-2")
    expect(blocked.locator("[data-live-status]")).to_have_attribute("data-state", "offline")
    rally.post("/api/v1/games/rally/leaderboards/track-1/scores", json={"player_id": "eve", "score": 70_001})
    rally.post("/api/v1/games/rally/leaderboards/points/scores", json={"player_id": "fay", "score": 9})
    expect(blocked.locator("[data-recent-list] li").first).to_have_attribute("data-player-id", "fay", timeout=7_000)
    assert recent_scores(blocked)[:3] == ["9", "1:10.001", "5"]
