"""What one client can do to the live sockets: how many it may hold, how fast it may talk,
and what a socket says while Redis is unreachable."""

from __future__ import annotations

from typing import Any

import pytest
from channels.testing.websocket import WebsocketCommunicator

from core import keys
from core.redis import get_redis
from live.sockets import base
from presence import selectors as presence_selectors
from tests.live.live_helpers import Sockets, drain, make_config

pytestmark = pytest.mark.django_db(transaction=True)


async def opened(sockets: Sockets, address: str, path: str = "/ws/games/tetris/") -> tuple[WebsocketCommunicator, Any]:
    """A socket from ``address`` once it has finished opening, and its first output: a
    message if it was admitted, a close if not.

    The handshake completes before admission runs, so the accept alone says nothing.
    """
    ws = sockets.at(path)
    ws.scope["client"] = (address, 50_000)
    connected, _ = await ws.connect()
    assert connected
    if path.startswith("/ws/games/"):
        await ws.send_json_to({"action": "presence"})  # answered only once the opening is done
    return ws, await ws.receive_output(timeout=2)


async def admitted(sockets: Sockets, address: str, path: str = "/ws/games/tetris/") -> WebsocketCommunicator:
    ws, first = await opened(sockets, address, path)
    assert first["type"] == "websocket.send", first
    return ws


async def refused_with(sockets: Sockets, address: str, path: str = "/ws/games/tetris/") -> int | None:
    _, first = await opened(sockets, address, path)
    assert first["type"] == "websocket.close", first
    return first.get("code")


async def test_it_caps_the_sockets_of_one_address_and_frees_a_place_when_one_closes(make_game, sockets, settings):
    settings.WS_SOCKETS_PER_ADDRESS = 3
    game = await make_config(make_game)
    held = [await admitted(sockets, "203.0.113.7") for _ in range(3)]

    assert await refused_with(sockets, "203.0.113.7") == base.CLOSE_TOO_MANY
    # Another address, and another /64 of IPv6, each have places of their own.
    await admitted(sockets, "203.0.113.8")
    await admitted(sockets, "2001:db8:1:2::1")
    # The refused socket never counted as watching.
    assert (await presence_selectors.presence_page(game=game)).watching == 5

    await held[0].disconnect()
    await admitted(sockets, "203.0.113.7")
    assert await get_redis().zcard(keys.address_sockets("203.0.113.7")) == 3


async def test_it_counts_one_ipv6_64_as_one_address(make_game, sockets, settings):
    settings.WS_SOCKETS_PER_ADDRESS = 2
    await make_config(make_game)
    await admitted(sockets, "2001:db8:1:2::1")
    await admitted(sockets, "2001:db8:1:2:ffff::9")

    assert await refused_with(sockets, "2001:db8:1:2::42") == base.CLOSE_TOO_MANY


async def test_it_counts_the_home_socket_against_the_same_cap(make_game, sockets, settings):
    settings.WS_SOCKETS_PER_ADDRESS = 1
    await make_config(make_game)
    await admitted(sockets, "203.0.113.7", "/ws/home/")

    assert await refused_with(sockets, "203.0.113.7") == base.CLOSE_TOO_MANY


async def test_it_drops_messages_past_the_budget_and_closes_a_client_that_keeps_on(make_game, sockets):
    await make_config(make_game)
    ws = await admitted(sockets, "203.0.113.7")
    for _ in range(base.MESSAGE_BURST + 5):
        await ws.send_json_to({"action": "subscribe", "period": "daily", "limit": 100})
    received = await drain(ws)
    snapshots = [m for m in received if m["type"] == "standings"]
    refusals = [m for m in received if m["type"] == "error"]
    # The burst is served (less the presence request that opened it, give or take the
    # refill while the frames arrive), the rest refused.
    assert base.MESSAGE_BURST - 1 <= len(snapshots) < base.MESSAGE_BURST + 5
    assert [m["code"] for m in refusals] == ["rate_limited"]

    # A client that keeps sending past its budget is closed.
    for _ in range(base.REFUSED_MESSAGES_MAX + 10):
        await ws.send_json_to({"action": "subscribe", "period": "daily"})
    while (output := await ws.receive_output(timeout=5))["type"] != "websocket.close":
        pass
    assert output["code"] == base.CLOSE_POLICY


async def test_it_closes_with_1013_while_redis_is_unreachable(make_game, sockets, redis_unreachable):
    await make_config(make_game)

    assert await refused_with(sockets, "203.0.113.7") == base.CLOSE_TRY_AGAIN


async def test_it_closes_the_home_socket_with_1013_while_redis_is_unreachable(make_game, sockets, redis_unreachable):
    await make_config(make_game)

    assert await refused_with(sockets, "203.0.113.7", "/ws/home/") == base.CLOSE_TRY_AGAIN
