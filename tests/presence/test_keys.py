"""Every presence key of a game carries the game's hash tag, so each script stays on one
Redis Cluster slot; and every key has a bound."""

from __future__ import annotations

import pytest
from redis.crc import key_slot

from core import keys
from core.redis import get_redis
from games import services as game_services
from presence import selectors, services
from tests.conftest import clock_at
from tests.presence.conftest import at

pytestmark = pytest.mark.django_db(transaction=True)

SLUG = "space-race"


async def test_it_keeps_every_presence_key_of_a_game_on_one_cluster_slot(presence_game):
    game = await presence_game(SLUG)
    with clock_at(at(0)):
        await services.presence_report(game=game, online=["a", "b"], offline=[])
    with clock_at(at(1)):
        await services.presence_report(game=game, online=[], offline=["b"])
    with clock_at(at(1)):
        await services.page_beat(game=game, player_id="c", socket_id="tab")
    with clock_at(at(1)):
        await services.watcher_beat(game=game, socket_id="w")
    with clock_at(at(1)):
        await game_services.score_submit(game=game, board=game.boards[0], player_id="d", score=1)
    with clock_at(at(61.5)):
        await services.presence_prune(game=game)
    with clock_at(at(62)):
        await services.presence_report(game=game, online=["e"], offline=[])
    with clock_at(at(62)):
        await selectors.presence_page(game=game)
    with clock_at(at(62)):
        await services.presence_claim_changes(announcer="test", game=game)

    builders = [
        keys.presence_online(SLUG),
        keys.presence_watching(SLUG),
        keys.presence_tabs(SLUG, "c"),
        keys.presence_last_seen(SLUG),
        keys.presence_joined(SLUG),
        keys.presence_left(SLUG),
        keys.presence_version(SLUG),
    ]
    stored = [k async for k in get_redis().scan_iter(match="presence:*")]
    assert {k.split(":")[2] for k in stored} >= {"online", "last-seen", "version", "tabs"}
    assert {key_slot(k.encode()) for k in [*builders, *stored]} == {key_slot(b"{space-race}")}
    assert all(k.startswith("presence:{space-race}:") for k in [*builders, *stored])


async def test_it_bounds_the_presence_keys_that_grow_with_time(presence_game):
    game = await presence_game(SLUG)
    with clock_at(at(0)):
        await services.presence_report(game=game, online=["a"], offline=["b"])
    with clock_at(at(0)):
        await services.page_beat(game=game, player_id="c", socket_id="tab")
    with clock_at(at(1)):
        await services.page_leave(game=game, player_id="c", socket_id="tab")
    client = get_redis()
    for key in (keys.presence_joined(SLUG), keys.presence_left(SLUG)):
        assert 0 < await client.pttl(key) <= services.PRESENCE_ANNOUNCE_TTL_MS, key
    # The online and watching sets are bounded by the prune: nothing expired stays after one.
    with clock_at(at(0)):
        await services.watcher_beat(game=game, socket_id="w")
    with clock_at(at(61)):
        await services.presence_prune(game=game)
    assert await client.zcard(keys.presence_online(SLUG)) == 0
    assert await client.zcard(keys.presence_watching(SLUG)) == 0
