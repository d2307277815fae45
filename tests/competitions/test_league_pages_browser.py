"""A league's game and player pages in a real Chromium (issue 22): nothing scrolls sideways at
1280, 390 and 320 px, signed in or not (screenshots in /tmp/lb-screenshots); the signed-in
player's cohort moves live, its promotion and demotion lines drawn again between the rows, and
every link on the pages, rows added live included, answers 200."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from django.conf import settings
from playwright.sync_api import Browser, BrowserContext, Page, expect

from tests.a11y.axe import serious_violations
from tests.competitions.league_pages import (
    API,
    BOARD,
    GAME,
    LADDER,
    LEAGUE,
    ME,
    League,
    link_user,
    make_game,
    make_league,
    ok,
    play,
)
from tests.live_server import (  # noqa: F401  (fixtures)
    ACTION_TIMEOUT_MS,
    LIVE_WITHIN_MS,
    asgi_live_server,
    browser,
    dialogs,
    live_broadcaster,
    page,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCREENSHOTS = Path("/tmp/lb-screenshots")
WIDTHS = (1280, 390, 320)
GAME_PAGE = f"/games/{GAME}/?board={BOARD}"
PAGES = {
    "league-game": GAME_PAGE,
    "league-cohort": f"{GAME_PAGE}&cohort=silver-2",
    "league-player": f"/games/{GAME}/players/p1/?board={BOARD}",
    "cup-game": f"/games/{GAME}/?board=cup",
}


@pytest.fixture
def http(asgi_live_server: str) -> Iterator[httpx.Client]:  # noqa: F811
    with httpx.Client(base_url=asgi_live_server, timeout=10) as client:
        yield client


@pytest.fixture
def league(http: httpx.Client) -> League:
    return make_league(http)


@pytest.fixture
def signed_in(browser: Browser, asgi_live_server: str, league: League) -> Iterator[Page]:  # noqa: F811
    """A page whose user is signed in and linked to ME, failing on JavaScript errors as ``page`` does."""
    client = link_user(league)
    context: BrowserContext = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(ACTION_TIMEOUT_MS)
    cookie = client.cookies[settings.SESSION_COOKIE_NAME].value
    context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": cookie, "url": asgi_live_server}])
    theirs = context.new_page()
    errors: list[str] = []
    theirs.on("pageerror", lambda error: errors.append(str(error)))
    yield theirs
    context.close()
    assert errors == [], f"JavaScript errors on the page: {errors}"


def hrefs(tab: Page) -> list[str]:
    """Every link of the page, absolute, but the API's and admin's."""
    found = tab.eval_on_selector_all("a[href]", "links => links.map(a => a.href)")
    return sorted({h.split("#")[0] for h in found if "/api/" not in h and "/admin" not in h and "http" in h})


def assert_links_answer(base_url: str, tab: Page) -> None:
    """Every link of the page answers 200, to the page's own user (signed in or not)."""
    cookies = {c["name"]: c["value"] for c in tab.context.cookies()}
    with httpx.Client(cookies=cookies, timeout=10) as http:
        for href in hrefs(tab):
            if href.startswith(base_url):
                assert http.get(href).status_code == 200, (tab.url, href)


def test_it_fits_the_league_pages_at_every_width_signed_in_and_out(
    asgi_live_server,  # noqa: F811
    league,
    page,  # noqa: F811
    signed_in,
):
    SCREENSHOTS.mkdir(exist_ok=True)
    for who, tab in (("out", page), ("in", signed_in)):
        for name, path in PAGES.items():
            for width in WIDTHS:
                tab.set_viewport_size({"width": width, "height": 900})
                tab.goto(f"{asgi_live_server}{path}")
                if name == "league-player":
                    expect(tab.locator(".card.rewards")).to_contain_text("coins: 20")
                else:
                    expect(tab.locator("[data-cohorts] .cohort-list")).to_contain_text("in 2026-W10")
                tab.screenshot(path=str(SCREENSHOTS / f"{name}-{who}-{width}.png"), full_page=True)
                part = ".player-competitions" if name == "league-player" else "[data-cohorts]"
                tab.locator(part).screenshot(path=str(SCREENSHOTS / f"{name}-{who}-{width}-part.png"))
                scroll = tab.evaluate("document.documentElement.scrollWidth")
                assert scroll <= width, (name, who, width, scroll)
                if width in (WIDTHS[0], WIDTHS[-1]):
                    assert serious_violations(tab) == [], (name, who, width)
            assert_links_answer(asgi_live_server, tab)


