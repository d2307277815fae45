"""Presence over the live websocket: open pages join, heartbeat and leave; the broadcaster
coalesces joins, leaves and counts into one ``presence`` message per game per tick."""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.testing.websocket import WebsocketCommunicator
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client

from accounts.models import PlayerLink
from core import keys
from core.clock import now as clock_now
from core.config import GameConfig
from core.redis import get_redis
from games import services
from leaderboard_site.asgi import application
from live import broadcaster, events
from presence import selectors as presence_selectors
from presence import services as presence_services
from tests.conftest import clock_at
from tests.live.live_helpers import ALLOWED_ORIGIN, QUIET_SECS, Sockets, drain, make_config

pytestmark = pytest.mark.django_db(transaction=True)


def _session_cookie(user: User) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies[settings.SESSION_COOKIE_NAME].value


async def linked_user(game: GameConfig, player_id: str, username: str = "ada") -> str:
    """A signed-in user linked to ``player_id``; returns their session cookie."""
    user = await sync_to_async(User.objects.create_user)(username, password="pw-123456789")
    await PlayerLink.objects.acreate(user=user, game_id=game.id, player_id=player_id)
    return await sync_to_async(_session_cookie)(user)


async def open_as(sockets: Sockets, session: str | None, slug: str = "tetris") -> WebsocketCommunicator:
    headers = [(b"origin", ALLOWED_ORIGIN)]
    if session:
        headers.append((b"cookie", f"{settings.SESSION_COOKIE_NAME}={session}".encode()))
    ws = WebsocketCommunicator(application, f"/ws/games/{slug}/", headers=headers)
    sockets.opened.append(ws)
    connected, _ = await ws.connect()
    assert connected
    return ws


async def ask_presence(ws: WebsocketCommunicator) -> dict[str, Any]:
    await ws.send_json_to({"action": "presence"})
    snapshot = await ws.receive_json_from()
    assert snapshot["type"] == "presence" and snapshot["snapshot"] is True, snapshot
    return snapshot


async def settled() -> None:
    """Let connect/disconnect handlers that run after the handshake finish."""
    await asyncio.sleep(0.2)


async def tick(game: GameConfig, state: broadcaster.BroadcasterState, now: dt.datetime | None = None) -> int:
    with clock_at(now):
        return (await broadcaster.tick(state=state, games=[game])).presence


def presence_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in messages if m["type"] == "presence"]


# --------------------------------------------------------------------------- who counts


async def test_it_counts_an_anonymous_page_as_watching_until_it_closes(make_game, sockets):
    game = await make_config(make_game)
    ws = await open_as(sockets, None)
    await settled()

    page = await presence_selectors.presence_page(game=game)
    assert (page.online, page.watching, page.players) == (0, 1, [])

    await ws.disconnect()
    await settled()
    assert (await presence_selectors.presence_page(game=game)).watching == 0


async def test_it_shows_a_linked_user_online_until_their_last_tab_closes(make_game, sockets):
    game = await make_config(make_game)
    session = await linked_user(game, "ada-42")
    first, second = await open_as(sockets, session), await open_as(sockets, session)
    await settled()

    page = await presence_selectors.presence_page(game=game)
    assert [p.player_id for p in page.players] == ["ada-42"]
    assert page.watching == 0

    await first.disconnect()
    await settled()
    assert (await presence_selectors.player_presence(game=game, player_id="ada-42")).online

    await second.disconnect()
    await settled()
    after = await presence_selectors.player_presence(game=game, player_id="ada-42")
    assert not after.online and after.last_seen is not None


async def test_it_keeps_a_player_online_after_their_page_closes_while_the_game_server_reports_them(make_game, sockets):
    game = await make_config(make_game)
    session = await linked_user(game, "ada-42")
    await presence_services.presence_report(game=game, online=["ada-42"], offline=[])
    ws = await open_as(sockets, session)
    await settled()

    await ws.disconnect()
    await settled()

    assert (await presence_selectors.player_presence(game=game, player_id="ada-42")).online


