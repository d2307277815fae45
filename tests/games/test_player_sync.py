"""The beat tasks that copy what Redis learned (new players, key use) into the database."""

from __future__ import annotations

import datetime as dt

import pytest

from core import apikeys, keys
from core import tasks as core_tasks
from core.config import GameConfig
from core.models import ApiKey, DeadLetter, Player
from core.redis import get_redis, run_sync
from games import services, tasks
from tests import redis_replies
from tests.conftest import clock_at

# request_authorize reads the database from the Redis bridge thread: rows must be committed.
pytestmark = pytest.mark.django_db(transaction=True)

T0 = dt.datetime(2026, 3, 10, 12, 0, tzinfo=dt.UTC)


def submit(game: GameConfig, player_id: str, score: int, name: str | None = None, now: dt.datetime = T0) -> None:
    with clock_at(now):
        run_sync(
            lambda: services.score_submit(
                game=game, board=game.boards[0], player_id=player_id, score=score, display_name=name
            )
        )


@pytest.fixture
def game(make_game):
    return make_game("tetris", max_submissions_per_minute=0)


def test_it_creates_player_rows_in_batches(game):
    config = GameConfig.from_model(game, "0")
    for i in range(5):
        submit(config, f"p{i}", 10 * i, f"Player {i}", now=T0 + dt.timedelta(seconds=i))
    assert not Player.objects.exists()

    # Five players in batches of two: the drain goes on past a full batch.
    assert services.players_sync_pending(batch_size=2) == 5
    rows = list(Player.objects.order_by("player_id").values_list("player_id", "display_name", "first_seen_at"))
    assert rows == [(f"p{i}", f"Player {i}", T0 + dt.timedelta(seconds=i)) for i in range(5)]
    assert all(p.game_id == game.pk and not p.hidden for p in Player.objects.all())


def test_it_names_a_player_after_their_id_when_no_name_was_sent(game):
    submit(GameConfig.from_model(game, "0"), "anon", 1)
    services.players_sync_pending()
    assert Player.objects.get().display_name == "anon"


def test_it_refreshes_a_renamed_player_and_then_does_nothing(game):
    config = GameConfig.from_model(game, "0")
    submit(config, "alice", 10, "Alice")
    submit(config, "bob", 20, "Bob")
    assert services.players_sync_pending(batch_size=2) == 2

    assert services.players_sync_pending(batch_size=2) == 0
    # Same name again: nothing to refresh.
    submit(config, "alice", 11, "Alice", now=T0 + dt.timedelta(minutes=1))
    assert services.players_sync_pending() == 0

    submit(config, "alice", 12, "Alice the Great", now=T0 + dt.timedelta(minutes=2))
    assert services.players_sync_pending() == 1
    alice = Player.objects.get(player_id="alice")
    # A rename refreshes the name but keeps when the player was first seen.
    assert (alice.display_name, alice.first_seen_at) == ("Alice the Great", T0)
    assert Player.objects.get(player_id="bob").display_name == "Bob"
    assert services.players_sync_pending() == 0
    assert Player.objects.count() == 2


def test_it_syncs_players_from_the_beat_task(game):
    config = GameConfig.from_model(game, "0")
    submit(config, "alice", 10, "Alice")
    assert tasks.sync_players() == 1
    assert Player.objects.get().display_name == "Alice"
    assert tasks.sync_players() == 0


def test_it_copies_when_an_api_key_was_last_used(game, django_assert_num_queries):
    api_key, raw = apikeys.api_key_create(game=game, name="server")
    unused, _ = apikeys.api_key_create(game=game, name="spare")
    assert apikeys.api_keys_sync_last_used() == 0

    used_at = dt.datetime(2026, 3, 10, 12, 0, 0, 123000, tzinfo=dt.UTC)
    with clock_at(used_at):
        run_sync(lambda: apikeys.request_authorize(raw_key=raw, game_slug="tetris"))
    assert apikeys.api_keys_sync_last_used() == 1
    api_key.refresh_from_db()
    unused.refresh_from_db()
    assert (api_key.last_used_at, unused.last_used_at) == (used_at, None)
    # Nothing newer: nothing written, and nothing asked of the database past the list of games.
    with django_assert_num_queries(1):
        assert apikeys.api_keys_sync_last_used() == 0

    later = used_at + dt.timedelta(minutes=5)
    with clock_at(later):
        run_sync(lambda: apikeys.request_authorize(raw_key=raw, game_slug="tetris"))
    assert core_tasks.sync_api_key_last_used() == 1
    assert ApiKey.objects.get(pk=api_key.pk).last_used_at == later


def test_it_sets_aside_a_player_the_database_refuses_and_syncs_the_others(game):
    """A name with a NUL, from before names were checked: PostgreSQL refuses it (a dead
    letter), SQLite stores it; either way the others are stored and nothing stays pending."""
    config = GameConfig.from_model(game, "0")
    submit(config, "ok-1", 1, "Ada")
    run_sync(lambda: get_redis().hset(keys.names("tetris"), "nul", "bad\x00name"))
    run_sync(lambda: get_redis().zadd(keys.pending_players("tetris"), {"nul": 1}))
    submit(config, "ok-2", 2, "Bob")

    assert services.players_sync_pending() == 3

    stored = set(Player.objects.values_list("player_id", flat=True))
    letters = set(DeadLetter.objects.filter(source=DeadLetter.Source.PLAYERS).values_list("key", flat=True))
    assert {"ok-1", "ok-2"} <= stored
    assert ("nul" in stored) != ("nul" in letters)
    assert run_sync(lambda: get_redis().zcard(keys.pending_players("tetris"))) == 0


def marked_games() -> list[str]:
    return run_sync(lambda: redis_replies.members(keys.work_players()))


def test_it_visits_only_games_with_new_players(make_game):
    busy = GameConfig.from_model(make_game("busy", max_submissions_per_minute=0), "0")
    idle = GameConfig.from_model(make_game("idle", max_submissions_per_minute=0), "0")
    submit(idle, "old", 1, "Old")
    services.players_sync_pending()
    assert marked_games() == []  # synced, and unmarked

    submit(busy, "new", 1, "New")
    submit(idle, "old", 2)  # a score, no new name: nothing for the sync
    assert marked_games() == ["busy"]
    assert services.players_sync_pending() == 1
    assert marked_games() == []
    assert sorted(Player.objects.values_list("game__slug", "player_id")) == [("busy", "new"), ("idle", "old")]


def test_it_finds_players_whose_mark_a_dead_process_never_wrote(game):
    config = GameConfig.from_model(game, "0")
    submit(config, "lost", 1, "Lost")
    # The process died between the game script and the mark.
    run_sync(lambda: get_redis().delete(keys.work_players()))
    assert services.players_sync_pending() == 0
    assert not Player.objects.exists()

    assert tasks.sweep_pending_players() == 1
    assert services.players_sync_pending() == 1
    assert Player.objects.get().display_name == "Lost"
    assert tasks.sweep_pending_players() == 0
