"""Open pages of signed-in users linked to a player (page_beat / page_leave): several
tabs, and how a game server's or a score's heartbeat keeps a player online after
their last page closes."""

from __future__ import annotations

import pytest

from games import keys
from games import services as game_services
from leaderboard_site.redis import get_redis
from presence import selectors, services
from tests.presence.conftest import at, redis_state

pytestmark = pytest.mark.django_db(transaction=True)


async def presence_of(game, player_id, now):
    found = await selectors.player_presence(game=game, player_id=player_id, now=now)
    return found.online, found.last_seen


async def claimed(game, now):
    changes = await services.presence_claim_changes(announcer="test", game=game, now=now)
    return [p.player_id for p in changes.joined], changes.left


async def test_it_keeps_a_user_with_two_tabs_online_until_both_close(presence_game):
    game = await presence_game()
    assert await services.page_beat(game=game, player_id="a", socket_id="tab-1", now=at(0)) is True
    assert await services.page_beat(game=game, player_id="a", socket_id="tab-2", now=at(5)) is False
    assert await claimed(game, at(5)) == (["a"], [])

    assert await services.page_leave(game=game, player_id="a", socket_id="tab-1", now=at(10)) == "stay"
    assert await presence_of(game, "a", at(10)) == (True, at(5))
    assert await claimed(game, at(10)) == ([], [])

    assert await services.page_leave(game=game, player_id="a", socket_id="tab-2", now=at(15)) == "left"
    assert await presence_of(game, "a", at(15)) == (False, at(15))
    assert await claimed(game, at(15)) == ([], ["a"])
    assert await get_redis().exists(keys.presence_tabs(game.slug, "a")) == 0


async def test_it_moves_last_seen_with_each_page_beat(presence_game):
    game = await presence_game()
    await services.page_beat(game=game, player_id="a", socket_id="tab", now=at(0))
    assert await services.page_beat(game=game, player_id="a", socket_id="tab", now=at(20)) is False
    assert await presence_of(game, "a", at(80)) == (True, at(20))
    assert await presence_of(game, "a", at(80.001)) == (False, at(20))


async def test_it_keeps_a_player_a_game_server_saw_online_after_the_last_page_closes(presence_game):
    game = await presence_game()
    await services.presence_report(game=game, online=["a"], offline=[], now=at(0))
    await services.page_beat(game=game, player_id="a", socket_id="tab", now=at(10))
    assert await presence_of(game, "a", at(10)) == (True, at(10))

    assert await services.page_leave(game=game, player_id="a", socket_id="tab", now=at(20)) == "stay"
    # Back to when the game server saw them, and offline when that heartbeat's window ends.
    assert await presence_of(game, "a", at(20)) == (True, at(0))
    assert await presence_of(game, "a", at(60)) == (True, at(0))
    assert await presence_of(game, "a", at(60.001)) == (False, at(0))
    assert await claimed(game, at(20)) == (["a"], [])


async def test_it_takes_the_latest_server_heartbeat_between_page_beats(presence_game):
    game = await presence_game()
    await services.page_beat(game=game, player_id="a", socket_id="tab", now=at(0))
    await services.presence_report(game=game, online=["a"], offline=[], now=at(10))
    await services.page_beat(game=game, player_id="a", socket_id="tab", now=at(20))
    await services.presence_report(game=game, online=["a"], offline=[], now=at(25))
    await services.page_beat(game=game, player_id="a", socket_id="tab", now=at(40))
    assert await services.page_leave(game=game, player_id="a", socket_id="tab", now=at(50)) == "stay"
    assert await presence_of(game, "a", at(50)) == (True, at(25))


async def test_it_keeps_a_player_who_scored_online_after_the_last_page_closes(presence_game):
    game = await presence_game()
    await services.page_beat(game=game, player_id="a", socket_id="tab", now=at(0))
    await game_services.score_submit(game=game, player_id="a", score=5, now=at(10))
    await services.page_beat(game=game, player_id="a", socket_id="tab", now=at(20))
    assert await services.page_leave(game=game, player_id="a", socket_id="tab", now=at(30)) == "stay"
    assert await presence_of(game, "a", at(30)) == (True, at(10))


async def test_it_takes_a_player_offline_when_the_server_heartbeat_is_older_than_the_window(presence_game):
    game = await presence_game()
    await services.presence_report(game=game, online=["a"], offline=[], now=at(0))
    await services.page_beat(game=game, player_id="a", socket_id="tab", now=at(50))
    assert await services.page_leave(game=game, player_id="a", socket_id="tab", now=at(60.001)) == "left"
    assert await presence_of(game, "a", at(60.001)) == (False, at(60.001))


