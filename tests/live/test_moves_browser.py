"""Movement a visitor can see, in Chromium: ▲/▼ beside ranks against the ranks this browser saw
last (or since the page opened, on a first visit), said in the legend and in words for screen
readers, kept current live; and the signed-in player's "You moved up to #1"."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client
from playwright.sync_api import Page, expect

from accounts.models import PlayerLink
from core.models import Game
from tests.live.test_live_browser import SLUG, Scores, scores  # noqa: F401  (fixture)
from tests.live_server import LIVE_WITHIN_MS, asgi_live_server, browser, live_broadcaster, page  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def cues(tab: Page) -> dict[str, str]:
    """Each row's cue as shown ("▲1"), by player."""
    return tab.locator("table.board tbody tr").evaluate_all(
        """rows => Object.fromEntries(rows.map(row => [
            row.dataset.playerId,
            (row.querySelector('.move .move-arrow')?.textContent || '') +
                (row.querySelector('.move .move-count')?.textContent || ''),
        ]))"""
    )


def test_it_shows_rank_changes_since_the_last_visit_then_live(
    asgi_live_server,  # noqa: F811
    live_broadcaster,  # noqa: F811
    scores,  # noqa: F811
    page,  # noqa: F811
):
    for player, score in (("alice", 300), ("bob", 200), ("carol", 100)):
        scores.post(player, score, player.title())
    legend = page.locator("[data-move-legend]")

    page.goto(f"{asgi_live_server}/games/{SLUG}/")
    expect(legend).to_have_text("▲ ▼ rank changes since you opened this page")
    assert cues(page) == {"alice": "", "bob": "", "carol": ""}
    expect(page.locator("[data-live-status]")).to_have_attribute("data-state", "live")
    page.goto("about:blank")  # the visitor leaves: what the page showed last is remembered

    scores.post("bob", 400)
    page.goto(f"{asgi_live_server}/games/{SLUG}/")  # the same browser: it remembers what it saw

    expect(legend).to_contain_text("▲ ▼ rank changes since your last visit (")
    assert cues(page) == {"bob": "▲1", "alice": "▼1", "carol": ""}
    words = page.locator('tr[data-player-id="bob"] .move .visually-hidden')
    expect(words).to_contain_text("up 1 since your last visit")

    expect(page.locator("[data-live-status]")).to_have_attribute("data-state", "live")
    scores.post("carol", 500)
    expect(page.locator("table.board tbody tr").first).to_have_attribute(
        "data-player-id", "carol", timeout=LIVE_WITHIN_MS
    )
    assert cues(page) == {"carol": "▲2", "bob": "", "alice": "▼2"}


def test_it_tells_the_signed_in_player_they_moved(
    asgi_live_server,  # noqa: F811
    live_broadcaster,  # noqa: F811
    scores,  # noqa: F811
    page,  # noqa: F811
):
    scores.post("alice", 300, "Alice")
    scores.post("bob", 200, "Bob")
    user = get_user_model().objects.create_user("bobby", password="pw-123456789")
    PlayerLink.objects.create(user=user, game=Game.objects.get(slug=SLUG), player_id="bob")
    client = Client()
    client.force_login(user)
    cookie = client.cookies[settings.SESSION_COOKIE_NAME].value
    page.context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": cookie, "url": asgi_live_server}])
    notice = page.locator("[data-me-move]")

    page.goto(f"{asgi_live_server}/games/{SLUG}/")
    expect(page.locator("[data-me-rank]")).to_have_text("#2")
    expect(page.locator("[data-live-status]")).to_have_attribute("data-state", "live")
    assert notice.get_attribute("role") == "status"
    expect(notice).to_be_hidden()

    scores.post("bob", 900)

    expect(notice).to_have_text("You moved up to #1", timeout=LIVE_WITHIN_MS)
    expect(page.locator("[data-me-rank]")).to_have_text("#1")