async def test_it_counts_a_signed_in_user_without_a_link_as_watching(make_game, sockets):
    game = await make_config(make_game)
    other = await make_config(make_game, "chess")
    session = await linked_user(other, "ada-42")  # linked in another game only
    await open_as(sockets, session)
    await settled()

    page = await presence_selectors.presence_page(game=game)
    assert (page.online, page.watching) == (0, 1)


async def test_it_heartbeats_an_open_page_so_it_never_expires(make_game, sockets, monkeypatch, clock):
    monkeypatch.setattr(presence_services, "PAGE_HEARTBEAT_MAX_SECS", 0.1)
    game = await make_config(make_game)
    session = await linked_user(game, "ada-42")
    await open_as(sockets, session)
    await settled()
    first = (await presence_selectors.player_presence(game=game, player_id="ada-42")).last_seen

    clock.advance(1)
    await asyncio.sleep(0.5)

    later = (await presence_selectors.player_presence(game=game, player_id="ada-42")).last_seen
    assert first is not None and later is not None and later > first


# --------------------------------------------------------------------------- snapshot and messages


async def test_it_answers_presence_with_counts_and_the_most_recent_players(make_game, sockets):
    game = await make_config(make_game)
    await services.score_submit(game=game, board=game.boards[0], player_id="p1", score=5, display_name="Ada")
    await presence_services.presence_report(game=game, online=["p2"], offline=[])
    ws = await open_as(sockets, None)

    snapshot = await ask_presence(ws)

    assert (snapshot["online"], snapshot["watching"], snapshot["left"]) == (2, 1, [])
    assert [(p["player_id"], p["display_name"]) for p in snapshot["joined"]] == [("p2", "p2"), ("p1", "Ada")]
    assert all(isinstance(p["last_seen"], str) for p in snapshot["joined"])


async def test_it_sends_one_presence_message_per_tick_however_many_join(make_game, sockets):
    game = await make_config(make_game)
    ws = await open_as(sockets, None)
    await ask_presence(ws)
    state = broadcaster.BroadcasterState()
    await tick(game, state)
    await drain(ws)

    for i in range(50):
        await presence_services.presence_report(game=game, online=[f"p{i:02}"], offline=[])
    sent = await tick(game, state)

    assert sent == 1
    (message,) = presence_messages(await drain(ws))
    assert message["online"] == 50 and message["watching"] == 1
    assert sorted(p["player_id"] for p in message["joined"]) == [f"p{i:02}" for i in range(50)]
    assert message["left"] == [] and message["snapshot"] is False
    # Nothing changed since: nothing is sent.
    assert await tick(game, state) == 0
    assert await ws.receive_nothing(timeout=QUIET_SECS)


async def test_it_announces_only_the_latest_change_of_each_player_in_a_tick(make_game, sockets):
    game = await make_config(make_game)
    ws = await open_as(sockets, None)
    await ask_presence(ws)
    state = broadcaster.BroadcasterState()
    await presence_services.presence_report(game=game, online=["stays", "goes"], offline=[])
    await tick(game, state)
    await drain(ws)

    await presence_services.presence_report(game=game, online=["blink"], offline=["goes"])
    await presence_services.presence_report(game=game, online=[], offline=["blink"])
    await tick(game, state)

    (message,) = presence_messages(await drain(ws))
    # "blink" joined and left within the tick: a page whose snapshot showed them must hear the leave.
    assert (message["joined"], sorted(message["left"]), message["online"]) == ([], ["blink", "goes"], 1)


async def test_it_announces_the_leaves_of_a_prune_once_with_two_broadcasters(make_game, sockets):
    game = await make_config(make_game)
    ws = await open_as(sockets, None)
    await ask_presence(ws)
    start = clock_now()
    ids = [f"p{i:03}" for i in range(120)]
    with clock_at(start):
        await presence_services.presence_report(game=game, online=ids, offline=[])
    first, second = broadcaster.BroadcasterState(), broadcaster.BroadcasterState()
    await tick(game, first, start)
    await drain(ws)

    later = start + dt.timedelta(seconds=game.presence_timeout_secs + 1)
    with clock_at(later):
        removed = await asyncio.gather(
            presence_services.presence_prune(game=game),
            presence_services.presence_prune(game=game),
        )
    await asyncio.gather(tick(game, first, later), tick(game, second, later))

    assert sorted(removed[0] + removed[1]) == ids
    # Wait for the leaves (a loaded machine can take longer than a quiet spell), then for silence.
    left = (await ws.receive_json_from(timeout=5))["left"]
    left += [player for m in presence_messages(await drain(ws)) for player in m["left"]]
    assert sorted(left) == ids


