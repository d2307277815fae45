"""The events the archive writes with its facts (docs/events.md): ``period.archived`` exactly once
per period, with the transaction that completes it; ``season.ended`` once the season's last
periods are in; ``board.closed`` when a board is taken out of play; ``score.corrected``. Every
event written is checked against its declaration."""

from __future__ import annotations

from typing import Any

import pytest

from archive import services
from archive.ledger.corrections import score_correct
from core import clock, outbox
from core.models import Event, Game, Leaderboard
from tests.archive.close_helpers import at, submit_all
from tests.conftest import clock_at

pytestmark = pytest.mark.django_db(transaction=True)

DAY = "2026-11-20"
DURING = at("2026-11-20T12:00:00+00:00")
CLOSED = at("2026-11-21T00:02:00+00:00")
SEASON_START = at("2026-11-18T00:00:00+00:00")
SEASON_END = at("2026-11-21T00:00:00+00:00")


def events(event_type: str | None = None) -> list[dict[str, Any]]:
    """Every event written so far (of one type), as handlers receive them, each checked."""
    found = Event.objects.order_by("id")
    if event_type is not None:
        found = found.filter(type=event_type)
    envelopes = [outbox.envelope_of(event) for event in found]
    for envelope in envelopes:
        outbox.envelope_check(envelope)
    return [dict(e) for e in envelopes]


def board_of(game: Game) -> Leaderboard:
    return Leaderboard.objects.select_related("game").get(game=game, slug="main")


@pytest.fixture
def game(make_game: Any) -> Game:
    return make_game("tetris", max_submissions_per_minute=0)


def test_it_announces_a_period_archived_once_with_its_archive(game: Game) -> None:
    submit_all(game, [("ada", 30, "Ada"), ("bob", 20, None)], DURING)
    with clock_at(CLOSED):
        services.period_archive(board=board_of(game), period="daily", period_id=DAY)
        services.period_archive(board=board_of(game), period="daily", period_id=DAY)  # complete: nothing again
    (archived,) = events()
    assert archived["type"] == "period.archived" and archived["version"] == 1
    assert archived["created_at"] == clock.iso(CLOSED)
    assert archived["data"] == {
        "game": "tetris",
        "leaderboard": "main",
        "window": "daily",
        "period_id": DAY,
        "starts_at": "2026-11-20T00:00:00.000Z",
        "ends_at": "2026-11-21T00:00:00.000Z",
        "ended_early": False,
        "entrants": 2,
        "archived_at": "2026-11-21T00:02:00.000Z",
        "standings": f"/api/v1/games/tetris/leaderboards/main/daily/{DAY}",
        # The final top, as the archive holds it (a player without a name shows their id there).
        "top": [
            {"rank": 1, "player_id": "ada", "display_name": "Ada", "score": 30},
            {"rank": 2, "player_id": "bob", "display_name": "bob", "score": 20},
        ],
    }


def test_it_announces_no_snapshot_and_no_archive_that_failed(game: Game) -> None:
    submit_all(game, [("ada", 30, "Ada")], DURING)
    with clock_at(DURING):
        services.period_archive(board=board_of(game), period="daily", period_id=DAY, force=True)

    def crash(index: int) -> None:
        raise RuntimeError("killed")

    with clock_at(CLOSED), pytest.raises(RuntimeError):
        services.period_archive(board=board_of(game), period="daily", period_id=DAY, after_chunk=crash)
    assert events() == []


def test_it_announces_a_board_closed_and_its_periods_archived_early(game: Game) -> None:
    submit_all(game, [("ada", 30, "Ada")], DURING)
    with clock_at(DURING):
        services.leaderboard_deactivate(board=board_of(game))
        services.leaderboard_deactivate(board=board_of(game))  # already closed: nothing again
        services.period_archive(board=board_of(game), period="daily", period_id=DAY)
    closed, archived = events()
    assert closed["type"] == "board.closed"
    assert closed["data"] == {"game": "tetris", "leaderboard": "main", "closed_at": clock.iso(DURING)}
    assert archived["type"] == "period.archived"
    assert (archived["data"]["ended_early"], archived["data"]["entrants"]) == (True, 1)


def test_it_announces_a_season_ended_once_its_last_periods_are_archived(make_game: Any) -> None:
    game = make_game("cup", periods_kept=["daily", "weekly", "all-time"], starts_at=SEASON_START, ends_at=SEASON_END)
    submit_all(game, [("ada", 5, "Ada")], at("2026-11-18T12:00:00+00:00"))
    submit_all(game, [("bob", 7, "Bob"), ("cy", 9, "Cy")], DURING)
    board = board_of(game)
    with clock_at(CLOSED + (SEASON_END - SEASON_START)):  # after every window's last period
        services.period_archive(board=board, period="daily", period_id="2026-11-18")  # not a last period
        services.period_archive(board=board, period="daily", period_id=DAY)
        assert events("season.ended") == []  # the all-time and weekly ones are still to come
        services.period_archive(board=board, period="all-time", period_id="all-time")
        assert events("season.ended") == []
        services.period_archive(board=board, period="weekly", period_id="2026-W47")
    (ended,) = events("season.ended")
    assert ended["data"] == {
        "game": "cup",
        "leaderboard": "main",
        "starts_at": "2026-11-18T00:00:00.000Z",
        "ends_at": "2026-11-21T00:00:00.000Z",
        "periods": [
            {
                "window": "daily",
                "period_id": DAY,
                "entrants": 2,
                "standings": f"/api/v1/games/cup/leaderboards/main/daily/{DAY}",
            },
            {
                "window": "weekly",
                "period_id": "2026-W47",
                "entrants": 3,
                "standings": "/api/v1/games/cup/leaderboards/main/weekly/2026-W47",
            },
            {
                "window": "all-time",
                "period_id": "all-time",
                "entrants": 3,
                "standings": "/api/v1/games/cup/leaderboards/main/all-time/all-time",
            },
        ],
    }
    assert len(events("period.archived")) == 4


def test_it_ends_a_season_whose_last_day_had_no_scores_with_the_windows_that_had(make_game: Any) -> None:
    game = make_game("cup", periods_kept=["daily", "all-time"], starts_at=SEASON_START, ends_at=SEASON_END)
    submit_all(game, [("ada", 5, "Ada")], at("2026-11-18T12:00:00+00:00"))
    with clock_at(CLOSED):
        services.period_archive(board=board_of(game), period="all-time", period_id="all-time")
    (ended,) = events("season.ended")
    assert [p["window"] for p in ended["data"]["periods"]] == ["all-time"]


def test_it_announces_a_score_corrected(make_game: Any) -> None:
    game = make_game("clicker", mode="increment", max_submissions_per_minute=0, periods_kept=["daily", "all-time"])
    submit_all(game, [("ada", 10, "Ada")], DURING)
    with clock_at(DURING):
        score_correct(board=board_of(game), player_id="ada", value=-4, reason="duplicate run")
    (corrected,) = events()
    assert corrected["type"] == "score.corrected"
    assert corrected["data"] == {
        "game": "clicker",
        "leaderboard": "main",
        "player_id": "ada",
        "value": -4,
        "reason": "duplicate run",
        "windows": {
            "daily": {"period_id": DAY, "score": 6, "rank": 1},
            "all-time": {"period_id": "all-time", "score": 6, "rank": 1},
        },
        "corrected_at": clock.iso(DURING),
    }
