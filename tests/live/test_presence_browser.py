"""Presence in a real Chromium: two browser contexts, a linked user and someone watching.

The live server serves pages, the API and websockets, and ``live_broadcaster`` runs the real
broadcaster, so what one context does reaches the other the way it would in production.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client
from playwright.sync_api import Browser, BrowserContext, Page, expect

from accounts.models import PlayerLink
from core import apikeys
from core.models import Game
from tests.conftest import auth
from tests.live_server import ACTION_TIMEOUT_MS, DESKTOP_VIEWPORT, LIVE_WITHIN_MS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SLUG = "tetris"


class GameServer:
    """Posts scores and presence to the live server's API with a key of the game."""

    def __init__(self, game: Game, base_url: str) -> None:
        _, raw_key = apikeys.api_key_create(game=game, name="server")
        self.client = httpx.Client(base_url=base_url, headers=auth(raw_key), timeout=10)

    def score(self, player_id: str, score: int, name: str | None = None) -> None:
        body: dict[str, object] = {"player_id": player_id, "score": score}
        if name:
            body["display_name"] = name
        response = self.client.post(f"/api/v1/games/{SLUG}/leaderboards/main/scores", json=body)
        assert response.status_code == 200, response.text

    def presence(self, online: list[str], offline: list[str]) -> None:
        response = self.client.post(f"/api/v1/games/{SLUG}/presence", json={"online": online, "offline": offline})
        assert response.status_code == 200, response.text


@pytest.fixture
def game(make_game) -> Game:
    return make_game(SLUG, periods_kept=["all-time"])


@pytest.fixture
def server(game: Game, asgi_live_server: str) -> Iterator[GameServer]:
    poster = GameServer(game, asgi_live_server)
    yield poster
    poster.client.close()


def signed_in_context(browser: Browser, base_url: str, game: Game, player_id: str) -> BrowserContext:
    """A browser context whose user is signed in and linked to ``player_id``."""
    user = User.objects.create_user("ada", password="pw-123456789")
    PlayerLink.objects.create(user=user, game=game, player_id=player_id)
    client = Client()
    client.force_login(user)
    context = browser.new_context(viewport=DESKTOP_VIEWPORT)
    context.set_default_timeout(ACTION_TIMEOUT_MS)
    cookie = client.cookies[settings.SESSION_COOKIE_NAME].value
    context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": cookie, "url": base_url}])
    return context


def online_names(page: Page):
    return page.locator("[data-presence-list] li a")


def test_it_shows_a_linked_user_online_in_another_browser_while_their_page_is_open(
    game,
    server,
    asgi_live_server,
    live_broadcaster,
    browser,
    page,
):
    server.score("ada-42", 10, "Ada")
    server.score("bob", 20, "Bob")
    server.presence(online=[], offline=["ada-42", "bob"])  # scores are heartbeats: start everyone offline
    page.goto(f"{asgi_live_server}/games/{SLUG}/")
    expect(page.locator("[data-presence-online]")).to_have_text("0")
    expect(page.locator("[data-live-status]")).to_have_attribute("data-state", "live")

    linked = signed_in_context(browser, asgi_live_server, game, "ada-42")
    theirs = linked.new_page()
    theirs.goto(f"{asgi_live_server}/games/{SLUG}/")

    expect(online_names(page)).to_have_text(["Ada"], timeout=LIVE_WITHIN_MS)
    expect(page.locator("[data-presence-online]")).to_have_text("1")
    ada_row = page.locator('table.board tr[data-player-id="ada-42"]')
    expect(ada_row.locator(".presence-dot")).to_have_count(1)
    expect(page.locator('table.board tr[data-player-id="bob"] .presence-dot')).to_have_count(0)
    # The linked user sees their own row marked.
    expect(theirs.locator('table.board tr[data-player-id="ada-42"]')).to_have_class("is-me")

    theirs.close()

    expect(online_names(page)).to_have_count(0, timeout=LIVE_WITHIN_MS)
    expect(page.locator("[data-presence-online]")).to_have_text("0")
    expect(ada_row.locator(".presence-dot")).to_have_count(0)
    linked.close()


