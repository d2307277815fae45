"""The pages of a game with four boards, as a new player finds them, in a real Chromium through
the real ASGI stack: every width from a desktop to the narrowest phone, signed in and out, and
every link the page has, including those the live scripts add, answering 200 on the board shown.

The boards: Main (points, every window), Track 1 (a time trial: lowest time wins, shown as
1:46.416, with a custom cron window), Decimals (two decimals) and a season.
"""

from __future__ import annotations

import base64
import datetime as dt
import os
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client
from playwright.sync_api import Browser, BrowserContext, Page, expect

from accounts.models import PlayerLink
from core import apikeys, branding
from core import services as core_services
from core.clock import now as clock_now
from core.models import Game
from tests.a11y.axe import serious_violations
from tests.conftest import auth
from tests.live_server import ACTION_TIMEOUT_MS, LIVE_WITHIN_MS, asgi_live_server, browser, live_broadcaster  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SLUG = "tetris"
WIDTHS = (1280, 390, 375, 360, 320)
# Set to a folder to keep a screenshot of every page at every width (for a look at them).
SCREENSHOTS = os.environ.get("FOUR_BOARDS_SCREENSHOTS", "")
# The signed-in user: a name as long as real ones, which the header must fit on a phone.
USERNAME = "omegaspecter"
# A 32x32 PNG: a green square (the game's logo).
LOGO_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAACAAAAAgCAIAAAD8GO2jAAAAKklEQVR42mPgqjWmKWIYtWDUglELRi0YtWDUglELRi0YtWDUglELhooFAPBi6B8zIFnYAAAAAElFTkSuQmCC"
)


def four_boards() -> tuple[Game, str]:
    """The game, its four boards and a few players on each; a submit key's raw value."""
    game = core_services.game_create(slug=SLUG, name="Tetris", max_submissions_per_minute=0)
    core_services.leaderboard_create(game=game, slug="main", name="Main")
    core_services.leaderboard_create(
        game=game,
        slug="track-1",
        name="Track 1",
        mode="best",
        order="asc",
        score_format="time_ms",
        windows=["custom", "weekly", "all-time"],
        cron="0 18 * * 5",
    )
    core_services.leaderboard_create(game=game, slug="decimals", name="Decimals", score_format="decimal:2")
    now = clock_now()
    core_services.leaderboard_create(
        game=game,
        slug="season",
        name="Season",
        windows=["all-time"],
        starts_at=now - dt.timedelta(days=7),
        ends_at=now + dt.timedelta(days=60),
    )
    # Branded as a studio would in admin: the pages show the accent, the logo, and the short name on phones.
    game.short_name, game.accent = "Tetris", "#0a7d33"
    game.name = "Tetris Worldwide Championship"
    game.logo, game.logo_type = LOGO_PNG, branding.logo_type(LOGO_PNG)
    game.logo_version = branding.logo_version(LOGO_PNG)
    game.save()
    _, raw_key = apikeys.api_key_create(game=game, name="server")
    return game, raw_key


class Scores:
    def __init__(self, base_url: str, raw_key: str) -> None:
        self.client = httpx.Client(base_url=base_url, headers=auth(raw_key), timeout=10)

    def post(self, board: str, player_id: str, score: int, name: str) -> None:
        body = {"player_id": player_id, "score": score, "display_name": name}
        response = self.client.post(f"/api/v1/games/{SLUG}/leaderboards/{board}/scores", json=body)
        assert response.status_code == 200, response.text


@pytest.fixture
def game(asgi_live_server: str) -> Iterator[tuple[Game, Scores]]:  # noqa: F811
    made, raw_key = four_boards()
    scores = Scores(asgi_live_server, raw_key)
    for board, score in (("main", 292_045), ("decimals", 9_507), ("season", 3_536), ("track-1", 106_416)):
        scores.post(board, "zed", score, "Zed")
        scores.post(board, "ali", score + 10, "Alistair")
    scores.post("track-1", "alina", 120_000, "Alina")
    yield made, scores
    scores.client.close()


def signed_in_cookie(game: Game) -> str:
    user = get_user_model().objects.create_user(USERNAME, password="pw-123456789")
    PlayerLink.objects.create(user=user, game=game, player_id="zed")
    client = Client()
    client.force_login(user)
    return client.cookies[settings.SESSION_COOKIE_NAME].value


def new_page(browser: Browser, base_url: str, width: int, cookie: str | None) -> tuple[BrowserContext, Page]:  # noqa: F811
    context = browser.new_context(viewport={"width": width, "height": 800})
    context.set_default_timeout(ACTION_TIMEOUT_MS)
    if cookie:
        context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": cookie, "url": base_url}])
    return context, context.new_page()


