"""score_correct: an admin's correction, applied to the current boards and recorded in the ledger."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.conf import settings
from django.contrib.auth.models import Permission, User
from django.urls import reverse

from archive import ledger
from archive.models import ScoreEvent
from core import keys
from core import redis as site_redis
from core.clock import now as clock_now
from core.config import GameConfig
from core.errors import ServiceError
from core.models import MAX_SAFE_SCORE, Game
from core.redis import get_redis, run_sync
from games import periods, services
from tests import redis_replies
from tests.conftest import clock_at

pytestmark = pytest.mark.django_db

NOW = dt.datetime(2026, 11, 22, 12, 0, tzinfo=dt.UTC)


def config_of(game: Game) -> GameConfig:
    game.refresh_from_db()
    return GameConfig.from_model(game, "0")


def submit(game: Game, player_id: str, score: int, now: dt.datetime = NOW, name: str | None = None) -> None:
    config = config_of(game)
    with clock_at(now):
        run_sync(
            lambda: services.score_submit(
                game=config, board=config.boards[0], player_id=player_id, score=score, display_name=name
            )
        )


def score(game: Game, player_id: str, period: str = "daily", now: dt.datetime = NOW) -> int | None:
    config = config_of(game)
    current = periods.current(period, config.timezone, now)
    raw = run_sync(
        lambda: get_redis().zscore(keys.board(keys.board_ref(game.slug, "main"), current.kind, current.id), player_id)
    )
    return None if raw is None else config.boards[0].score_from_base(int(raw))


def stream(slug: str = "tetris") -> list[tuple[str, dict[str, str]]]:
    return run_sync(lambda: redis_replies.entries(keys.ledger(keys.board_ref(slug, "main"))))


def boards(game: Game) -> dict[str, list[tuple[str, float]]]:
    config = config_of(game)
    found = {}
    for kind in config.boards[0].windows:
        p = periods.current(kind, config.timezone, NOW)
        key = keys.board(keys.board_ref(game.slug, "main"), p.kind, p.id)
        found[key] = run_sync(lambda key=key: redis_replies.scored(key))
    return found


@pytest.mark.parametrize("order", ["desc", "asc"])
def test_it_adds_a_signed_amount_in_increment_games(make_game, order):
    game = make_game("tetris", mode="increment", order=order, max_submissions_per_minute=0)
    submit(game, "a", 10)
    submit(game, "b", 8)
    with clock_at(NOW):
        corrected = ledger.score_correct(
            board=game.leaderboards.first(), player_id="a", value=-3, reason="double-counted level"
        )
    for kind in periods.PERIODS:
        assert score(game, "a", kind) == 7
        assert corrected.periods[kind].score == 7
    # Higher is better: b (8) passes a (7); lower is better: a stays ahead.
    assert corrected.periods["daily"].rank == (2 if order == "desc" else 1)
    with clock_at(NOW):
        ledger.score_correct(board=game.leaderboards.first(), player_id="a", value=5)
    assert score(game, "a", "all-time") == 12


def test_it_sets_the_score_in_best_games_even_below_the_best(make_game):
    game = make_game("tetris", mode="best", max_submissions_per_minute=0)
    submit(game, "a", 50)
    with clock_at(NOW):
        ledger.score_correct(board=game.leaderboards.first(), player_id="a", value=20)
    assert score(game, "a") == 20
    assert score(game, "a", "all-time") == 20
    # Later submissions compete with the corrected score.
    submit(game, "a", 30)
    assert score(game, "a") == 30
    submit(game, "a", 25)
    assert score(game, "a") == 30


def test_it_sets_the_score_in_latest_games(make_game):
    game = make_game("tetris", mode="latest", order="asc", max_submissions_per_minute=0)
    submit(game, "a", 50)
    with clock_at(NOW):
        ledger.score_correct(board=GameConfig.from_model(game, "0").boards[0], player_id="a", value=70)
    assert score(game, "a") == 70


def test_it_appends_a_correction_to_the_ledger_and_marks_the_boards(make_game):
    game = make_game("tetris", mode="increment", max_submissions_per_minute=0, timezone_name="Europe/Paris")
    submit(game, "a", 10, name="Ann")
    run_sync(lambda: get_redis().delete(keys.dirty("tetris.main")))
    later = NOW + dt.timedelta(minutes=5)
    with clock_at(later):
        ledger.score_correct(board=game.leaderboards.first(), player_id="a", value=-4, reason="cheat")
    event_id, fields = stream()[-1]
    assert fields == {
        "k": "correction",
        "p": "a",
        "v": "-4",
        "n": "",
        "m": "increment",
        "t": str(int(later.timestamp() * 1000)),
        "r": "cheat",
    }
    dirty = run_sync(lambda: get_redis().zrange(keys.dirty("tetris.main"), 0, -1))
    assert sorted(dirty) == sorted(boards(game))
    # The name stays as submitted.
    assert run_sync(lambda: get_redis().hget(keys.names("tetris"), "a")) == "Ann"
    ledger.ledger_drain()
    event = ScoreEvent.objects.get(event_id=event_id)
    assert (event.kind, event.player_id, event.value, event.reason, event.at) == ("correction", "a", -4, "cheat", later)


def test_it_schedules_the_close_job_of_a_board_it_starts(make_game):
    game = make_game("tetris", mode="increment", max_submissions_per_minute=0)
    submit(game, "a", 10)
    tomorrow = NOW + dt.timedelta(days=1)
    with clock_at(tomorrow):
        ledger.score_correct(board=game.leaderboards.first(), player_id="a", value=2)
    assert score(game, "a", now=tomorrow) == 2
    daily = periods.current("daily", "UTC", tomorrow)
    assert daily.ends_at_ms is not None
    due = run_sync(lambda: get_redis().zscore(keys.close_jobs("tetris.main"), f"daily:{daily.id}"))
    assert due == daily.ends_at_ms + settings.ARCHIVE_GRACE_SECS * 1000
    index = run_sync(
        lambda: get_redis().zscore(keys.boards_index("tetris.main"), keys.board("tetris.main", "daily", daily.id))
    )
    assert index == float("inf")


@pytest.mark.parametrize(
    ("mode", "player_id", "value", "reason", "status", "code", "field"),
    [
        ("increment", "bad id", 1, "", 422, "invalid", "player_id"),
        ("increment", "a\n", 1, "", 422, "invalid", "player_id"),
        ("increment", "a", 1.5, "", 422, "invalid", "value"),
        ("increment", "a", True, "", 422, "invalid", "value"),
        ("increment", "a", MAX_SAFE_SCORE + 1, "", 422, "invalid", "value"),
        ("increment", "a", 0, "", 422, "invalid", "value"),
        ("increment", "a", 1, "r" * 201, 422, "invalid", "reason"),
        ("increment", "nobody", 1, "", 404, "player_not_found", "player_id"),
        ("increment", "a", MAX_SAFE_SCORE, "", 422, "score_overflow", "value"),
        ("best", "a", 1001, "", 422, "out_of_bounds", "value"),
        ("best", "a", -1, "", 422, "out_of_bounds", "value"),
    ],
)
def test_it_refuses_bad_input_and_changes_nothing(make_game, mode, player_id, value, reason, status, code, field):
    game = make_game("tetris", mode=mode, min_score=0, max_score=1000, max_submissions_per_minute=0)
    submit(game, "a", 10)
    before = (boards(game), stream())
    with pytest.raises(ServiceError) as raised, clock_at(NOW):
        ledger.score_correct(board=game.leaderboards.first(), player_id=player_id, value=value, reason=reason)
    assert (raised.value.status, raised.value.code, raised.value.field) == (status, code, field)
    assert (boards(game), stream()) == before


def test_it_refuses_a_hidden_player(make_game):
    game = make_game("tetris", mode="increment", max_submissions_per_minute=0)
    submit(game, "a", 10)
    with clock_at(NOW):
        services.player_set_hidden(game=game, player_id="a", hidden=True)
    before = stream()
    with pytest.raises(ServiceError) as raised, clock_at(NOW):
        ledger.score_correct(board=game.leaderboards.first(), player_id="a", value=1)
    assert (raised.value.status, raised.value.code) == (403, "player_hidden")
    assert stream() == before
    with clock_at(NOW):
        services.player_set_hidden(game=game, player_id="a", hidden=False)
    with clock_at(NOW):
        ledger.score_correct(board=game.leaderboards.first(), player_id="a", value=1)
    assert score(game, "a") == 11


# --------------------------------------------------------------------------- admin

CORRECT_URL = "admin:archive_scoreevent_correct"


@pytest.fixture
def increment_game(make_game) -> Game:
    game = make_game("tetris", mode="increment", max_submissions_per_minute=0)
    submit(game, "a", 10, now=clock_now())
    return game


def current_score(game: Game, player_id: str = "a") -> int | None:
    return score(game, player_id, now=clock_now())


def test_it_links_the_form_from_the_events_list_and_shows_it(admin_client, increment_game):
    changelist = admin_client.get(reverse("admin:archive_scoreevent_changelist"))
    assert changelist.status_code == 200
    assert reverse(CORRECT_URL) in changelist.content.decode()
    page = admin_client.get(reverse(CORRECT_URL) + f"?leaderboard={increment_game.leaderboards.first().pk}&player_id=a")
    assert page.status_code == 200
    html = page.content.decode()
    assert "Correct a score" in html
    assert 'value="a"' in html


def test_it_lists_events_with_the_player_among_the_first_columns(admin_client, increment_game):
    submit(increment_game, "a", 1, now=clock_now())
    ledger.ledger_drain()
    html = admin_client.get(reverse("admin:archive_scoreevent_changelist")).content.decode()
    columns = re.findall(r'<th scope="col" class="[^"]*column-([a-z_]+)', html)
    assert columns[:4] == ["at", "player_id", "display_name", "value"], columns
    assert "event_id" not in columns


def test_it_applies_a_correction_posted_from_admin(admin_client, increment_game):
    response = admin_client.post(
        reverse(CORRECT_URL),
        {
            "leaderboard": increment_game.leaderboards.first().pk,
            "player_id": "a",
            "value": "-4",
            "reason": "duplicate run",
        },
        follow=True,
    )
    assert response.status_code == 200
    assert response.redirect_chain[0][0].startswith(reverse("admin:archive_scoreevent_changelist"))
    assert "Corrected a in tetris" in response.content.decode()
    assert current_score(increment_game) == 6
    assert stream()[-1][1]["r"] == "duplicate run"


@pytest.mark.parametrize(
    ("form", "message"),
    [
        ({"player_id": "bad id", "value": "1"}, "1-64 characters"),
        ({"player_id": "nobody", "value": "1"}, "No player"),
        ({"player_id": "a", "value": "0"}, "A correction of 0 changes nothing."),
        ({"player_id": "a", "value": "abc"}, "Enter a whole number."),
        ({"player_id": "a", "value": str(MAX_SAFE_SCORE + 1)}, "less than or equal to"),
    ],
)
def test_it_shows_what_is_wrong_with_a_correction_and_changes_nothing(admin_client, increment_game, form, message):
    before = stream()
    response = admin_client.post(
        reverse(CORRECT_URL), {"leaderboard": increment_game.leaderboards.first().pk, "reason": "", **form}
    )
    assert response.status_code == 200
    assert message in response.content.decode()
    assert stream() == before
    assert current_score(increment_game) == 10


def test_it_opens_the_form_for_the_player_of_selected_events(admin_client, increment_game):
    submit(increment_game, "a", 1, now=clock_now())
    submit(increment_game, "b", 1, now=clock_now())
    ledger.ledger_drain()
    changelist = reverse("admin:archive_scoreevent_changelist")
    of_a = [str(pk) for pk in ScoreEvent.objects.filter(player_id="a").values_list("pk", flat=True)]
    response = admin_client.post(changelist, {"action": "correct_player", "_selected_action": of_a})
    assert response.status_code == 302
    assert response.url == reverse(CORRECT_URL) + f"?leaderboard={increment_game.leaderboards.first().pk}&player_id=a"
    every = [str(pk) for pk in ScoreEvent.objects.values_list("pk", flat=True)]
    response = admin_client.post(changelist, {"action": "correct_player", "_selected_action": every}, follow=True)
    assert "Select the events of one player" in response.content.decode()


def test_it_tells_when_redis_is_down(admin_client, increment_game, monkeypatch):
    # A Redis that is not there: a closed loopback port, and no cached client for the bridge loop.
    monkeypatch.setattr(settings, "REDIS_URL", "redis://127.0.0.1:1/0")
    run_sync(site_redis.close_redis)
    try:
        response = admin_client.post(
            reverse(CORRECT_URL),
            {"leaderboard": increment_game.leaderboards.first().pk, "player_id": "a", "value": "1", "reason": ""},
        )
    finally:
        run_sync(site_redis.close_redis)
    assert response.status_code == 200
    assert "Redis is unavailable" in response.content.decode()


def test_it_lets_only_staff_allowed_to_add_events_correct(client, increment_game):
    staff = User.objects.create_user("ops", password="pw", is_staff=True)
    staff.user_permissions.add(Permission.objects.get(codename="view_scoreevent"))
    client.force_login(staff)
    assert client.get(reverse("admin:archive_scoreevent_changelist")).status_code == 200
    assert reverse(CORRECT_URL) not in client.get(reverse("admin:archive_scoreevent_changelist")).content.decode()
    assert client.get(reverse(CORRECT_URL)).status_code == 403
    response = client.post(
        reverse(CORRECT_URL), {"leaderboard": increment_game.leaderboards.first().pk, "player_id": "a", "value": "1"}
    )
    assert response.status_code == 403
    assert current_score(increment_game) == 10