async def test_it_keeps_the_server_heartbeat_at_exactly_the_window_edge(presence_game):
    game = await presence_game()
    await services.presence_report(game=game, online=["a"], offline=[], now=at(0))
    await services.page_beat(game=game, player_id="a", socket_id="tab", now=at(50))
    assert await services.page_leave(game=game, player_id="a", socket_id="tab", now=at(60)) == "stay"
    assert await presence_of(game, "a", at(60)) == (True, at(0))


async def test_it_forgets_server_heartbeats_the_server_withdrew_with_offline(presence_game):
    """The game server said 'offline': its earlier heartbeat must not bring the player back
    online when their page closes."""
    game = await presence_game()
    await services.presence_report(game=game, online=["a"], offline=[], now=at(0))
    await services.page_beat(game=game, player_id="a", socket_id="tab", now=at(10))
    await services.presence_report(game=game, online=[], offline=["a"], now=at(20))
    assert await presence_of(game, "a", at(20)) == (False, at(20))
    await services.page_beat(game=game, player_id="a", socket_id="tab", now=at(30))
    assert await services.page_leave(game=game, player_id="a", socket_id="tab", now=at(40)) == "left"
    assert await presence_of(game, "a", at(40)) == (False, at(40))


async def test_it_counts_a_server_heartbeat_in_the_same_ms_as_a_page_beat(presence_game):
    """Two processes handling a page beat and a game server's heartbeat within one ms."""
    game = await presence_game()
    await services.page_beat(game=game, player_id="a", socket_id="tab", now=at(0))
    await services.presence_report(game=game, online=["a"], offline=[], now=at(0))
    assert await services.page_leave(game=game, player_id="a", socket_id="tab", now=at(1)) == "stay"
    assert await presence_of(game, "a", at(1)) == (True, at(0))


async def test_it_treats_a_tab_silent_past_its_expiry_as_closed(presence_game):
    game = await presence_game()
    # tab-1's process died after one beat: it lives until 0 + 60 s.
    await services.page_beat(game=game, player_id="a", socket_id="tab-1", now=at(0))
    await services.page_beat(game=game, player_id="a", socket_id="tab-2", now=at(50))
    assert await services.page_leave(game=game, player_id="a", socket_id="tab-2", now=at(59.999)) == "stay"
    await services.page_beat(game=game, player_id="a", socket_id="tab-2", now=at(59.999))
    assert await services.page_leave(game=game, player_id="a", socket_id="tab-2", now=at(70)) == "left"
    assert await presence_of(game, "a", at(70)) == (False, at(70))


async def test_it_answers_gone_for_a_page_of_a_player_already_offline(presence_game):
    game = await presence_game()
    before = await redis_state()
    assert await services.page_leave(game=game, player_id="a", socket_id="tab", now=at(0)) == "gone"
    assert await redis_state() == before

    await services.page_beat(game=game, player_id="b", socket_id="tab", now=at(0))
    await services.presence_prune(game=game, now=at(100))
    assert await services.page_leave(game=game, player_id="b", socket_id="tab", now=at(100)) == "gone"
    assert await presence_of(game, "b", at(100)) == (False, at(0))


async def test_it_announces_the_leave_of_a_page_that_closed_after_the_window(presence_game):
    """The page's last beat expired and no prune ran yet: closing it must still end the
    player's presence for a client that saw them join (the prune will not see them any more)."""
    game = await presence_game()
    await services.page_beat(game=game, player_id="a", socket_id="tab", now=at(0))
    assert await claimed(game, at(0)) == (["a"], [])
    await services.page_leave(game=game, player_id="a", socket_id="tab", now=at(100))
    await services.presence_prune(game=game, now=at(100))
    assert await claimed(game, at(100)) == ([], ["a"])
    assert await presence_of(game, "a", at(100)) == (False, at(0))


async def test_it_bounds_the_tabs_of_a_player(presence_game):
    game = await presence_game(presence_timeout_secs=60)
    await services.page_beat(game=game, player_id="a", socket_id="tab", now=at(0))
    ttl_ms = await get_redis().pttl(keys.presence_tabs(game.slug, "a"))
    assert 0 < ttl_ms <= 2 * 60_000
