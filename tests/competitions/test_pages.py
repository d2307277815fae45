"""A competing board's game page (issue 22): the period as players see it, who may enter, how
many did and until when, in a real Chromium at 1280, 390 and 320 px without sideways scroll."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from django.test import Client
from playwright.sync_api import Page, expect

from core import apikeys
from core import services as core_services
from core.models import ApiKey
from tests.conftest import auth
from tests.live_server import asgi_live_server, browser, dialogs, page  # noqa: F401  (fixtures)

pytestmark = pytest.mark.django_db(transaction=True)

CUP = {
    "name": "Weekly cup",
    "mode": "best",
    "order": "desc",
    "windows": ["weekly"],
    "entry": "join",
    "max_entrants": 100,
    "max_attempts": 3,
    "entry_window_secs": 3 * 86400,
}
SCREENSHOTS = Path("/tmp/lb-screenshots")


def make_cup(base_url: str = "") -> tuple[str, str]:
    game = core_services.game_create(slug="cup", name="Cup", max_submissions_per_minute=0)
    _, manage = apikeys.api_key_create(game=game, name="ops", scope=ApiKey.Scope.MANAGE)
    _, submit = apikeys.api_key_create(game=game, name="server")
    return manage, submit


def test_it_shows_a_competing_boards_period_on_the_game_page():
    manage, submit = make_cup()
    client = Client()
    api = "/api/v1/games/cup/leaderboards/weekly"
    assert client.put(api, CUP, content_type="application/json", headers=auth(manage)).status_code == 200
    client.post(f"{api}/entries", {"player_id": "ada"}, content_type="application/json", headers=auth(submit))

    html = client.get("/games/cup/").content.decode()
    line = " ".join(html.split("data-competition>")[1].split("</p>")[0].split())

    assert '<strong>Competition</strong> on the weekly board, <span class="nowrap">2026-W10</span>: players' in line
    assert "1</span> of 100 entered · 3 attempts each" in line
    assert 'entry closes <time datetime="2026-03-05T00:00:00.000Z">5 Mar 00:00 UTC</time>' in line
    assert 'ends <time datetime="2026-03-09T00:00:00.000Z">9 Mar 00:00 UTC</time>' in line


def test_it_says_how_a_competing_boards_cohorts_are_made():
    manage, _ = make_cup()
    client = Client()
    api = "/api/v1/games/cup/leaderboards/weekly"
    balanced = {**CUP, "cohort_size": 30, "cohort_fill": "balanced", "entry_window_secs": 4 * 86400}
    assert client.put(api, balanced, content_type="application/json", headers=auth(manage)).status_code == 200

    html = client.get("/games/cup/").content.decode()
    line = " ".join(html.split("data-competition>")[1].split("</p>")[0].split())
    assert '· in cohorts of 30, formed <time datetime="2026-03-06T00:00:00.000Z">6 Mar 00:00 UTC</time>' in line

    first_come = {**CUP, "cohort_size": 30}
    assert client.put(api, first_come, content_type="application/json", headers=auth(manage)).status_code == 200
    line = " ".join(client.get("/games/cup/").content.decode().split("data-competition>")[1].split("</p>")[0].split())
    assert "· in cohorts of 30 ·" in line


def test_it_has_no_competition_line_on_a_board_that_does_not_compete(make_game):
    make_game("tetris")
    assert "data-competition" not in Client().get("/games/tetris/").content.decode()


@pytest.mark.browser
@pytest.mark.wall_clock
def test_it_fits_the_competition_line_at_every_width(asgi_live_server, page: Page):  # noqa: F811
    manage, submit = make_cup()
    with httpx.Client(base_url=asgi_live_server, timeout=10) as http:
        api = "/api/v1/games/cup/leaderboards/weekly"
        assert (
            http.put(
                api, json={**CUP, "name": "A cup with a long name", "entry_window_secs": None}, headers=auth(manage)
            ).status_code
            == 200
        )
        assert http.post(f"{api}/entries", json={"player_id": "ada"}, headers=auth(submit)).status_code == 201
    SCREENSHOTS.mkdir(exist_ok=True)
    for width in (1280, 390, 320):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{asgi_live_server}/games/cup/")
        line = page.locator("[data-competition]")
        expect(line).to_contain_text("1 of 100 entered")
        page.screenshot(path=str(SCREENSHOTS / f"competition-{width}.png"), full_page=True)
        box = line.bounding_box()
        assert box is not None and box["x"] + box["width"] <= width, width
        assert page.evaluate("document.documentElement.scrollWidth") <= width, width
