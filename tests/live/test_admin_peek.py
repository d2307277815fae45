"""The game admin page's live peek (live/admin.py): each current board's top and who is
online, at load, and kept current over the socket in a real Chromium."""

from __future__ import annotations

import os
import re

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from core import apikeys
from core import services as core_services
from core.config import GameConfig
from core.models import Game
from core.redis import run_sync
from games import services
from presence import services as presence_services
from tests.live.test_live_browser import Scores, scores  # noqa: F401  (fixture)
from tests.live_server import LIVE_WITHIN_MS, asgi_live_server, live_broadcaster  # noqa: F401  (fixtures)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def game(make_game) -> Game:
    return make_game("tetris", max_submissions_per_minute=0)


def submit(game: Game, player_id: str, score: int, name: str | None = None) -> None:
    config = GameConfig.from_model(game, "0")
    run_sync(
        lambda: services.score_submit(
            game=config, board=config.boards[0], player_id=player_id, score=score, display_name=name
        )
    )


def test_it_peeks_at_every_board_of_the_game_each_in_its_format(admin_client, game):
    core_services.leaderboard_create(
        game=game, slug="track", name="Track", mode="best", order="asc", windows=["daily"], score_format="time_ms"
    )
    config = GameConfig.from_model(Game.objects.get(pk=game.pk), "0")  # the fixture's boards are prefetched
    run_sync(lambda: services.score_submit(game=config, board=config.boards[1], player_id="ann", score=81_999))

    html = admin_client.get(change_url(game)).content.decode()

    assert "<h3>Tetris</h3>" in html and "<h3>Track</h3>" in html
    track = html[html.index('data-peek-caption="track/daily"') :]
    assert re.search(r'data-peek-board="track" data-peek-period="daily" data-format="time_ms"', track)
    assert '<td class="peek-score">1:21.999</td>' in track


def change_url(game: Game) -> str:
    return reverse("admin:core_game_change", args=[game.pk])


def test_it_peeks_at_the_top_of_every_board_with_names_escaped(admin_client, game):
    submit(game, "bob", 50, "<b>Bob</b>")
    submit(game, "alice", 70, "Alice")

    html = admin_client.get(change_url(game)).content.decode()

    assert "&lt;b&gt;Bob&lt;/b&gt;" in html and "<b>Bob</b>" not in html
    top = html[html.index('data-peek-caption="main/daily"') :]
    assert top.index("Alice") < top.index("&lt;b&gt;Bob")
    for period in ("daily", "weekly", "monthly"):
        assert re.search(rf'<h4 data-peek-caption="main/{period}">{period} \S+ — 2 players</h4>', html)
    assert '<h4 data-peek-caption="main/all-time">all-time — 2 players</h4>' in html
    assert 'src="/static/live/admin-peek.js" type="module"' in html


def test_it_says_when_a_board_is_empty_and_renders_the_add_page(admin_client, game):
    assert b"No scores yet." in admin_client.get(change_url(game)).content
    response = admin_client.get(reverse("admin:core_game_add"))
    assert response.status_code == 200 and b'name="timezone"' in response.content
    assert b"data-admin-peek" not in response.content


def test_it_peeks_at_who_is_online(admin_client, game):
    submit(game, "alice", 70, "<i>Alice</i>")
    config = GameConfig.from_model(game, "0")
    run_sync(lambda: presence_services.watcher_beat(game=config, socket_id="socket-1"))

    html = admin_client.get(change_url(game)).content.decode()

    assert re.search(r"<span data-peek-online>1</span> online · <span data-peek-watching>1</span> watching", html)
    assert "&lt;i&gt;Alice&lt;/i&gt;" in html and "<i>Alice</i>" not in html


@pytest.mark.browser
def test_it_keeps_the_peek_live_as_scores_come_in(
    scores: Scores,  # noqa: F811
    asgi_live_server: str,  # noqa: F811
    live_broadcaster,  # noqa: F811
    page: Page,
    django_user_model,
) -> None:
    django_user_model.objects.create_superuser("root", password="pw-long-enough-1")
    scores.post("alice", 10, "Alice")
    page.goto(f"{asgi_live_server}/admin/login/?next=/admin/core/game/")
    page.get_by_label("Username").fill("root")
    page.get_by_label("Password").fill("pw-long-enough-1")
    page.get_by_role("button", name="Log in").click()
    page.get_by_role("link", name="Tetris").click()
    daily = page.locator('table[data-peek-period="daily"] tbody tr')
    expect(daily).to_have_count(1)
    expect(page.locator("[data-live-status]")).to_have_attribute("data-state", "live")

    scores.post("bob", 99, "Bob")

    expect(daily.first).to_contain_text("Bob", timeout=LIVE_WITHIN_MS)
    expect(daily).to_have_count(2)
    expect(page.locator('[data-peek-caption="main/daily"]')).to_contain_text("— 2 players")
    expect(page.locator("[data-peek-online]")).to_have_text("2")

    # A long score shows whole, beside a long name that gives way.
    scores.post("carol", 123_456_789_012, "Carol with a name far longer than any column of a peek")
    score = page.locator('table[data-peek-period="daily"] tbody tr').first.locator("td.peek-score")
    expect(score).to_have_text("123,456,789,012", timeout=LIVE_WITHIN_MS)
    assert score.evaluate("td => td.scrollWidth <= td.clientWidth")
    box, table = score.bounding_box(), page.locator('table[data-peek-period="daily"]').bounding_box()
    assert box is not None and table is not None and box["x"] + box["width"] <= table["x"] + table["width"] + 1


@pytest.mark.browser
def test_it_fits_a_game_of_four_boards_and_its_board_pages_in_the_window(
    scores: Scores,  # noqa: F811
    asgi_live_server: str,  # noqa: F811
    page: Page,
    django_user_model,
) -> None:
    # The game page once held every board's whole form and a key table 1,583 px wide.
    game = Game.objects.get(slug="tetris")
    for slug in ("track-1", "points", "season"):
        core_services.leaderboard_create(game=game, slug=slug, name=slug.replace("-", " ").title())
    for name in ("eu-servers-with-a-long-name", "ops"):
        apikeys.api_key_create(game=game, name=name)
    scores.post("alice", 123_456_789_012, "Alice")
    django_user_model.objects.create_superuser("root", password="pw-long-enough-1")
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{asgi_live_server}/admin/login/?next=/admin/core/game/{game.pk}/change/")
    page.get_by_label("Username").fill("root")
    page.get_by_label("Password").fill("pw-long-enough-1")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("link", name="Add a leaderboard")).to_be_visible()

    wide = "() => document.documentElement.scrollWidth <= window.innerWidth"
    assert page.evaluate(wide)
    if os.environ.get("ADMIN_SCREENSHOTS"):  # a folder, for a look at the page
        page.screenshot(path=os.path.join(os.environ["ADMIN_SCREENSHOTS"], "admin-game.png"), full_page=True)
    page.get_by_role("link", name="Track 1").click()
    expect(page.get_by_role("heading", name="Change leaderboard")).to_be_visible()
    assert page.evaluate(wide)
    page.goto(f"{asgi_live_server}/admin/core/leaderboard/?q=track")
    expect(page.get_by_role("link", name="Track 1")).to_be_visible()
    assert page.evaluate(wide)
