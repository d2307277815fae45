"""The widget and the iframe on another website, in a real Chromium: a studio's page served on
another host and port shows the game's board through `<leaderboard-board>` and through the
iframe, live (a score posted to the API shows in both while the widget's socket is live), its
links answer 200, it fits a phone, and axe finds nothing serious. A site the studio did not list
gets neither: the API and the socket refuse it, and the frame is blocked.

Chromium resolves studio.test and evil.test to 127.0.0.1 (--host-resolver-rules), so that the
pages have origins of their own that the server's ALLOWED_HOSTS does not know.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from core import apikeys
from core import services as core_services
from core.models import Game
from tests.a11y.axe import serious_violations
from tests.conftest import auth
from tests.live_server import (  # noqa: F401 - fixtures
    ACTION_TIMEOUT_MS,
    LIVE_WITHIN_MS,
    asgi_live_server,
    chromium,
    live_broadcaster,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS = (1280, 390, 320)
SCREENSHOTS = os.environ.get("EMBED_SCREENSHOTS", "")


class StudioSite:
    """Another website: one page, on its own port, that embeds the board both ways."""

    def __init__(self, server_url: str) -> None:
        self.server_url = server_url
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = site.html().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def html(self) -> str:
        base = self.server_url
        return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Studio news</title>
<script type="module" src="{base}/static/embed/leaderboard.js"></script>
<style>body {{ font-family: Georgia, serif; margin: 1rem; }} iframe {{ width: 100%; height: 320px; border: 0; }}</style>
</head><body><main>
<h1>This week in Tetris</h1>
<leaderboard-board game="tetris" board="main" period="all-time" limit="5" accent="#b91c1c"></leaderboard-board>
<iframe title="Tetris leaderboard" src="{base}/embed/games/tetris/main/?period=all-time&amp;limit=5"></iframe>
</main></body></html>"""

    def url(self, host: str) -> str:
        return f"http://{host}:{self.port}/"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Chromium as the other browser tests start it, with two made-up hosts on 127.0.0.1."""
    with chromium("--host-resolver-rules=MAP studio.test 127.0.0.1, MAP evil.test 127.0.0.1") as launched:
        yield launched


@pytest.fixture
def studio(asgi_live_server: str) -> Iterator[tuple[StudioSite, httpx.Client]]:  # noqa: F811
    site = StudioSite(asgi_live_server)
    game = core_services.game_create(slug="tetris", name="Tetris Worldwide", max_submissions_per_minute=0)
    core_services.leaderboard_create(game=game, slug="main", name="Main")
    game = Game.objects.get(pk=game.pk)
    game.short_name, game.accent = "Tetris", "#1d4ed8"
    game.embed_origins = [site.url("studio.test").rstrip("/")]
    game.save()
    _, raw_key = apikeys.api_key_create(game=game, name="server")
    scores = httpx.Client(base_url=asgi_live_server, headers=auth(raw_key), timeout=10)
    core_services.leaderboard_create(game=game, slug="track-1", name="Track 1", order="asc", score_format="time_ms")
    for player_id, score in (("ann", 900), ("bob", 800), ("cy", 700)):
        post(scores, player_id, score)
    post(scores, "ann", 106_416, board="track-1")
    yield site, scores
    scores.close()
    site.close()


def post(scores: httpx.Client, player_id: str, score: int, board: str = "main") -> None:
    body = {"player_id": player_id, "score": score, "display_name": player_id.title()}
    response = scores.post(f"/api/v1/games/tetris/leaderboards/{board}/scores", json=body)
    assert response.status_code == 200, response.text


def open_page(browser: Browser, url: str, width: int) -> tuple[Page, list[str]]:
    context = browser.new_context(viewport={"width": width, "height": 900})
    context.set_default_timeout(ACTION_TIMEOUT_MS)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.goto(url)
    return page, errors


def add_widget(page: Page, tag_id: str, **attributes: str) -> None:
    """A second <leaderboard-board> put on the page by script, as a site's own code may."""
    page.evaluate(
        """([id, attributes]) => {
        const tag = document.createElement('leaderboard-board');
        for (const [name, value] of Object.entries(attributes)) tag.setAttribute(name, value);
        tag.id = id;
        document.querySelector('main').append(tag);
    }""",
        [tag_id, attributes],
    )


def widget_rows(page: Page) -> list[str]:
    return page.locator("leaderboard-board tbody tr").all_inner_texts()