async def test_it_sends_new_counts_when_players_expire_before_any_prune(make_game, sockets):
    game = await make_config(make_game)
    ws = await open_as(sockets, None)
    await ask_presence(ws)
    start = clock_now()
    with clock_at(start):
        await presence_services.presence_report(game=game, online=["p1"], offline=[])
    state = broadcaster.BroadcasterState()
    await tick(game, state, start)
    await drain(ws)

    await tick(game, state, start + dt.timedelta(seconds=game.presence_timeout_secs + 1))

    (message,) = presence_messages(await drain(ws))
    assert (message["online"], message["joined"], message["left"]) == (0, [], [])


async def test_it_drops_presence_messages_not_newer_than_what_the_socket_has(make_game, sockets):
    game = await make_config(make_game)
    ws = await open_as(sockets, None)
    state = broadcaster.BroadcasterState()
    await presence_services.presence_report(game=game, online=["p1"], offline=[])
    await tick(game, state)  # version 1, before this socket asked
    snapshot = await ask_presence(ws)
    assert snapshot["version"] == 1

    stale = events.presence(version=1, online=9, watching=9, joined=[], left=[])
    group = events.presence_group(game.slug)
    await get_channel_layer().group_send(group, {"type": "live.event", "group": group, "payload": stale})

    assert await ws.receive_nothing(timeout=QUIET_SECS)


async def test_it_sends_presence_only_to_sockets_that_asked(make_game, sockets):
    game = await make_config(make_game)
    quiet = await open_as(sockets, None)
    await presence_services.presence_report(game=game, online=["p1"], offline=[])

    assert await tick(game, broadcaster.BroadcasterState()) == 1
    assert await quiet.receive_nothing(timeout=QUIET_SECS)


async def test_it_marks_online_players_in_live_standings(make_game, sockets):
    game = await make_config(make_game, periods_kept=["all-time"])
    await services.score_submit(game=game, board=game.boards[0], player_id="on", score=10)
    await services.score_submit(game=game, board=game.boards[0], player_id="off", score=5)
    await presence_services.presence_report(game=game, online=[], offline=["off"])
    ws = await open_as(sockets, None)

    await ws.send_json_to({"action": "subscribe", "period": "all-time"})
    snapshot = await ws.receive_json_from()

    assert [(e["player_id"], e["online"]) for e in snapshot["entries"]] == [("on", True), ("off", False)]


async def test_it_keeps_the_presence_keys_of_a_game_bounded(make_game, sockets):
    game = await make_config(make_game)
    session = await linked_user(game, "ada-42")
    await open_as(sockets, session)
    await settled()
    client = get_redis()

    tabs_ttl = await client.pttl(keys.presence_tabs(game.slug, "ada-42"))
    joined_ttl = await client.pttl(keys.presence_joined(game.slug))

    assert 0 < tabs_ttl <= 2 * game.presence_timeout_secs * 1000
    assert 0 < joined_ttl <= presence_services.PRESENCE_ANNOUNCE_TTL_MS


async def test_it_lets_one_broadcaster_announce_presence_and_another_take_over_when_it_stops(make_game, sockets):
    game = await make_config(make_game)
    ws = await open_as(sockets, None)
    await ask_presence(ws)
    first, second = broadcaster.BroadcasterState(), broadcaster.BroadcasterState()
    await presence_services.presence_report(game=game, online=["a"], offline=[])

    assert await tick(game, first) == 1
    assert await tick(game, second) == 0  # the first holds the lease: changes stay in one order
    await drain(ws)

    await get_redis().delete(keys.presence_announcer(game.slug))  # the first stopped: its lease lapsed
    await presence_services.presence_report(game=game, online=[], offline=["a"])

    assert await tick(game, second) == 1
    (message,) = presence_messages(await drain(ws))
    assert message["left"] == ["a"]
    assert await tick(game, first) == 0