def answers_200(base_url: str, href: str) -> None:
    response = httpx.get(base_url + href if href.startswith("/") else href, timeout=10)
    assert response.status_code == 200, (href, response.status_code, response.text[:300])


PAGES = (
    "/",
    f"/games/{SLUG}/",
    f"/games/{SLUG}/?board=track-1&period=custom",
    f"/games/{SLUG}/?board=decimals&period=weekly",
    f"/games/{SLUG}/players/zed/?board=track-1&period=custom",
    f"/games/{SLUG}/players/ali/",
    f"/games/{SLUG}/history/?board=track-1",
)
# A signed-in user's own pages: the account, its e-mail, password and deletion forms, linking.
SIGNED_IN_PAGES = ("/account/", "/account/password/", "/account/delete/", f"/games/{SLUG}/link/")


def test_it_never_scrolls_sideways_at_any_width_signed_in_or_out(game, asgi_live_server, browser):  # noqa: F811
    cookie = signed_in_cookie(game[0])
    for who, session in (("out", None), ("in", cookie)):
        for width in WIDTHS:
            context, page = new_page(browser, asgi_live_server, width, session)
            paths = (
                (*PAGES, *SIGNED_IN_PAGES)
                if session
                else (*PAGES, "/account/login/", "/account/signup/", "/account/password/reset/")
            )
            for path in paths:
                page.goto(asgi_live_server + path)
                if session:
                    expect(page.get_by_role("button", name="Log out")).to_be_visible()
                if SCREENSHOTS:
                    name = re.sub(r"[^a-z0-9]+", "-", path).strip("-") or "home"
                    page.screenshot(path=str(Path(SCREENSHOTS) / f"{who}-{width}-{name}.png"), full_page=True)
                overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
                assert overflow <= 0, (who, width, path, overflow)
                if session:
                    logout = page.get_by_role("button", name="Log out").bounding_box()
                    assert logout is not None and logout["x"] + logout["width"] <= width, (width, path)
            context.close()


def test_it_links_live_rows_and_recent_submissions_to_the_board_they_are_on(
    game,
    asgi_live_server,  # noqa: F811
    browser,  # noqa: F811
    live_broadcaster,  # noqa: F811
):
    _, scores = game
    context, page = new_page(browser, asgi_live_server, 1280, None)
    page.goto(f"{asgi_live_server}/games/{SLUG}/?board=track-1&period=custom")
    expect(page.locator("[data-live-status]")).to_have_attribute("data-state", "live", timeout=LIVE_WITHIN_MS)
    recent = page.locator("[data-recent-list] li")
    # Every submission says which board it went to: the game has four.
    expect(recent.first.locator(".recent-board")).to_have_count(1)

    scores.post("track-1", "livenew", 99_001, "Live New")
    row_link = page.locator("table.board tbody tr a", has_text="Live New")
    expect(row_link).to_be_visible(timeout=LIVE_WITHIN_MS)
    href = row_link.get_attribute("href") or ""
    assert parse_qs(urlsplit(href).query) == {"board": ["track-1"], "period": ["custom"]}
    answers_200(asgi_live_server, href)

    item = recent.filter(has_text="Live New")
    expect(item).to_have_count(1, timeout=LIVE_WITHIN_MS)
    expect(item.locator(".recent-board")).to_have_text("Track 1")
    expect(item.locator(".score")).to_have_text("1:39.001")
    answers_200(asgi_live_server, item.locator("a").get_attribute("href") or "")

    # A score on another board: named as that board, linked to the player on it.
    scores.post("decimals", "livenew", 12_345, "Live New")
    other = recent.filter(has_text="123.45")
    expect(other).to_have_count(1, timeout=LIVE_WITHIN_MS)
    expect(other.locator(".recent-board")).to_have_text("Decimals")
    other_href = other.locator("a").get_attribute("href") or ""
    assert parse_qs(urlsplit(other_href).query) == {"board": ["decimals"]}
    answers_200(asgi_live_server, other_href)

    # As the server renders them on the next visit.
    page.reload()
    served = page.locator("[data-recent-list] li").filter(has_text="123.45")
    expect(served.locator(".recent-board")).to_have_text("Decimals")
    for link in page.locator("main a[href]").all():
        href = link.get_attribute("href") or ""
        if href.startswith("/") and not href.startswith("/api/docs"):
            answers_200(asgi_live_server, href)
    context.close()


