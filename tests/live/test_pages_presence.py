"""Presence on the server-rendered pages: counts, the online list, row dots, the player's
status, and what a signed-in linked user sees (their row marked, their rank pinned)."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.test import AsyncClient

from accounts.models import PlayerLink
from core import config, keys
from core.clock import now as clock_now
from core.redis import get_redis
from presence import services as presence_services
from tests.conftest import clock_at
from tests.live.test_pages import board_rows, new_game, post_score, text

pytestmark = pytest.mark.django_db(transaction=True)


async def report(slug: str, online: list[str], offline: list[str], now: dt.datetime | None = None) -> None:
    game = await config.get_game(slug)
    assert game is not None
    with clock_at(now):
        await presence_services.presence_report(game=game, online=online, offline=offline)


async def signed_in(slug: str, player_id: str) -> AsyncClient:
    game = await config.get_game(slug)
    assert game is not None
    user = await sync_to_async(User.objects.create_user)("ada", password="pw-123456789")
    await PlayerLink.objects.acreate(user=user, game_id=game.id, player_id=player_id)
    client = AsyncClient()
    await sync_to_async(client.force_login)(user)
    return client


async def test_it_shows_who_is_online_and_how_many_watch(make_game, aclient):
    key = await new_game(make_game)
    await post_score(aclient, key, "tetris", "alice", 30, name="Alice")
    await post_score(aclient, key, "tetris", "bob", 20, name="Bob")
    await report("tetris", online=["carol"], offline=["bob"])

    response = await aclient.get("/games/tetris/")

    page = text(response.content)
    assert "2 players online · 0 watching" in page
    online_list = re.search(r"Online now (.*?) Link your player", page)
    assert online_list is not None
    names = re.findall(r"(Alice|Bob|carol)", online_list.group(1))
    assert names == ["carol", "Alice"]  # most recently seen first
    rows = re.finditer(rb'<tr data-player-id="(\w+)".*?</tr>', response.content, re.S)
    assert {row.group(1): b"presence-dot" in row.group(0) for row in rows} == {b"alice": True, b"bob": False}


async def test_it_says_so_when_nobody_is_online(make_game, aclient):
    await new_game(make_game)

    page = text((await aclient.get("/games/tetris/")).content)

    assert "0 players online · 0 watching" in page
    assert "Nobody is playing right now." in page


async def test_it_counts_only_players_within_the_timeout(make_game, aclient):
    key = await new_game(make_game, presence_timeout_secs=30)
    await post_score(aclient, key, "tetris", "alice", 30)
    await report("tetris", online=["old"], offline=[], now=clock_now() - dt.timedelta(seconds=31))

    page = text((await aclient.get("/games/tetris/")).content)

    assert "1 player online" in page


async def test_it_shows_a_players_status_on_their_page(make_game, aclient):
    key = await new_game(make_game)
    await post_score(aclient, key, "tetris", "alice", 30, name="Alice")

    online = text((await aclient.get("/games/tetris/players/alice/")).content)
    await report("tetris", online=[], offline=["alice"])
    offline = text((await aclient.get("/games/tetris/players/alice/")).content)

    assert "Online now" in online
    assert "Last seen 0 minutes ago" in offline  # site.js turns it into "just now"


async def test_it_shows_a_player_never_seen_online(make_game, aclient):
    key = await new_game(make_game)
    await post_score(aclient, key, "tetris", "alice", 30)
    # As for scores from before presence existed: no trace of the player in presence.
    await get_redis().zrem(keys.presence_online("tetris"), "alice")

    page = text((await aclient.get("/games/tetris/players/alice/")).content)

    assert "Not seen online yet" in page


async def test_it_marks_a_linked_users_own_row(make_game, aclient):
    key = await new_game(make_game)
    await post_score(aclient, key, "tetris", "ada-42", 30, name="Ada")
    await post_score(aclient, key, "tetris", "bob", 20)
    client = await signed_in("tetris", "ada-42")

    response = await client.get("/games/tetris/")

    rows = board_rows(response.content)
    assert [(r.name, "is-me" in r.classes) for r in rows] == [("Ada", True), ("bob", False)]
    html = response.content.decode()
    # The you-bar names them by their display name, and jumps to their row on this page.
    assert "data-me-bar hidden" not in html
    assert 'href="#me">Jump to me</a>' in html
    assert "You · Ada #1 30 Jump to me Around you →" in text(response.content)
    assert "Link your player" not in text(response.content)


async def test_it_shows_a_linked_users_name_rank_and_score_in_the_you_bar_on_another_page(make_game, aclient):
    key = await new_game(make_game)
    for i in range(55):
        await post_score(aclient, key, "tetris", f"p{i:02}", 100 + i)
    await post_score(aclient, key, "tetris", "ada-42", 1, name="Ada")
    client = await signed_in("tetris", "ada-42")

    page = text((await client.get("/games/tetris/")).content)

    assert "You · Ada #56 1 Jump to me Around you →" in page
    html = (await client.get("/games/tetris/")).content.decode()
    assert 'href="?period=daily&amp;page=2#me">Jump to me</a>' in html  # rank 56: page 2 of 50 a page


async def test_it_invites_visitors_to_link_their_player(make_game, aclient):
    await new_game(make_game)

    response = await aclient.get("/games/tetris/")

    assert "Link your player to show up here while you watch." in text(response.content)
    assert b'href="/account/login/?next=/games/tetris/link/"' in response.content
