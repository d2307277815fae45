"""Open pages of signed-in users linked to a player (page_beat / page_leave): several
tabs, and how a game server's or a score's heartbeat keeps a player online after
their last page closes."""

from __future__ import annotations

import pytest

from core import keys
from core.redis import get_redis
from games import services as game_services
from presence import selectors, services
from tests.conftest import clock_at
from tests.presence.conftest import at, redis_state

pytestmark = pytest.mark.django_db(transaction=True)


async def presence_of(game, player_id, now):
    with clock_at(now):
        found = await selectors.player_presence(game=game, player_id=player_id)
    return found.online, found.last_seen


async def claimed(game, now):
    with clock_at(now):
        changes = await services.presence_claim_changes(announcer="test", game=game)
    assert changes is not None
    return [p.player_id for p in changes.joined], changes.left


async def test_it_keeps_a_user_with_two_tabs_online_until_both_close(presence_game):
    game = await presence_game()
    with clock_at(at(0)):
        assert await services.page_beat(game=game, player_id="a", socket_id="tab-1") is True
    with clock_at(at(5)):
        assert await services.page_beat(game=game, player_id="a", socket_id="tab-2") is False
    assert await claimed(game, at(5)) == (["a"], [])

    with clock_at(at(10)):
        assert await services.page_leave(game=game, player_id="a", socket_id="tab-1") == "stay"
    assert await presence_of(game, "a", at(10)) == (True, at(5))
    assert await claimed(game, at(10)) == ([], [])

    with clock_at(at(15)):
        assert await services.page_leave(game=game, player_id="a", socket_id="tab-2") == "left"
    assert await presence_of(game, "a", at(15)) == (False, at(15))
    assert await claimed(game, at(15)) == ([], ["a"])
    assert await get_redis().exists(keys.presence_tabs(game.slug, "a")) == 0


async def test_it_moves_last_seen_with_each_page_beat(presence_game):
    game = await presence_game()
    with clock_at(at(0)):
        await services.page_beat(game=game, player_id="a", socket_id="tab")
    with clock_at(at(20)):
        assert await services.page_beat(game=game, player_id="a", socket_id="tab") is False
    assert await presence_of(game, "a", at(80)) == (True, at(20))
    assert await presence_of(game, "a", at(80.001)) == (False, at(20))


async def test_it_keeps_a_player_a_game_server_saw_online_after_the_last_page_closes(presence_game):
    game = await presence_game()
    with clock_at(at(0)):
        await services.presence_report(game=game, online=["a"], offline=[])
    with clock_at(at(10)):
        await services.page_beat(game=game, player_id="a", socket_id="tab")
    assert await presence_of(game, "a", at(10)) == (True, at(10))

    with clock_at(at(20)):
        assert await services.page_leave(game=game, player_id="a", socket_id="tab") == "stay"
    # Back to when the game server saw them, and offline when that heartbeat's window ends.
    assert await presence_of(game, "a", at(20)) == (True, at(0))
    assert await presence_of(game, "a", at(60)) == (True, at(0))
    assert await presence_of(game, "a", at(60.001)) == (False, at(0))
    assert await claimed(game, at(20)) == (["a"], [])


async def test_it_takes_the_latest_server_heartbeat_between_page_beats(presence_game):
    game = await presence_game()
    with clock_at(at(0)):
        await services.page_beat(game=game, player_id="a", socket_id="tab")
    with clock_at(at(10)):
        await services.presence_report(game=game, online=["a"], offline=[])
    with clock_at(at(20)):
        await services.page_beat(game=game, player_id="a", socket_id="tab")
    with clock_at(at(25)):
        await services.presence_report(game=game, online=["a"], offline=[])
    with clock_at(at(40)):
        await services.page_beat(game=game, player_id="a", socket_id="tab")
    with clock_at(at(50)):
        assert await services.page_leave(game=game, player_id="a", socket_id="tab") == "stay"
    assert await presence_of(game, "a", at(50)) == (True, at(25))


async def test_it_keeps_a_player_who_scored_online_after_the_last_page_closes(presence_game):
    game = await presence_game()
    with clock_at(at(0)):
        await services.page_beat(game=game, player_id="a", socket_id="tab")
    with clock_at(at(10)):
        await game_services.score_submit(game=game, board=game.boards[0], player_id="a", score=5)
    with clock_at(at(20)):
        await services.page_beat(game=game, player_id="a", socket_id="tab")
    with clock_at(at(30)):
        assert await services.page_leave(game=game, player_id="a", socket_id="tab") == "stay"
    assert await presence_of(game, "a", at(30)) == (True, at(10))