def test_it_moves_the_signed_in_players_cohort_and_its_lines_live(
    asgi_live_server,  # noqa: F811
    live_broadcaster,  # noqa: F811
    league,
    http,
    signed_in,
):
    signed_in.goto(f"{asgi_live_server}{GAME_PAGE}")
    cohort = signed_in.locator("[data-live-cohort] tbody tr")
    expect(cohort).to_have_text(
        [
            "1 Nia 50",
            "2 Bea 40",
            "▲ Promotion line: above it, up to Gold",
            "3 n2 30",
            "4 n4 5",
            "▼ Demotion line: below it, down to Bronze",
            "1 entrant without a score yet",
        ],
        use_inner_text=True,
    )
    expect(signed_in.locator("[data-live-status]")).to_have_attribute("data-state", "live")

    # n2 passes Bea: the promotion line moves under n2, Bea's row goes below it.
    ok(http, "post", f"{API}/{BOARD}/scores", league.submit, {"player_id": "n2", "score": 45})
    expect(cohort).to_have_text(
        [
            "1 Nia 50",
            "2 n2 45",
            "▲ Promotion line: above it, up to Gold",
            "3 Bea 40",
            "4 n4 5",
            "▼ Demotion line: below it, down to Bronze",
            "1 entrant without a score yet",
        ],
        use_inner_text=True,
        timeout=LIVE_WITHIN_MS,
    )
    expect(signed_in.locator(f'[data-live-cohort] tr[data-player-id="{ME}"]')).to_have_attribute("data-move", "stay")

    # n3, who had no score, scores last: a row of its own, below the demotion line.
    ok(http, "post", f"{API}/{BOARD}/scores", league.submit, {"player_id": "n3", "score": 1})
    expect(cohort).to_have_text(
        [
            "1 Nia 50",
            "2 n2 45",
            "▲ Promotion line: above it, up to Gold",
            "3 Bea 40",
            "4 n4 5",
            "▼ Demotion line: below it, down to Bronze",
            "5 n3 1",
        ],
        use_inner_text=True,
        timeout=LIVE_WITHIN_MS,
    )
    expect(signed_in.locator('[data-live-cohort] tr[data-player-id="n3"]')).to_have_attribute("data-move", "down")
    link = signed_in.locator('[data-live-cohort] tr[data-player-id="n3"] a')
    expect(link).to_have_attribute("href", f"/games/{GAME}/players/n3/?board={BOARD}&period=weekly")
    assert_links_answer(asgi_live_server, signed_in)


def test_it_moves_a_cohort_a_visitor_chose_live(
    asgi_live_server,  # noqa: F811
    live_broadcaster,  # noqa: F811
    league,
    http,
    page,  # noqa: F811
):
    page.goto(f"{asgi_live_server}{GAME_PAGE}&cohort=gold-1")
    rows = page.locator("[data-live-cohort] tbody tr")
    expect(rows).to_have_text(["1 p1 70", "▼ Demotion line: below it, down to Silver", "2 p5 60"], use_inner_text=True)
    expect(page.locator("[data-live-status]")).to_have_attribute("data-state", "live")
    ok(http, "post", f"{API}/{BOARD}/scores", league.submit, {"player_id": "p5", "score": 80})
    expect(rows).to_have_text(
        ["1 p5 80", "▼ Demotion line: below it, down to Silver", "2 p1 70"],
        use_inner_text=True,
        timeout=LIVE_WITHIN_MS,
    )
    assert_links_answer(asgi_live_server, page)


def test_it_draws_a_line_that_falls_under_the_tables_last_row_live(
    asgi_live_server,  # noqa: F811
    live_broadcaster,  # noqa: F811
    http,
    page,  # noqa: F811
):
    league = make_game()
    ladder = [LADDER[0], {**LADDER[1], "demote": "10"}, LADDER[2]]
    ok(http, "put", f"{API}/{BOARD}", league.manage, {**LEAGUE, "cohort_size": 60, "tiers": ladder})
    play(league, {f"x{n:02d}": 100 - n for n in range(1, 61)}, client=http)
    page.goto(f"{asgi_live_server}/games/{GAME}/?cohort=silver-1")
    body = page.locator("[data-live-cohort] tbody tr")
    expect(body.last).to_have_text("▼ Demotion line: below it, down to Bronze", use_inner_text=True)
    expect(page.locator("[data-live-status]")).to_have_attribute("data-state", "live")

    # x51 jumps to the top: x50 falls to 51, on the next page, and the line stays under the 50th
    # row, which only the row after it (taken by the socket, not shown) tells.
    ok(http, "post", f"{API}/{BOARD}/scores", league.submit, {"player_id": "x51", "score": 200})
    expect(body.first).to_have_text("1 x51 200", use_inner_text=True, timeout=LIVE_WITHIN_MS)
    expect(body.nth(-2)).to_have_text("50 x49 51", use_inner_text=True)
    expect(body.last).to_have_text("▼ Demotion line: below it, down to Bronze", use_inner_text=True)
    assert page.locator('[data-live-cohort] tr[data-player-id="x50"]').count() == 0
