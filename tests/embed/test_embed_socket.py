"""The game socket's origin rule for other websites: a page of this site, or one of the game's
embed origins (scheme, host and port), and nothing else; a widget's socket is anonymous."""

from __future__ import annotations

import pytest
from channels.testing.websocket import WebsocketCommunicator
from django.conf import settings

from core.models import Game
from leaderboard_site.asgi import application
from presence import selectors as presence_selectors
from tests.live.live_helpers import make_config
from tests.live.test_live_presence import linked_user, settled

pytestmark = pytest.mark.django_db(transaction=True)

STUDIO = "https://studio.example"


async def with_origins(make_game, slug: str, *origins: str):
    config = await make_config(make_game, slug)
    game = await Game.objects.aget(pk=config.id)
    game.embed_origins = list(origins)
    await game.asave()  # announced: the sockets read the new list
    return config


async def connect(sockets, slug: str, origin: str, cookie: str | None = None) -> tuple[bool, WebsocketCommunicator]:
    headers = [(b"origin", origin.encode())]
    if cookie:
        headers.append((b"cookie", f"{settings.SESSION_COOKIE_NAME}={cookie}".encode()))
    ws = WebsocketCommunicator(application, f"/ws/games/{slug}/", headers=headers)
    sockets.opened.append(ws)
    connected, _ = await ws.connect()
    return connected, ws


async def test_it_opens_a_socket_for_the_games_embed_origin_and_serves_it(make_game, sockets):
    await with_origins(make_game, "tetris", STUDIO)
    connected, ws = await connect(sockets, "tetris", STUDIO)
    assert connected
    await ws.send_json_to({"action": "subscribe", "leaderboard": "main", "period": "daily", "limit": 5})
    message = await ws.receive_json_from()
    assert (message["type"], message["leaderboard"]) == ("standings", "main")


@pytest.mark.parametrize(
    "origin",
    [
        "https://evil.example",
        "http://studio.example",  # another scheme
        "https://studio.example:8443",  # another port
        "https://sub.studio.example",
        "null",
        "https://studio.example:99999",  # a port no origin has
    ],
)
async def test_it_refuses_any_other_origin(make_game, sockets, origin):
    await with_origins(make_game, "tetris", STUDIO)
    connected, _ = await connect(sockets, "tetris", origin)
    assert not connected


async def test_it_refuses_an_origin_on_a_game_that_did_not_list_it(make_game, sockets):
    await with_origins(make_game, "tetris", STUDIO)
    await with_origins(make_game, "other", "https://other.example")
    assert not (await connect(sockets, "other", STUDIO))[0]
    assert not (await connect(sockets, "nope", STUDIO))[0]


async def test_it_keeps_a_widgets_socket_anonymous_even_with_the_visitors_cookie(make_game, sockets):
    # Another site's page cannot act as the visitor's account: their linked player is not shown
    # online by it, as it is by a page of this site.
    game = await with_origins(make_game, "tetris", STUDIO)
    session = await linked_user(game, "ada-42")
    assert (await connect(sockets, "tetris", STUDIO, session))[0]
    await settled()
    page = await presence_selectors.presence_page(game=game)
    assert (page.online, page.watching) == (0, 1)

    assert (await connect(sockets, "tetris", "http://127.0.0.1", session))[0]
    await settled()
    assert [p.player_id for p in (await presence_selectors.presence_page(game=game)).players] == ["ada-42"]