def test_it_finds_a_player_on_the_board_and_window_shown(game, asgi_live_server, browser):  # noqa: F811
    context, page = new_page(browser, asgi_live_server, 390, None)
    player_page = r"/players/ali/\?board=track-1&period="
    for window in ("custom", "weekly"):
        # Two names start with "Ali": a list, each linked to the board and window shown.
        page.goto(f"{asgi_live_server}/games/{SLUG}/?board=track-1&period={window}")
        page.get_by_label("Find a player by name or id").fill("Ali")
        page.get_by_role("button", name="Find").click()
        query = parse_qs(urlsplit(page.url).query)
        assert query["board"] == ["track-1"] and query["period"] == [window], page.url
        found = page.locator(".find-results a", has_text="Alistair")
        expect(found).to_be_visible()
        found.click()
        expect(page).to_have_url(re.compile(player_page + window + "$"))
        expect(page.get_by_role("heading", level=1)).to_contain_text("Alistair")
        # One name starts with "Alis": straight to that player, on the same board and window.
        page.goto(f"{asgi_live_server}/games/{SLUG}/?board=track-1&period={window}")
        page.get_by_label("Find a player by name or id").fill("Alis")
        page.get_by_role("button", name="Find").click()
        expect(page).to_have_url(re.compile(player_page + window + "$"))
        expect(page.get_by_role("heading", level=1)).to_contain_text("Alistair")
    context.close()


def test_it_names_the_board_and_its_windows_when_a_window_is_not_kept(game, asgi_live_server):  # noqa: F811
    response = httpx.get(f"{asgi_live_server}/games/{SLUG}/?board=track-1&period=daily", timeout=10)
    assert response.status_code == 404
    says = "Tetris Worldwide Championship&#x27;s Track 1 keeps no “daily” window; it keeps weekly, all-time and custom."
    assert says in response.text


def test_it_offers_history_tabs_only_for_windows_that_end_on_the_board_shown(game, asgi_live_server):  # noqa: F811
    def tabs(query: str) -> list[str]:
        html = httpx.get(f"{asgi_live_server}/games/{SLUG}/history/{query}", timeout=10).text
        nav = html.split('aria-label="Period">', 1)[1].split("</nav>", 1)[0]
        return re.findall(r'class="tab"[^>]*>([^<]+)</a>', nav)

    # Track 1's all-time never ends (no season): no tab for it.
    assert tabs("?board=track-1") == ["All", "Weekly", "Custom"]
    assert tabs("") == ["All", "Daily", "Weekly", "Monthly", "Custom", "All-time"]  # the season's ends
    assert tabs("?board=main") == ["All", "Daily", "Weekly", "Monthly"]
    assert tabs("?board=season") == ["All", "All-time"]


def test_it_names_the_board_on_each_of_a_players_cards(game, asgi_live_server):  # noqa: F811
    html = httpx.get(f"{asgi_live_server}/games/{SLUG}/players/zed/?board=track-1&period=custom", timeout=10).text
    cards = re.findall(r'<h2 class="eyebrow">([^<]+)</h2>', html.split('class="stats"', 1)[1])
    assert cards == ["Track 1 · Weekly", "Track 1 · All-time", "Track 1 · Custom"]


def test_it_brings_a_player_back_to_the_board_they_were_on_when_they_log_in(game, asgi_live_server, browser):  # noqa: F811
    get_user_model().objects.create_user(USERNAME, password="pw-123456789")
    context, page = new_page(browser, asgi_live_server, 390, None)  # a fresh browser
    board = f"/games/{SLUG}/?board=track-1&period=custom"
    page.goto(asgi_live_server + board)
    page.get_by_role("link", name="Log in").click()
    page.get_by_label("Username").fill(USERNAME)
    page.get_by_label("Password").fill("pw-123456789")
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(asgi_live_server + board)
    expect(page.get_by_role("button", name="Log out")).to_be_visible()
    context.close()


def test_it_has_no_serious_accessibility_violation_on_any_page(game, asgi_live_server, browser):  # noqa: F811
    cookie = signed_in_cookie(game[0])
    found: dict[str, list[dict[str, object]]] = {}
    for who, session in (("out", None), ("in", cookie)):
        for width in (1280, 320):
            context, page = new_page(browser, asgi_live_server, width, session)
            paths = (*PAGES, *SIGNED_IN_PAGES) if session else (*PAGES, "/account/login/", "/account/signup/")
            for path in paths:
                page.goto(asgi_live_server + path)
                violations = serious_violations(page)
                if violations:
                    found[f"{who} {width} {path}"] = violations
            context.close()
    assert found == {}
