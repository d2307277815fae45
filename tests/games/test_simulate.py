from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from core.config import GameConfig
from core.models import ApiKey
from core.redis import run_sync
from games import selectors
from tests.live_server import asgi_live_server  # noqa: F401 - a fixture

pytestmark = pytest.mark.django_db(transaction=True)


def test_it_posts_through_the_http_api_and_revokes_its_key(asgi_live_server, make_game):  # noqa: F811
    game = make_game("demo", max_submissions_per_minute=0)
    call_command("simulate", "demo", "--url", asgi_live_server, "--rate", "40", "--duration", "1.5")
    board = run_sync(lambda: selectors.leaderboard_page(game=GameConfig.from_model(game, "0"), period="all-time"))
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
