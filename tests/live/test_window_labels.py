"""A board's own names for its windows ("Race week" for a custom window) on every page that
names a window: tabs, headings, counts, the player page and the history."""

from __future__ import annotations

import datetime as dt

import pytest
from django.test import Client

from archive import services as archive_services
from core import config
from core.clock import now as clock_now
from core.models import Game, Leaderboard
from core.redis import run_sync
from games import periods, services
from tests.conftest import clock_at
from tests.live.test_pages import text

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def game(make_game) -> Game:
    game = make_game("tetris", max_submissions_per_minute=0)
    Leaderboard.objects.create(
        game=game,
        slug="track-1",
        name="Track 1",
        windows=["weekly", "custom"],
        cron="0 18 * * FRI",
        window_labels={"custom": "Race week"},
    )
    return game


def submit(player_id: str, score: int, at: dt.datetime | None = None) -> None:
    found = run_sync(lambda: config.get_game("tetris"))
    assert found is not None
    board = found.board_named("track-1")
    assert board is not None
    with clock_at(at):
        run_sync(lambda: services.score_submit(game=found, board=board, player_id=player_id, score=score))


def test_it_names_the_window_as_the_studio_does_on_the_game_and_player_pages(client: Client, game):
    submit("ada", 10)

    page = text(client.get("/games/tetris/", {"board": "track-1", "period": "custom"}).content)
    player = text(client.get("/games/tetris/players/ada/", {"board": "track-1", "period": "custom"}).content)

    assert "Weekly Race week" in page  # the tabs
    assert "Race week standings" in page and "1 player on the Race week board" in page
    assert "Track 1 · Race week" in player and "Full Race week leaderboard →" in player
    assert "Custom" not in page + player


def test_it_names_the_window_on_the_history_of_the_board(client: Client, game):
    board = game.leaderboards.get(slug="track-1")
    before = clock_now() - dt.timedelta(days=10)
    submit("ada", 10, before)
    period = periods.window_current(config.BoardConfig.from_model(board, game), "custom", before)
    with clock_at(period.ends_at):
        archive_services.period_archive(board=board, period="custom", period_id=period.id)

    history = text(client.get("/games/tetris/history/", {"board": "track-1"}).content)
    final = text(client.get(f"/games/tetris/history/custom/{period.id}/", {"board": "track-1"}).content)

    assert "All Weekly Race week" in history and f"Race week {period.id}" in history
    assert f"History / Race week {period.id}" in final and "← All past Race week periods" in final