def test_it_shows_a_live_board_on_a_listed_site_both_ways(browser, studio, live_broadcaster):  # noqa: F811
    site, scores = studio
    page, errors = open_page(browser, site.url("studio.test"), 1280)
    widget = page.locator("leaderboard-board")
    expect(widget.locator(".status")).to_have_text("live", timeout=LIVE_WITHIN_MS)
    expect(widget.locator("h2")).to_contain_text("Tetris")
    expect(widget.locator("h2 .sub")).to_have_text("Main · All-time")
    assert [row.split("\t")[:2] for row in widget_rows(page)] == [["1", "Ann"], ["2", "Bob"], ["3", "Cy"]]
    frame = page.frame_locator("iframe")
    expect(frame.locator("leaderboard-board .status")).to_have_text("live", timeout=LIVE_WITHIN_MS)

    post(scores, "dee", 1_000)  # a new leader, live in both
    expect(widget.locator("tbody tr").first).to_contain_text("Dee", timeout=LIVE_WITHIN_MS)
    expect(frame.locator("leaderboard-board .panel tbody tr").first).to_contain_text("Dee", timeout=LIVE_WITHIN_MS)
    expect(widget.locator(".status")).to_have_text("live")  # by the socket, not by polling

    # Every link of the widget, the row that came live included, answers 200.
    links = widget.locator("a").evaluate_all("nodes => nodes.map(n => n.href)")
    assert any("/players/dee/" in link for link in links) and any("/games/tetris/?board=main" in link for link in links)
    for link in links:
        assert page.request.get(link).status == 200, link
    assert serious_violations(page) == []
    assert errors == []
    page.context.close()


def test_it_fits_a_phone_and_themes_by_attribute(browser, studio):
    site, _ = studio
    for width in WIDTHS:
        page, errors = open_page(browser, site.url("studio.test"), width)
        widget = page.locator("leaderboard-board")
        expect(widget.locator("tbody tr")).to_have_count(3)
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), width
        accent = widget.locator(".panel").evaluate("n => getComputedStyle(n).borderTopColor")
        assert accent == "rgb(185, 28, 28)"  # the tag's accent over the game's
        if SCREENSHOTS:
            page.screenshot(path=os.path.join(SCREENSHOTS, f"embed-{width}.png"), full_page=True)
        assert errors == []
        page.context.close()


def test_it_gives_an_unlisted_site_neither_the_board_nor_the_frame(browser, studio):
    site, _ = studio
    page, _ = open_page(browser, site.url("evil.test"), 1280)
    widget = page.locator("leaderboard-board")
    expect(widget.locator(".problem")).to_contain_text("could not be loaded")  # the API refused the origin
    expect(widget.locator("tbody tr")).to_have_count(0)
    frame = page.frame_locator("iframe")
    expect(frame.locator("leaderboard-board")).to_have_count(0)  # frame-ancestors blocked it
    assert page.frames[1].url.startswith("chrome-error://")
    page.context.close()


def test_it_explains_a_wrong_tag_inside_the_widget(browser, studio):
    site, _ = studio
    page, _ = open_page(browser, site.url("studio.test"), 1280)
    add_widget(page, "wrong", game="tetris", period="hourly")
    says = "Main keeps no “hourly” window; it keeps daily, weekly, monthly, all-time."
    expect(page.locator("#wrong .problem")).to_have_text(says)
    page.context.close()


def test_it_polls_the_api_where_websockets_are_blocked(browser, studio):
    # A proxy or a browser setting that refuses websockets: the widget reads the public API
    # every 5 s instead, says so, and shows scores in the board's format all the same.
    site, scores = studio
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.add_init_script("window.WebSocket = function () { throw new Error('blocked'); };")
    page = context.new_page()
    page.goto(site.url("studio.test"))
    add_widget(page, "track", game="tetris", board="track-1")
    track = page.locator("#track")
    expect(track.locator("tbody tr").first).to_contain_text("1:46.416")
    expect(track.locator(".status")).to_have_text("updating every 5 s")

    post(scores, "bob", 99_000, board="track-1")  # a faster lap: first on the next poll
    expect(track.locator("tbody tr").first).to_contain_text("1:39.000", timeout=LIVE_WITHIN_MS)
    context.close()


def test_it_opens_no_socket_for_a_tag_taken_off_the_page(browser, studio):
    site, _ = studio
    page, errors = open_page(browser, site.url("studio.test"), 1280)
    widget = page.locator("leaderboard-board").first
    expect(widget.locator(".status")).to_have_text("live", timeout=LIVE_WITHIN_MS)
    iframe_widget = page.frame_locator("iframe").locator("leaderboard-board")
    expect(iframe_widget.locator(".status")).to_have_text("live", timeout=LIVE_WITHIN_MS)
    opened: list[str] = []
    page.on("websocket", lambda socket: opened.append(socket.url))
    page.evaluate(
        """() => {
        const tag = document.createElement('leaderboard-board');
        tag.setAttribute('game', 'tetris');
        document.querySelector('main').append(tag);
        tag.remove();  // before its reads came back
    }"""
    )
    page.wait_for_timeout(2_000)
    assert opened == [] and errors == []
    page.context.close()


def test_it_keeps_a_focused_link_focused_as_its_row_moves(browser, studio, live_broadcaster):  # noqa: F811
    site, scores = studio
    page, errors = open_page(browser, site.url("studio.test"), 1280)
    widget = page.locator("leaderboard-board").first
    expect(widget.locator(".status")).to_have_text("live", timeout=LIVE_WITHIN_MS)
    widget.locator("tbody tr").nth(2).locator("a").focus()  # Cy, third
    post(scores, "cy", 750)  # the row's score changes; Cy stays third
    expect(widget.locator("tbody tr").nth(2)).to_contain_text("750", timeout=LIVE_WITHIN_MS)
    focused = "() => document.querySelector('leaderboard-board').shadowRoot.activeElement?.textContent"
    assert page.evaluate(focused) == "Cy"
    assert errors == []
    page.context.close()