def test_it_counts_an_anonymous_page_as_watching(game, server, asgi_live_server, live_broadcaster, browser, page):
    page.goto(f"{asgi_live_server}/games/{SLUG}/")
    expect(page.locator("[data-live-status]")).to_have_attribute("data-state", "live")
    expect(page.locator("[data-presence-watching]")).to_have_text("1", timeout=LIVE_WITHIN_MS)

    other = browser.new_context(viewport=DESKTOP_VIEWPORT)
    second = other.new_page()
    second.goto(f"{asgi_live_server}/games/{SLUG}/")

    expect(page.locator("[data-presence-watching]")).to_have_text("2", timeout=LIVE_WITHIN_MS)
    # Closing the tab, as a reader does: the socket says goodbye (tearing the whole
    # context down may skip that, and the server then notices only at the timeout).
    second.close()
    other.close()
    expect(page.locator("[data-presence-watching]")).to_have_text("1", timeout=LIVE_WITHIN_MS)


def test_it_shows_a_game_server_heartbeat_live(game, server, asgi_live_server, live_broadcaster, page):
    server.score("carol", 30, "Carol")
    server.presence(online=[], offline=["carol"])
    page.goto(f"{asgi_live_server}/games/{SLUG}/")
    expect(page.locator("[data-presence-empty]")).to_be_visible()

    server.presence(online=["carol"], offline=[])

    expect(online_names(page)).to_have_text(["Carol"], timeout=LIVE_WITHIN_MS)
    expect(page.locator('table.board tr[data-player-id="carol"] .presence-dot')).to_have_count(1)
    expect(page.locator("[data-presence-summary]")).to_contain_text("1 player online")


def test_it_shows_on_the_player_page_when_the_player_comes_and_goes(
    game,
    server,
    asgi_live_server,
    live_broadcaster,
    page,
):
    server.score("carol", 30, "Carol")
    server.presence(online=[], offline=["carol"])
    page.goto(f"{asgi_live_server}/games/{SLUG}/players/carol/")
    status = page.locator("[data-player-presence]")
    expect(status).to_contain_text("Last seen")
    expect(page.locator("[data-live-status]")).to_have_attribute("data-state", "live")

    server.presence(online=["carol"], offline=[])
    expect(status).to_have_text("Online now", timeout=LIVE_WITHIN_MS)

    server.presence(online=[], offline=["carol"])
    expect(status).to_have_text("Last seen just now", timeout=LIVE_WITHIN_MS)


def test_it_keeps_a_linked_users_you_bar_on_screen_and_current(
    game,
    server,
    asgi_live_server,
    live_broadcaster,
    browser,
):
    for i in range(60):
        server.score(f"p{i:02}", 1000 + i)
    server.score("ada-42", 1, "Ada")
    context = signed_in_context(browser, asgi_live_server, game, "ada-42")
    mine = context.new_page()
    mine.goto(f"{asgi_live_server}/games/{SLUG}/")
    bar = mine.locator("[data-me-bar]")
    expect(bar).to_be_visible()
    expect(bar.locator("[data-me-rank]")).to_have_text("#61")
    off_page = re.compile(r"^\?period=[a-z-]+&page=2#me$")  # rank 61 at 50 a page
    expect(bar.get_by_role("link", name="Jump to me")).to_have_attribute("href", off_page)
    expect(mine.locator("[data-live-status]")).to_have_attribute("data-state", "live")
    # Scrolled to the foot of the board, the bar is still on screen.
    mine.locator("table.board tbody tr").last.scroll_into_view_if_needed()
    box = bar.bounding_box()
    assert box is not None and box["y"] + box["height"] <= (mine.viewport_size or {"height": 0})["height"] + 1

    server.score("ada-42", 5000)  # best mode: the new best moves Ada to the top

    # Marked as theirs (a row that moved also flashes is-new a moment: not part of the check).
    row = mine.locator('table.board tr[data-player-id="ada-42"]')
    expect(row).to_have_class(re.compile(r"(^|\s)is-me(\s|$)"), timeout=LIVE_WITHIN_MS)
    expect(bar.locator("[data-me-rank]")).to_have_text("#1", timeout=LIVE_WITHIN_MS)
    jump = bar.get_by_role("link", name="Jump to me")
    expect(jump).to_have_attribute("href", "#me")
    jump.click()
    expect(row).to_be_in_viewport()
    context.close()
