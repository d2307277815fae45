"""Anonymous viewers: counted as watching by the same window, never listed, pruned."""

from __future__ import annotations

import pytest

from core import keys
from core.redis import get_redis
from presence import selectors, services
from tests.conftest import clock_at
from tests.presence.conftest import at

pytestmark = pytest.mark.django_db(transaction=True)


async def counts(game, now):
    with clock_at(now):
        page = await selectors.presence_page(game=game)
    return page.online, page.watching, page.players


async def test_it_counts_watchers_within_the_window_and_lists_none(presence_game):
    game = await presence_game(presence_timeout_secs=60)
    with clock_at(at(0)):
        await services.watcher_beat(game=game, socket_id="w1")
    with clock_at(at(30)):
        await services.watcher_beat(game=game, socket_id="w2")
    with clock_at(at(30)):
        await services.watcher_beat(game=game, socket_id="w2")  # a repeat beat is one watcher
    assert await counts(game, at(30)) == (0, 2, [])
    assert await counts(game, at(60)) == (0, 2, [])
    assert await counts(game, at(60.001)) == (0, 1, [])
    with clock_at(at(61)):
        await services.watcher_beat(game=game, socket_id="w1")
    assert await counts(game, at(61)) == (0, 2, [])
    assert await counts(game, at(121.001)) == (0, 0, [])


async def test_it_stops_counting_a_watcher_who_leaves(presence_game):
    game = await presence_game()
    with clock_at(at(0)):
        await services.watcher_beat(game=game, socket_id="w1")
    with clock_at(at(0)):
        await services.watcher_beat(game=game, socket_id="w2")
    await services.watcher_leave(game=game, socket_id="w1")
    await services.watcher_leave(game=game, socket_id="never-opened")
    assert await counts(game, at(1)) == (0, 1, [])
    with clock_at(at(1)):
        claim = await services.presence_claim_changes(announcer="test", game=game)
    assert claim is not None
    assert (claim.watching, claim.joined, claim.left) == (1, [], [])


async def test_it_prunes_expired_watchers_without_announcing_them(presence_game):
    game = await presence_game()
    with clock_at(at(0)):
        await services.watcher_beat(game=game, socket_id="w1")
    with clock_at(at(50)):
        await services.watcher_beat(game=game, socket_id="w2")
    with clock_at(at(100)):
        assert await services.presence_prune(game=game) == []
    assert await get_redis().zrange(keys.presence_watching(game.slug), 0, -1) == ["w2"]
    assert await counts(game, at(100)) == (0, 1, [])
    with clock_at(at(100)):
        claim = await services.presence_claim_changes(announcer="test", game=game)
    assert claim is not None
    assert (claim.watching, claim.joined, claim.left) == (1, [], [])
