"""Deleting a game (moderation.services.game_delete): every key and row of the game
goes, another game's stay exactly as they were, and the act is in the audit trail."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.test import Client

from accounts import services as account_services
from archive import ledger
from archive.models import ArchivedPeriod, ArchivedStanding, ScoreEvent
from archive.services import period_archive
from core import apikeys, keys
from core.audit import Actor
from core.config import GameConfig
from core.errors import ServiceError
from core.models import ApiKey, AuditEntry, Game, Player
from core.redis import get_redis, run_sync
from games import periods, services
from moderation import services as moderation
from presence import services as presence_services
from tests import redis_replies
from tests.conftest import auth, clock_at

pytestmark = pytest.mark.django_db

MONDAY = dt.datetime(2026, 3, 2, 10, 0, tzinfo=dt.UTC)


async def _dump() -> dict[str, Any]:
    """Every key in Redis and its value; not rate-limit states, which expire within ms here."""
    client = get_redis()
    found: dict[str, Any] = {}
    async for key in client.scan_iter(match="*"):
        if not key.startswith("rl:") or key.endswith("key-last-used"):
            found[key] = (await client.type(key), await client.dump(key))
    return found


def tetris_keys() -> list[str]:
    async def found() -> list[str]:
        return [*await redis_replies.matching("*{tetris}*"), *await redis_replies.matching("*{tetris.*}*")]

    return run_sync(found)


def play(game: Game) -> str:
    """A game with something of every kind: scores through the API (rate limits,
    idempotency), an archived period, players, presence, link codes, the ledger."""
    _, raw_key = apikeys.api_key_create(game=game, name="server")
    client = Client()
    yesterday = MONDAY - dt.timedelta(days=1)
    for moment in (yesterday, MONDAY):
        with clock_at(moment):
            for player, score in (("ann", 10), ("bo", 20)):
                response = client.post(
                    f"/api/v1/games/{game.slug}/leaderboards/main/scores",
                    {"player_id": player, "score": score, "display_name": player.title()},
                    content_type="application/json",
                    headers={**auth(raw_key), "Idempotency-Key": f"{player}-{moment.day}"},
                )
                assert response.status_code == 200, response.content
    ledger.ledger_drain()
    services.players_sync_pending()
    config = GameConfig.from_model(game, "0")
    with clock_at(MONDAY):
        period_archive(
            board=game.leaderboards.get(), period="daily", period_id=periods.current("daily", "UTC", yesterday).id
        )
        run_sync(lambda: presence_services.page_beat(game=config, player_id="ann", socket_id="tab"))
        run_sync(lambda: account_services.link_code_issue(game=config, player_id="bo"))
    return raw_key


def test_it_removes_every_key_and_row_of_the_game_and_nothing_else(make_game):
    tetris, snake = make_game("tetris"), make_game("snake")
    raw_key = play(tetris)
    play(snake)
    before = {k: v for k, v in run_sync(_dump).items() if "{tetris}" not in k and "{tetris." not in k}
    assert len(before) < len(run_sync(_dump))

    with clock_at(MONDAY):
        deleted = moderation.game_delete(game=tetris, reason="test game, never released", by=Actor("ops"))

    assert run_sync(_dump) == before
    assert tetris_keys() == []
    assert deleted.redis_keys > 20
    assert deleted.rows == {
        "score events": 4,
        "archived standings": 2,
        "archived periods": 1,
        "dead letters": 0,
        "account links": 0,
        "rewards": 0,
        "league tiers": 0,
        "settled entries": 0,
        "settlements": 0,
        "players": 2,
        "API keys": 1,
    }
    assert not Game.objects.filter(slug="tetris").exists()
    for model in (ScoreEvent, ArchivedPeriod, Player, ApiKey):
        assert not model.objects.filter(game__slug="tetris").exists()
        assert model.objects.filter(game__slug="snake").exists()
    assert ArchivedStanding.objects.filter(archived_period__game__slug="snake").count() == 2
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.game_slug, entry.actor_name, entry.reason) == (
        "delete_game",
        "tetris",
        "ops",
        "test game, never released",
    )
    assert entry.detail["score events"] == 4
    # The game's key went with it.
    response = Client().post(
        "/api/v1/games/tetris/leaderboards/main/scores",
        {"player_id": "ann", "score": 1},
        "application/json",
        headers=auth(raw_key),
    )
    assert response.status_code == 401


def test_it_lets_a_new_game_take_the_slug_with_nothing_of_the_old_one(make_game):
    play(make_game("tetris"))
    moderation.game_delete(game=Game.objects.get(slug="tetris"), reason="start over")

    fresh = make_game("tetris")

    config = GameConfig.from_model(fresh, "0")
    with clock_at(MONDAY):
        board = run_sync(lambda: services.score_submit(game=config, board=config.boards[0], player_id="new", score=1))
    assert board.periods["all-time"].rank == 1
    names = run_sync(lambda: get_redis().hgetall(keys.names("tetris")))
    assert names == {"new": "new"}


def test_it_refuses_without_a_reason_and_deletes_nothing(make_game):
    tetris = make_game("tetris")
    play(tetris)
    before = run_sync(_dump)

    with pytest.raises(ServiceError) as refused:
        moderation.game_delete(game=tetris, reason=" ")

    assert refused.value.field == "reason"
    assert run_sync(_dump) == before
    assert Game.objects.filter(slug="tetris", active=True).exists()
