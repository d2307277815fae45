"""Live updates in a real Chromium: the pages follow the board over the websocket.

The live server serves pages, the API and websockets; ``live_broadcaster`` runs the
real broadcaster over the real Redis pub/sub channel layer (see tests/live_server.py).
Scores go in through the live server's API, as a game server would post them.
"""

from __future__ import annotations

import datetime as dt
import re
import time
from collections.abc import Callable, Iterator

import httpx
import pytest
from playwright.sync_api import Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from core import apikeys
from core.clock import iso
from core.clock import now as clock_now
from core.config import GameConfig
from core.models import Game
from core.redis import run_sync
from games import periods
from live import events
from tests.conftest import auth
from tests.live.test_pages_browser import XSS_NAME, board_rows
from tests.live_server import LIVE_WITHIN_MS, DialogWatch, asgi_live_server, browser, live_broadcaster  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Reconnecting: the first retry waits up to 0.5 s, then the snapshot comes.
RECONNECT_WITHIN_MS = 5_000
# Polling: every 5 s, plus the request.
POLLED_WITHIN_MS = 7_000
# A one-shot message is sent again this often, for this long, until the page shows it.
RESEND_EVERY_MS = 500
RESEND_FOR_SECS = 10.0
SLUG = "tetris"

# Records every state the indicator goes through, however briefly.
WATCH_STATES = """() => {
  const node = document.querySelector("[data-live-status]");
  window.__states = [node.dataset.state];
  new MutationObserver(() => window.__states.push(node.dataset.state))
    .observe(node, { attributes: true, attributeFilter: ["data-state"] });
}"""


def until_shown(send: Callable[[], object], shown: Callable[[float], object]) -> None:
    """Sends a one-shot message (a reset, a reconnect) until the page shows it. It reaches only
    sockets already in its group, and a page that says "live" has its socket open but may not
    have joined yet (its subscribe is on the way: seen in CI under load)."""
    deadline = time.monotonic() + RESEND_FOR_SECS
    while True:
        send()
        try:
            shown(RESEND_EVERY_MS)
            return
        except (AssertionError, PlaywrightTimeout):
            if time.monotonic() > deadline:
                raise


class Scores:
    """Posts scores to the live server's API with a key of the game."""

    def __init__(self, make_game, base_url: str) -> None:
        game = make_game(SLUG, description="Stack the falling blocks; clear lines.")
        _, raw_key = apikeys.api_key_create(game=game, name="server")
        self.client = httpx.Client(base_url=base_url, headers=auth(raw_key), timeout=10)

    def post(self, player_id: str, score: int, name: str | None = None) -> None:
        body: dict[str, object] = {"player_id": player_id, "score": score}
        if name is not None:
            body["display_name"] = name
        response = self.client.post(f"/api/v1/games/{SLUG}/leaderboards/main/scores", json=body)
        assert response.status_code == 200, response.text

    def post_many(self, items: list[tuple[str, int]]) -> None:
        body = {
            "scores": [{"leaderboard": "main", "player_id": player_id, "score": score} for player_id, score in items]
        }
        response = self.client.post(f"/api/v1/games/{SLUG}/scores/batch", json=body)
        assert response.status_code == 200, response.text


@pytest.fixture
def scores(make_game, asgi_live_server) -> Iterator[Scores]:  # noqa: F811
    poster = Scores(make_game, asgi_live_server)
    yield poster
    poster.client.close()


# Counts the slide animations live.js starts (Element.animate; the CSS flashes are not counted).
COUNT_SLIDES = """
window.__slides = 0;
const animate = Element.prototype.animate;
Element.prototype.animate = function (...args) {
  window.__slides += 1;
  return animate.apply(this, args);
};
"""


def status(page: Page):
    return page.locator("[data-live-status]")


def mark_page(page: Page) -> None:
    """A marker that only survives if the page is never reloaded."""
    page.evaluate("window.__sameDocument = true")


def assert_same_page(page: Page) -> None:
    assert page.evaluate("window.__sameDocument === true"), "the page was reloaded"


