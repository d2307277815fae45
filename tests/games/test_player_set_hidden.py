from __future__ import annotations

import datetime as dt

import pytest

from core import keys
from core.clock import now as clock_now
from core.config import GameConfig
from core.errors import ServiceError
from core.redis import get_redis, run_sync
from games import periods, selectors, services
from tests.conftest import clock_at

pytestmark = pytest.mark.django_db


def submit(config: GameConfig, player_id: str, score: int, now: dt.datetime | None = None) -> None:
    with clock_at(now):
        run_sync(lambda: services.score_submit(game=config, board=config.boards[0], player_id=player_id, score=score))


def board(config: GameConfig, period: str = "daily") -> list[tuple[int, str, int]]:
    page = run_sync(lambda: selectors.leaderboard_page(board=config.boards[0], period=period))
    return [(e.rank, e.player_id, e.score) for e in page.entries]


def test_it_hides_a_player_everywhere_and_restores_them_exactly(make_game):
    game = make_game("tetris", max_submissions_per_minute=0)
    config = GameConfig.from_model(game, "0")
    for player, score in (("a", 10), ("b", 30), ("c", 20)):
        submit(config, player, score)
    services.player_set_hidden(game=game, player_id="b", hidden=True)
    assert board(config) == [(1, "c", 20), (2, "a", 10)]
    assert board(config, "all-time") == [(1, "c", 20), (2, "a", 10)]
    with pytest.raises(ServiceError):
        submit(config, "b", 99)
    services.player_set_hidden(game=game, player_id="b", hidden=False)
    assert board(config) == [(1, "b", 30), (2, "c", 20), (3, "a", 10)]
    submit(config, "b", 40)
    assert board(config)[0] == (1, "b", 40)


def test_it_keeps_the_board_when_the_only_player_comes_back(make_game):
    game = make_game("tetris", max_submissions_per_minute=0)
    config = GameConfig.from_model(game, "0")
    submit(config, "solo", 5)
    daily = periods.current("daily", "UTC", clock_now())
    board_key = keys.board("tetris.main", "daily", daily.id)
    services.player_set_hidden(game=game, player_id="solo", hidden=True)
    assert not run_sync(lambda: get_redis().exists(board_key))
    # Boards (and so their stashes) have no expiry until their period is archived.
    assert run_sync(lambda: get_redis().pttl(keys.hidden_stash(board_key))) == -1
    services.player_set_hidden(game=game, player_id="solo", hidden=False)
    assert run_sync(lambda: get_redis().exists(board_key))
    assert not run_sync(lambda: get_redis().exists(keys.hidden_stash(board_key)))
    assert board(config) == [(1, "solo", 5)]
