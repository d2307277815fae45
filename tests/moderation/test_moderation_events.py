"""Erasing a player and deleting a game are announced (docs/events.md: ``player.erased``,
``game.deleted``) in the transaction that does them, and not when they fail."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from core import clock, outbox
from core.config import GameConfig
from core.errors import ServiceError
from core.models import AuditEntry, Event, Game
from core.redis import run_sync
from games import services
from moderation import services as moderation
from tests.conftest import clock_at

pytestmark = pytest.mark.django_db

NOW = dt.datetime(2026, 3, 2, 10, 0, tzinfo=dt.UTC)


def checked_events() -> list[outbox.EventEnvelope]:
    envelopes = [outbox.envelope_of(event) for event in Event.objects.order_by("id")]
    for envelope in envelopes:
        outbox.envelope_check(envelope)
    return envelopes


@pytest.fixture
def game(make_game: Any) -> Game:
    game = make_game("tetris", max_submissions_per_minute=0)
    config = GameConfig.from_model(game, "0")
    with clock_at(NOW):
        run_sync(lambda: services.score_submit(game=config, board=config.boards[0], player_id="ada", score=5))
    return game


def test_it_announces_a_player_erased_with_the_erasure(game: Game) -> None:
    with clock_at(NOW):
        moderation.player_erase(game=game, player_id="ada", reason="GDPR request")
        with pytest.raises(ServiceError):
            moderation.player_erase(game=game, player_id="ada", reason="again")  # nothing left: 404, no event
    (erased,) = checked_events()
    assert erased["type"] == "player.erased"
    assert erased["data"] == {"game": "tetris", "player_id": "ada", "erased_at": clock.iso(NOW)}


def test_it_announces_a_game_deleted_with_its_rows_gone(game: Game) -> None:
    with clock_at(NOW):
        moderation.game_delete(game=game, reason="test game")
    (deleted,) = checked_events()
    assert deleted["type"] == "game.deleted"
    assert deleted["data"] == {"game": "tetris", "deleted_at": clock.iso(NOW)}
    assert not Game.objects.filter(slug="tetris").exists()  # the event outlives its game


def test_it_takes_a_board_unchecked_in_admin_out_of_play_as_delete_does(admin_client: Any, game: Game) -> None:
    from tests.moderation.test_admin import board_form, board_url

    main = game.leaderboards.get()
    with clock_at(NOW):
        response = admin_client.post(board_url(main), board_form(main, active=""))
    assert response.status_code == 302
    assert not game.leaderboards.get().active
    (closed,) = checked_events()
    assert closed["type"] == "board.closed"
    assert closed["data"] == {"game": "tetris", "leaderboard": "main", "closed_at": clock.iso(NOW)}
    assert AuditEntry.objects.filter(action="close_board", actor_name="admin").exists()


def test_it_brings_a_board_checked_again_in_admin_back_as_a_new_generation(admin_client: Any, game: Game) -> None:
    from games import periods
    from tests.moderation.test_admin import board_form, board_url

    main = game.leaderboards.get()
    with clock_at(NOW):
        assert admin_client.post(board_url(main), board_form(main, active="")).status_code == 302
    back = NOW + dt.timedelta(minutes=5)
    with clock_at(back):
        main.refresh_from_db()
        assert admin_client.post(board_url(main), board_form(main, active="on")).status_code == 302
    board = game.leaderboards.get()
    assert (board.active, board.closed_at, board.reopened_at) == (True, NOW, back)
    config = GameConfig.from_model(Game.objects.get(pk=game.pk), "0").boards[0]
    with clock_at(back):
        current = periods.window_current(config, "daily", clock.now())
    assert (current.id, current.starts_at) == ("2026-03-02~20260302T100500.000Z", back)
