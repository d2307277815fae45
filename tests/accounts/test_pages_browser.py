"""The account pages in a real browser on a phone-sized screen, through the real ASGI stack:
sign up, take a code from the API the way a game server does, enter it, see the link."""

from __future__ import annotations

import os
import re

import httpx
import pytest
from playwright.sync_api import expect

from core import apikeys
from core import services as core_services
from core.models import Game
from tests.conftest import auth
from tests.live_server import ACTION_TIMEOUT_MS, asgi_live_server, browser  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE_VIEWPORT = {"width": 390, "height": 844}
# Set to a folder to keep screenshots of each step (for a look at the pages).
SCREENSHOTS = os.environ.get("ACCOUNTS_SCREENSHOTS", "")


@pytest.fixture
def phone(browser):  # noqa: F811
    context = browser.new_context(viewport=PHONE_VIEWPORT, is_mobile=True, has_touch=True)
    context.set_default_timeout(ACTION_TIMEOUT_MS)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    context.close()
    assert errors == []


def shot(page, name: str) -> None:
    if SCREENSHOTS:
        page.screenshot(path=os.path.join(SCREENSHOTS, f"{name}.png"), full_page=True)


def test_it_signs_up_and_links_a_player_on_a_phone(asgi_live_server, phone):  # noqa: F811
    game = core_services.game_create(slug="tetris", name="Tetris")
    _, key = apikeys.api_key_create(game=game)
    assert Game.objects.count() == 1

    phone.goto(f"{asgi_live_server}/games/tetris/link/")
    expect(phone).to_have_url(f"{asgi_live_server}/account/login/?next=/games/tetris/link/")
    shot(phone, "1-login")
    phone.locator("main").get_by_role("link", name="Sign up").click()
    phone.get_by_label("Username").fill("ann")
    phone.get_by_label("Password", exact=True).fill("correct-horse-battery")
    phone.get_by_label("Password confirmation").fill("correct-horse-battery")
    shot(phone, "2-signup")
    phone.get_by_role("button", name="Create account").click()
    expect(phone).to_have_url(f"{asgi_live_server}/games/tetris/link/")

    phone.get_by_label("Link code").fill("ZZZZ-9999")
    phone.get_by_role("button", name="Link").click()
    expect(phone.get_by_role("alert")).to_have_text(re.compile(r"^This code is wrong, expired or already used\."))
    shot(phone, "3-wrong-code")

    issued = httpx.post(f"{asgi_live_server}/api/v1/games/tetris/players/alice/link-code", headers=auth(key))
    assert issued.status_code == 200
    code = issued.json()["code"]
    assert issued.json()["link_url"] == f"{asgi_live_server}/games/tetris/link/"
    phone.get_by_label("Link code").fill(f"{code[:4].lower()}-{code[4:]}")
    phone.get_by_role("button", name="Link").click()
    expect(phone).to_have_url(f"{asgi_live_server}/account/")
    expect(phone.get_by_role("status")).to_have_text("You are now linked to player alice in Tetris.")
    expect(phone.get_by_role("button", name="Unlink alice in Tetris")).to_be_visible()
    shot(phone, "4-account")

    # Every page now knows who is signed in, the async game pages included.
    phone.goto(f"{asgi_live_server}/games/tetris/")
    expect(phone.get_by_role("button", name="Log out")).to_be_visible()
    shot(phone, "5-game")
    phone.get_by_role("button", name="Log out").click()
    expect(phone).to_have_url(f"{asgi_live_server}/")
    expect(phone.get_by_role("link", name="Log in")).to_be_visible()
