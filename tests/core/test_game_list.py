"""The game list (core.config.list_games): read again when a config changes, and then only what changed."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from asgiref.sync import async_to_sync

from core import config, keys
from core import services as core_services
from core.models import Game
from core.redis import get_redis, run_sync

pytestmark = pytest.mark.django_db(transaction=True)


def games() -> list[config.GameConfig]:
    return async_to_sync(config.list_games)()


@contextmanager
def elsewhere() -> Iterator[None]:
    """Changes made as another process makes them: this process's caches outlive them (a
    change clears the caches of the process that makes it, not of the others)."""
    caches = config._caches
    try:
        yield
    finally:
        config._caches = caches


def test_it_returns_the_same_list_until_a_config_changes(make_game: Callable[..., Game]) -> None:
    make_game("tetris")
    first = games()

    assert games() is first
    assert [g.slug for g in first] == ["tetris"]


def test_it_reads_again_only_the_board_that_changed(make_game: Callable[..., Game]) -> None:
    tetris = make_game("tetris")
    core_services.leaderboard_create(game=tetris, slug="sprint", windows=["daily"])
    make_game("pong")
    before = {g.slug: g for g in games()}

    with elsewhere():
        board = tetris.leaderboards.get(slug="sprint")
        board.name = "Sprint 40"
        board.save()
    after = {g.slug: g for g in games()}

    assert after["pong"] is before["pong"]
    assert after["tetris"] is not before["tetris"]
    assert [b.name for b in after["tetris"].boards] == ["Tetris", "Sprint 40"]
    assert after["tetris"].boards[0] is before["tetris"].boards[0]
    config.invalidate()
    assert {g.slug: g for g in games()} == after


def test_it_takes_in_new_games_and_boards_and_lets_go_of_those_gone(make_game: Callable[..., Game]) -> None:
    tetris = make_game("tetris")
    core_services.leaderboard_create(game=tetris, slug="sprint", windows=["daily"])
    pong = make_game("pong")
    games()

    with elsewhere():
        make_game("chess")
        core_services.leaderboard_create(game=tetris, slug="ultra", windows=["weekly"])
        tetris.leaderboards.get(slug="sprint").delete()
        pong.active = False
        pong.save()
    found = games()

    assert [(g.slug, [b.slug for b in g.boards]) for g in found] == [("chess", ["main"]), ("tetris", ["main", "ultra"])]
    config.invalidate()
    assert games() == found


def test_it_follows_a_game_whose_slug_changed(make_game: Callable[..., Game]) -> None:
    tetris = make_game("tetris")
    games()

    with elsewhere():
        tetris.slug = "tetris-99"
        tetris.save()

    assert [g.slug for g in games()] == ["tetris-99"]


def test_it_reads_everything_again_when_the_change_log_cannot_say(make_game: Callable[..., Game]) -> None:
    tetris = make_game("tetris")
    first = games()

    with elsewhere():
        tetris.name = "Tetris 99"
        tetris.save()
        run_sync(lambda: get_redis().delete(keys.config_changes()))  # trimmed past this process's list
    found = games()

    assert found is not first
    assert [g.name for g in found] == ["Tetris 99"]


def test_it_orders_games_by_name_then_id(make_game: Callable[..., Game]) -> None:
    for slug, name in [("b", "Beta"), ("a", "alpha"), ("c", "Beta")]:
        make_game(slug, name=name)
    games()

    with elsewhere():
        make_game("d", name="Alpha")

    assert [g.slug for g in games()] == ["d", "b", "c", "a"]
