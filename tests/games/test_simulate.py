from __future__ import annotations

import random

import pytest
from django.core.management import CommandError, call_command

from core import clock
from core.config import GameConfig
from core.models import ApiKey
from core.redis import run_sync
from games import selectors, services
from games.management.commands import simulate
from presence import selectors as presence_selectors
from tests.live_server import asgi_live_server  # noqa: F401 - a fixture

pytestmark = pytest.mark.django_db(transaction=True)


def test_it_posts_through_the_http_api_and_revokes_its_key(asgi_live_server, make_game):  # noqa: F811
    game = make_game("demo", max_submissions_per_minute=0)
    call_command("simulate", "demo", "--url", asgi_live_server, "--rate", "40", "--duration", "1.5")
    config_ = GameConfig.from_model(game, "0")
    board = run_sync(lambda: selectors.leaderboard_page(board=config_.boards[0], period="all-time"))
    assert board.total > 0
    keys = ApiKey.objects.filter(game=game, name="simulator")
    assert keys.count() == 1
    assert keys.get().revoked_at is not None


@pytest.mark.parametrize(
    ("args", "message"),
    [(["nope"], "No game 'nope'"), (["demo", "--rate", "0"], "--rate"), (["demo", "--url", "ftp://x"], "--url")],
)
def test_it_refuses_bad_arguments(make_game, args, message):
    make_game("demo")
    with pytest.raises(CommandError, match=message):
        call_command("simulate", *args)


def test_it_plays_sessions_that_start_and_end():
    players = [f"p{i}" for i in range(100)]
    sessions = simulate.Sessions(players, random.Random(7))
    assert len(sessions.playing) == simulate.SESSION_PLAYERS
    seen_leaving: list[str] = []
    now = 0.0
    for _ in range(200):
        now += 5
        before = list(sessions.playing)
        left = sessions.turn_over(now)
        assert len(left) <= 1
        assert len(sessions.playing) == simulate.SESSION_PLAYERS == len(set(sessions.playing))
        if left:
            assert left[0] in before and left[0] not in sessions.playing
            seen_leaving += left
        assert sessions.pick() in sessions.playing
    # Over 1,000 s, sessions end about every SESSION_CHANGE_MEAN_SECS.
    assert 40 <= len(seen_leaving) <= 150


def test_it_shows_only_the_players_in_a_session_online(asgi_live_server, make_game):  # noqa: F811
    game = make_game("demo", max_submissions_per_minute=0)
    config = GameConfig.from_model(game, "0")
    run_sync(
        lambda: services.score_import(
            game=config,
            board=config.boards[0],
            items=[services.Submission(f"p{i}", i, None, leaderboard="main") for i in range(80)],
            at=clock.now(),
        )
    )
    assert run_sync(lambda: presence_selectors.presence_page(game=config, limit=1)).online == 0

    call_command("simulate", "demo", "--url", asgi_live_server, "--rate", "60", "--duration", "1.5")

    online = run_sync(lambda: presence_selectors.presence_page(game=config, limit=100)).online
    assert 0 < online <= simulate.SESSION_PLAYERS
