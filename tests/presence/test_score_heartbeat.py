"""An accepted score is a heartbeat (games/lua/submit_score.lua); a refused or replayed one is not."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from core.errors import ServiceError
from core.models import Game
from games import services as game_services
from presence import selectors, services
from tests.conftest import clock_at
from tests.presence.conftest import at, redis_state

pytestmark = pytest.mark.django_db(transaction=True)


async def presence_of(game, player_id, now):
    with clock_at(now):
        found = await selectors.player_presence(game=game, player_id=player_id)
    return found.online, found.last_seen


async def test_it_counts_an_accepted_score_as_a_heartbeat_and_a_join(presence_game):
    game = await presence_game()
    with clock_at(at(0)):
        await game_services.score_submit(game=game, board=game.boards[0], player_id="a", score=10, display_name="Ann")
    assert await presence_of(game, "a", at(60)) == (True, at(0))
    with clock_at(at(30)):
        await game_services.score_submit(game=game, board=game.boards[0], player_id="a", score=12)
    assert await presence_of(game, "a", at(90)) == (True, at(30))
    with clock_at(at(30)):
        page = await selectors.presence_page(game=game)
    assert [(p.player_id, p.display_name, p.last_seen) for p in page.players] == [("a", "Ann", at(30))]
    with clock_at(at(30)):
        claim = await services.presence_claim_changes(announcer="test", game=game)
    assert claim is not None
    assert [(p.player_id, p.display_name, p.last_seen) for p in claim.joined] == [("a", "Ann", at(0))]


async def test_it_counts_every_accepted_item_of_a_batch(presence_game):
    game = await presence_game(min_score=0)
    items = [
        game_services.Submission("a", 1, None, leaderboard="main"),
        game_services.Submission("b", -1, None, leaderboard="main"),  # out of bounds
        game_services.Submission("c", 3, "Cy", leaderboard="main"),
    ]
    with clock_at(at(0)):
        results = await game_services.score_submit_many(game=game, items=items)
    assert [isinstance(r, ServiceError) for r in results] == [False, True, False]
    with clock_at(at(0)):
        page = await selectors.presence_page(game=game)
    assert [(p.player_id, p.display_name) for p in page.players] == [("c", "Cy"), ("a", "a")]
    assert await presence_of(game, "b", at(0)) == (False, None)


async def test_it_does_not_count_a_score_out_of_bounds(presence_game):
    game = await presence_game(min_score=0, max_score=100)
    before = await redis_state()
    for score in (-1, 101):
        with pytest.raises(ServiceError), clock_at(at(0)):
            await game_services.score_submit(game=game, board=game.boards[0], player_id="a", score=score)
    assert await presence_of(game, "a", at(0)) == (False, None)
    assert await redis_state() == before


async def test_it_does_not_count_a_score_of_a_hidden_player(presence_game):
    game = await presence_game()
    model = await Game.objects.aget(slug=game.slug)
    with clock_at(at(0)):
        await sync_to_async(game_services.player_set_hidden)(game=model, player_id="a", hidden=True)
    before = await redis_state("presence:*")
    with pytest.raises(ServiceError) as refused, clock_at(at(1)):
        await game_services.score_submit(game=game, board=game.boards[0], player_id="a", score=5)
    assert refused.value.code == "player_hidden"
    assert await presence_of(game, "a", at(1)) == (False, None)
    assert await redis_state("presence:*") == before


async def test_it_does_not_count_a_score_refused_by_the_anti_spam_limit(presence_game):
    game = await presence_game(max_submissions_per_minute=1)
    with clock_at(at(0)):
        await game_services.score_submit(game=game, board=game.boards[0], player_id="a", score=5)
    with pytest.raises(ServiceError) as refused, clock_at(at(10)):
        await game_services.score_submit(game=game, board=game.boards[0], player_id="a", score=6)
    assert refused.value.code == "player_rate_limited"
    assert await presence_of(game, "a", at(10)) == (True, at(0))


async def test_it_does_not_move_last_seen_on_an_idempotent_replay(presence_game):
    game = await presence_game()
    idem = game_services.Idempotency("abcd1234", "retry-1", "fingerprint")
    with clock_at(at(0)):
        first = await game_services.score_submit(
            game=game, board=game.boards[0], player_id="a", score=5, idempotency=idem
        )
    assert not first.replayed
    with clock_at(at(0)):
        await services.presence_claim_changes(announcer="test", game=game)
    with clock_at(at(100)):
        replay = await game_services.score_submit(
            game=game, board=game.boards[0], player_id="a", score=5, idempotency=idem
        )
    assert replay.replayed
    assert await presence_of(game, "a", at(100)) == (False, at(0))
    with clock_at(at(100)):
        claim = await services.presence_claim_changes(announcer="test", game=game)
    assert claim is not None
    assert (claim.joined, claim.left) == ([], [])