async def test_it_takes_a_player_offline_when_the_server_heartbeat_is_older_than_the_window(presence_game):
    game = await presence_game()
    with clock_at(at(0)):
        await services.presence_report(game=game, online=["a"], offline=[])
    with clock_at(at(50)):
        await services.page_beat(game=game, player_id="a", socket_id="tab")
    with clock_at(at(60.001)):
        assert await services.page_leave(game=game, player_id="a", socket_id="tab") == "left"
    assert await presence_of(game, "a", at(60.001)) == (False, at(60.001))


async def test_it_keeps_the_server_heartbeat_at_exactly_the_window_edge(presence_game):
    game = await presence_game()
    with clock_at(at(0)):
        await services.presence_report(game=game, online=["a"], offline=[])
    with clock_at(at(50)):
        await services.page_beat(game=game, player_id="a", socket_id="tab")
    with clock_at(at(60)):
        assert await services.page_leave(game=game, player_id="a", socket_id="tab") == "stay"
    assert await presence_of(game, "a", at(60)) == (True, at(0))


async def test_it_forgets_server_heartbeats_the_server_withdrew_with_offline(presence_game):
    """The game server said 'offline': its earlier heartbeat must not bring the player back
    online when their page closes."""
    game = await presence_game()
    with clock_at(at(0)):
        await services.presence_report(game=game, online=["a"], offline=[])
    with clock_at(at(10)):
        await services.page_beat(game=game, player_id="a", socket_id="tab")
    with clock_at(at(20)):
        await services.presence_report(game=game, online=[], offline=["a"])
    assert await presence_of(game, "a", at(20)) == (False, at(20))
    with clock_at(at(30)):
        await services.page_beat(game=game, player_id="a", socket_id="tab")
    with clock_at(at(40)):
        assert await services.page_leave(game=game, player_id="a", socket_id="tab") == "left"
    assert await presence_of(game, "a", at(40)) == (False, at(40))


async def test_it_counts_a_server_heartbeat_in_the_same_ms_as_a_page_beat(presence_game):
    """Two processes handling a page beat and a game server's heartbeat within one ms."""
    game = await presence_game()
    with clock_at(at(0)):
        await services.page_beat(game=game, player_id="a", socket_id="tab")
    with clock_at(at(0)):
        await services.presence_report(game=game, online=["a"], offline=[])
    with clock_at(at(1)):
        assert await services.page_leave(game=game, player_id="a", socket_id="tab") == "stay"
    assert await presence_of(game, "a", at(1)) == (True, at(0))


async def test_it_treats_a_tab_silent_past_its_expiry_as_closed(presence_game):
    game = await presence_game()
    # tab-1's process died after one beat: it lives until 0 + 60 s.
    with clock_at(at(0)):
        await services.page_beat(game=game, player_id="a", socket_id="tab-1")
    with clock_at(at(50)):
        await services.page_beat(game=game, player_id="a", socket_id="tab-2")
    with clock_at(at(59.999)):
        assert await services.page_leave(game=game, player_id="a", socket_id="tab-2") == "stay"
    with clock_at(at(59.999)):
        await services.page_beat(game=game, player_id="a", socket_id="tab-2")
    with clock_at(at(70)):
        assert await services.page_leave(game=game, player_id="a", socket_id="tab-2") == "left"
    assert await presence_of(game, "a", at(70)) == (False, at(70))


async def test_it_answers_gone_for_a_page_of_a_player_already_offline(presence_game):
    game = await presence_game()
    before = await redis_state()
    with clock_at(at(0)):
        assert await services.page_leave(game=game, player_id="a", socket_id="tab") == "gone"
    assert await redis_state() == before

    with clock_at(at(0)):
        await services.page_beat(game=game, player_id="b", socket_id="tab")
    with clock_at(at(100)):
        await services.presence_prune(game=game)
    with clock_at(at(100)):
        assert await services.page_leave(game=game, player_id="b", socket_id="tab") == "gone"
    assert await presence_of(game, "b", at(100)) == (False, at(0))


async def test_it_announces_the_leave_of_a_page_that_closed_after_the_window(presence_game):
    """The page's last beat expired and no prune ran yet: closing it must still end the
    player's presence for a client that saw them join (the prune will not see them any more)."""
    game = await presence_game()
    with clock_at(at(0)):
        await services.page_beat(game=game, player_id="a", socket_id="tab")
    assert await claimed(game, at(0)) == (["a"], [])
    with clock_at(at(100)):
        await services.page_leave(game=game, player_id="a", socket_id="tab")
    with clock_at(at(100)):
        await services.presence_prune(game=game)
    assert await claimed(game, at(100)) == ([], ["a"])
    assert await presence_of(game, "a", at(100)) == (False, at(0))


async def test_it_bounds_the_tabs_of_a_player(presence_game):
    game = await presence_game(presence_timeout_secs=60)
    with clock_at(at(0)):
        await services.page_beat(game=game, player_id="a", socket_id="tab")
    ttl_ms = await get_redis().pttl(keys.presence_tabs(game.slug, "a"))
    assert 0 < ttl_ms <= 2 * 60_000