def test_it_patches_the_board_in_place_as_scores_arrive(
    asgi_live_server,  # noqa: F811
    live_broadcaster,  # noqa: F811
    scores,
    page,
):
    page.add_init_script(COUNT_SLIDES)
    page.goto(f"{asgi_live_server}/games/{SLUG}/")
    expect(status(page)).to_have_attribute("data-state", "live")
    expect(status(page)).to_have_text("live")
    expect(page.locator("[data-live-empty]")).to_be_visible()
    mark_page(page)

    scores.post("alice", 1200, "Alice")
    rows = page.locator("table.board tbody tr")
    expect(rows).to_have_count(1, timeout=LIVE_WITHIN_MS)
    expect(page.locator("[data-live-empty]")).to_be_hidden()
    scores.post("bob", 900, "Bob")
    expect(rows).to_have_count(2, timeout=LIVE_WITHIN_MS)
    assert board_rows(page) == [["1", "Alice", "1,200"], ["2", "Bob", "900"]]
    expect(page.locator("[data-live-pager-status]")).to_have_text("2 players on the daily board")
    assert page.locator("tr[data-player-id=bob] a.player").get_attribute("href") == (
        f"/games/{SLUG}/players/bob/?period=daily"
    )

    page.evaluate("document.querySelector('tr[data-player-id=bob]').__mark = 'the same node'")
    scores.post("bob", 3400)

    expect(rows.first).to_have_attribute("data-player-id", "bob", timeout=LIVE_WITHIN_MS)
    assert board_rows(page) == [["1", "Bob", "3,400"], ["2", "Alice", "1,200"]]
    assert page.evaluate("document.querySelector('table.board tbody tr').__mark") == "the same node"
    assert page.locator(".rank-1").text_content() == "1"
    assert page.evaluate("window.__slides") == 2  # both rows slid to their new places
    assert_same_page(page)
    page.screenshot(path="/tmp/live.png", full_page=True, animations="disabled")


def test_it_moves_rows_without_sliding_when_the_reader_prefers_reduced_motion(
    asgi_live_server,  # noqa: F811
    live_broadcaster,  # noqa: F811
    scores,
    page,
):
    scores.post("alice", 1200, "Alice")
    scores.post("bob", 900, "Bob")
    page.emulate_media(reduced_motion="reduce")
    page.add_init_script(COUNT_SLIDES)
    page.goto(f"{asgi_live_server}/games/{SLUG}/")
    expect(status(page)).to_have_attribute("data-state", "live")

    scores.post("bob", 3400)

    expect(page.locator("table.board tbody tr").first).to_have_attribute(
        "data-player-id", "bob", timeout=LIVE_WITHIN_MS
    )
    assert board_rows(page) == [["1", "Bob", "3,400"], ["2", "Alice", "1,200"]]
    assert page.evaluate("window.__slides") == 0


def test_it_reconnects_by_itself_after_the_server_closes_the_socket(
    asgi_live_server,  # noqa: F811
    live_broadcaster,  # noqa: F811
    scores,
    page,
):
    scores.post("alice", 1200, "Alice")
    page.goto(f"{asgi_live_server}/games/{SLUG}/")
    expect(status(page)).to_have_attribute("data-state", "live")
    mark_page(page)
    page.evaluate(WATCH_STATES)

    until_shown(
        lambda: run_sync(lambda: events.send_reconnect(f"{SLUG}.main", "daily")),
        lambda ms: page.wait_for_function("window.__states.includes('offline')", timeout=ms),
    )
    scores.post("bob", 3400, "Bob")

    expect(status(page)).to_have_attribute("data-state", "live", timeout=RECONNECT_WITHIN_MS)
    expect(page.locator("table.board tbody tr").first).to_have_attribute(
        "data-player-id", "bob", timeout=LIVE_WITHIN_MS
    )
    assert board_rows(page) == [["1", "Bob", "3,400"], ["2", "Alice", "1,200"]]
    states = page.evaluate("window.__states")
    assert states[0] == "live" and states[-1] == "live" and "offline" in states, states
    assert_same_page(page)

    # Still subscribed after the reconnect: the next score arrives live too.
    scores.post("carol", 5000, "Carol")
    expect(page.locator("table.board tbody tr").first).to_have_attribute(
        "data-player-id", "carol", timeout=LIVE_WITHIN_MS
    )


def test_it_empties_the_board_and_moves_the_countdown_on_a_reset(
    asgi_live_server,  # noqa: F811
    live_broadcaster,  # noqa: F811
    scores,
    page,
):
    scores.post("alice", 1200, "Alice")
    page.goto(f"{asgi_live_server}/games/{SLUG}/")
    expect(status(page)).to_have_attribute("data-state", "live")
    mark_page(page)
    tomorrow = periods.current("daily", "UTC", clock_now() + dt.timedelta(days=1))
    assert tomorrow.ends_at is not None

    board = GameConfig.from_model(Game.objects.get(slug=SLUG), "0").boards[0]
    until_shown(
        lambda: run_sync(lambda: events.send_reset(board, tomorrow)),
        lambda ms: expect(page.locator("table.board")).to_be_hidden(timeout=ms),
    )
    expect(page.locator("[data-live-empty]")).to_have_text(re.compile("^No scores on the daily board yet"))
    expect(page.locator("[data-live-pager]")).to_be_hidden()
    countdown = page.locator("[data-ends-at]")
    assert countdown.get_attribute("data-ends-at") == iso(tomorrow.ends_at)
    # site.js counts down to the new target: more than a day away now.
    expect(countdown).to_have_text(re.compile(r"^1d \d+h \d\dm \d\ds$"))
    assert_same_page(page)


def test_it_shows_a_rank_change_on_the_player_page(
    asgi_live_server,  # noqa: F811
    live_broadcaster,  # noqa: F811
    scores,
    page,
):
    scores.post("alice", 1200, "Alice")
    scores.post("bob", 900, "Bob")
    page.goto(f"{asgi_live_server}/games/{SLUG}/players/bob/")
    expect(status(page)).to_have_attribute("data-state", "live")
    daily = page.locator(".stat[data-period=daily]")
    expect(daily.locator(".stat-rank")).to_have_text("#2 of 2")
    mark_page(page)

    scores.post("carol", 1500, "Carol")

    expect(daily.locator(".stat-rank")).to_have_text("#3 of 3", timeout=LIVE_WITHIN_MS)
    expect(page.locator(".stat[data-period=all-time] .stat-rank")).to_have_text("#3 of 3")
    expect(daily.locator(".score")).to_have_text("900")
    # The table around the player follows too.
    expect(page.locator("table.board tbody tr")).to_have_count(3, timeout=LIVE_WITHIN_MS)

    scores.post("bob", 2000)

    expect(daily.locator(".stat-rank")).to_have_text("#1 of 3", timeout=LIVE_WITHIN_MS)
    expect(daily.locator(".score")).to_have_text("2,000")
    expect(page.locator("table.board tbody tr").first).to_have_attribute(
        "data-player-id", "bob", timeout=LIVE_WITHIN_MS
    )
    expect(page.locator("tr.is-me")).to_have_attribute("data-player-id", "bob")
    assert_same_page(page)


def test_it_keeps_the_players_neighbours_live_when_only_they_move(
    asgi_live_server,  # noqa: F811
    live_broadcaster,  # noqa: F811
    scores,
    page,
):
    # Ranks 1..20 with bob at 10: his neighbours may reorder without his rank moving, which once
    # left the table around him as it was.
    scores.post_many([(f"p{n:02d}", 2000 - n * 10) for n in range(1, 21) if n != 10])
    scores.post("bob", 1900, "Bob")
    page.goto(f"{asgi_live_server}/games/{SLUG}/players/bob/")
    expect(status(page)).to_have_attribute("data-state", "live")
    around = page.locator("table.board tbody tr")
    expect(around).to_have_count(11)
    assert [r[1] for r in board_rows(page)][5:9] == ["Bob", "p11", "p12", "p13"]
    mark_page(page)

    until_shown(
        lambda: scores.post("p13", 1885),  # passes p12 (1880), stays below bob (1900)
        lambda ms: expect(around.nth(7)).to_have_attribute("data-player-id", "p13", timeout=ms),
    )
    assert [r[1] for r in board_rows(page)][5:9] == ["Bob", "p11", "p13", "p12"]
    expect(page.locator(".stat[data-period=daily] .stat-rank")).to_have_text("#10 of 20")
    assert_same_page(page)


def test_it_shows_a_hostile_display_name_arriving_live_as_text(
    asgi_live_server,  # noqa: F811
    live_broadcaster,  # noqa: F811
    scores,
    page,
    dialogs,
):
    scores.post("alice", 1200, "Alice")
    page.goto(f"{asgi_live_server}/games/{SLUG}/")
    expect(status(page)).to_have_attribute("data-state", "live")

    scores.post("mallory", 3000, XSS_NAME)

    name = page.locator("tr[data-player-id=mallory] a.player")
    expect(name).to_have_text(XSS_NAME, timeout=LIVE_WITHIN_MS)
    page.wait_for_timeout(200)  # an onerror handler would fire as the image fails to load
    assert page.locator("img").count() == 0
    assert dialogs.fired == []


def test_it_falls_back_to_polling_when_websockets_are_blocked(
    asgi_live_server,  # noqa: F811
    scores,
    page,
):
    # No broadcaster either: only polling can bring the new score.
    page.route_web_socket(re.compile(r"/ws/"), lambda ws: ws.close())
    scores.post("alice", 1200, "Alice")
    page.goto(f"{asgi_live_server}/games/{SLUG}/")
    expect(status(page)).to_have_attribute("data-state", "offline")
    expect(status(page)).to_have_text("offline — updating every 5 s")
    mark_page(page)

    scores.post("bob", 3400, "Bob")

    expect(page.locator("table.board tbody tr").first).to_have_attribute(
        "data-player-id", "bob", timeout=POLLED_WITHIN_MS
    )
    assert board_rows(page) == [["1", "Bob", "3,400"], ["2", "Alice", "1,200"]]
    expect(status(page)).to_have_attribute("data-state", "offline")
    assert_same_page(page)


def test_it_polls_the_player_page_when_websockets_are_blocked(
    asgi_live_server,  # noqa: F811
    scores,
    page,
):
    page.route_web_socket(re.compile(r"/ws/"), lambda ws: ws.close())
    scores.post("alice", 1200, "Alice")
    scores.post("bob", 900, "Bob")
    page.goto(f"{asgi_live_server}/games/{SLUG}/players/bob/")
    expect(status(page)).to_have_attribute("data-state", "offline")
    daily = page.locator(".stat[data-period=daily]")
    expect(daily.locator(".stat-rank")).to_have_text("#2 of 2")

    scores.post("bob", 2000)

    expect(daily.locator(".stat-rank")).to_have_text("#1 of 2", timeout=POLLED_WITHIN_MS)
    expect(daily.locator(".stat-detail")).to_have_text("better than 50% of players")
    expect(page.locator("table.board tbody tr").first).to_have_attribute(
        "data-player-id", "bob", timeout=LIVE_WITHIN_MS
    )


def test_it_keeps_a_page_beyond_the_top_of_the_board_live(
    asgi_live_server,  # noqa: F811
    live_broadcaster,  # noqa: F811
    scores,
    page,
):
    # Page 3 once said "live for the top 100 only" and never moved.
    scores.post_many([(f"p{n:03d}", 1000 + n) for n in range(101)])
    page.goto(f"{asgi_live_server}/games/{SLUG}/?page=3")
    expect(status(page)).to_have_attribute("data-state", "live")
    expect(page.locator("[data-live-pager-status]")).to_have_text("Page 3 of 3 · 101 players")
    assert board_rows(page) == [["101", "p000", "1,000"]]
    mark_page(page)

    until_shown(
        lambda: scores.post("deep", 1),
        lambda ms: expect(page.locator("table.board tbody tr")).to_have_count(2, timeout=ms),
    )
    assert board_rows(page) == [["101", "p000", "1,000"], ["102", "deep", "1"]]
    expect(page.locator("[data-live-pager-status]")).to_have_text("Page 3 of 3 · 102 players")
    assert_same_page(page)


def test_it_updates_the_total_and_the_pager_live(
    asgi_live_server,  # noqa: F811
    live_broadcaster,  # noqa: F811
    scores,
    page,
):
    scores.post_many([(f"p{n:03d}", 1000 + n) for n in range(50)])
    page.goto(f"{asgi_live_server}/games/{SLUG}/")
    expect(status(page)).to_have_attribute("data-state", "live")
    expect(page.locator("[data-live-pager-status]")).to_have_text("50 players on the daily board")
    expect(page.get_by_role("link", name="Next →")).to_be_hidden()

    scores.post("last", 1)

    expect(page.locator("[data-live-pager-status]")).to_have_text("Page 1 of 2 · 51 players", timeout=LIVE_WITHIN_MS)
    expect(page.locator("table.board tbody tr")).to_have_count(50)
    page.get_by_role("link", name="Next →").click()

    # Page 2 is within the top 100, so it follows the board too.
    expect(page).to_have_url(f"{asgi_live_server}/games/{SLUG}/?period=daily&page=2")
    expect(status(page)).to_have_attribute("data-state", "live")
    assert board_rows(page) == [["51", "last", "1"]]
    scores.post("later", 2)

    expect(page.locator("table.board tbody tr")).to_have_count(2, timeout=LIVE_WITHIN_MS)
    assert board_rows(page) == [["51", "later", "2"], ["52", "last", "1"]]
    expect(page.locator("[data-live-pager-status]")).to_have_text("Page 2 of 2 · 52 players")


def test_it_does_not_reload_a_live_page_when_the_countdown_reaches_zero(asgi_live_server, scores, page):  # noqa: F811
    """A live page waits for the server's reset message instead of reloading."""
    scores.post("alice", 5)
    loads: list[str] = []
    page.on("load", lambda loaded: loads.append(loaded.url))
    page.clock.install(time=clock_now())  # the browser's clock starts at the server's
    page.goto(f"{asgi_live_server}/games/tetris/?period=daily")
    expect(status(page)).to_have_attribute("data-state", "live")
    remaining_ms = page.evaluate("Date.parse(document.querySelector('[data-ends-at]').dataset.endsAt) - Date.now()")
    page.clock.fast_forward(remaining_ms + 1000)
    page.clock.run_for(3000)
    page.wait_for_timeout(300)
    assert len(loads) == 1, loads


def recent_rows(page: Page) -> list[list[str]]:
    return page.locator("[data-recent-list] li").evaluate_all(
        "items => items.map(li => [li.querySelector('a').textContent, li.querySelector('.score').textContent])"
    )


def test_it_keeps_the_recent_submissions_current(
    asgi_live_server,  # noqa: F811
    live_broadcaster,  # noqa: F811
    scores,
    page,
):
    scores.post("alice", 1200, "Alice")
    page.goto(f"{asgi_live_server}/games/{SLUG}/")
    expect(status(page)).to_have_attribute("data-state", "live")
    mark_page(page)
    assert recent_rows(page) == [["Alice", "1,200"]]

    scores.post("bob", 3400, "Bob")
    scores.post("alice", 900)

    expect(page.locator("[data-recent-list] li")).to_have_count(3, timeout=LIVE_WITHIN_MS)
    assert recent_rows(page) == [["Alice", "900"], ["Bob", "3,400"], ["Alice", "1,200"]]
    assert_same_page(page)


def test_it_shows_an_empty_recent_panel_filling_live(
    asgi_live_server,  # noqa: F811
    live_broadcaster,  # noqa: F811
    scores,
    page,
):
    page.goto(f"{asgi_live_server}/games/{SLUG}/")
    expect(status(page)).to_have_attribute("data-state", "live")
    expect(page.locator("[data-recent-empty]")).to_be_visible()

    scores.post("alice", 5, XSS_NAME)

    expect(page.locator("[data-recent-list] li")).to_have_count(1, timeout=LIVE_WITHIN_MS)
    expect(page.locator("[data-recent-empty]")).to_be_hidden()
    assert recent_rows(page) == [[XSS_NAME, "5"]]


def home_cards(page: Page) -> dict[str, list[str]]:
    return page.locator("li.game-card").evaluate_all(
        """cards => Object.fromEntries(cards.map(card => [
            card.dataset.game,
            Array.from(card.querySelectorAll('ol.podium li')).map(
                li => Array.from(li.children).map(part => part.textContent.trim()).join(' ')),
        ]))"""
    )


def test_it_keeps_the_home_pages_top_three_current(
    asgi_live_server,  # noqa: F811
    live_broadcaster,  # noqa: F811
    scores,
    page,
):
    scores.post("alice", 1200, "Alice")
    page.goto(f"{asgi_live_server}/")
    expect(status(page)).to_have_attribute("data-state", "live")
    mark_page(page)
    assert home_cards(page) == {SLUG: ["1 Alice 1,200"]}

    scores.post("bob", 3400, "Bob")
    scores.post("carol", 10, "Carol")
    scores.post("dave", 5, "Dave")

    expect(page.locator("li.game-card ol.podium li")).to_have_count(3, timeout=LIVE_WITHIN_MS)
    # A name is written just after its score: a tick between the two shows the id ("carol") once.
    expect(page.locator("li.game-card ol.podium li").nth(2)).to_contain_text("Carol", timeout=LIVE_WITHIN_MS)
    assert home_cards(page) == {SLUG: ["1 Bob 3,400", "2 Alice 1,200", "3 Carol 10"]}
    assert_same_page(page)


def test_it_fills_an_empty_home_card_live(
    asgi_live_server,  # noqa: F811
    live_broadcaster,  # noqa: F811
    scores,
    page,
):
    page.goto(f"{asgi_live_server}/")
    expect(status(page)).to_have_attribute("data-state", "live")
    expect(page.locator("li.game-card .empty-note")).to_be_visible()

    scores.post("alice", 1200, "Alice")

    expect(page.locator("li.game-card ol.podium li")).to_have_count(1, timeout=LIVE_WITHIN_MS)
    expect(page.locator("li.game-card .empty-note")).to_be_hidden()
