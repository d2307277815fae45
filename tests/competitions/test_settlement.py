"""Settlement (issue 22): a competing period's close job settles it once, in the transaction of its
archive: ranks within each cohort, a league's moves, rewards, their events; the preview says the
same beforehand; a review buffer delays it and what moderation does in it counts; a season's
competition ends when a manage key says."""

from __future__ import annotations

import datetime as dt
import json
import threading
from typing import Any

import pytest
from django.db import connection, transaction
from django.test import Client

from archive import services as archive_services
from competitions.models import Grant, LeagueStanding, SettledEntry, Settlement
from competitions.services.settlement import period_settle
from core import apikeys, keys
from core import services as core_services
from core.config import BoardConfig
from core.models import ApiKey, AuditEntry, Event, Game
from core.redis import get_redis, run_sync
from games import periods
from games.services import hiding
from tests.conftest import auth, clock_at

pytestmark = pytest.mark.django_db(transaction=True)

API = "/api/v1/games/lg/leaderboards"
MONDAY = dt.datetime(2026, 3, 2, 0, 0, tzinfo=dt.UTC)  # the week 2026-W10 begins
WEEK, NEXT_MONDAY = "2026-W10", MONDAY + dt.timedelta(days=7)
GRACE = dt.timedelta(seconds=121)  # past ARCHIVE_GRACE_SECS: the close job is due
LADDER = [
    {"slug": "bronze", "name": "Bronze", "promote": "1"},
    {"slug": "silver", "name": "Silver", "promote": "1", "demote": "1"},
    {"slug": "gold", "name": "Gold", "demote": "1"},
]
LEAGUE: dict[str, Any] = {
    "name": "League",
    "mode": "best",
    "order": "desc",
    "windows": ["weekly"],
    "entry": "join",
    "cohort_size": 3,
    "cohort_by": "tier",
    "tiers": LADDER,
    "start_tier": "silver",
    "rewards": [{"from_rank": 1, "reward": {"coins": 100}}],
}

# A weekly cup without a league: cohorts of 3, the winner of each rewarded.
PLAIN = {**LEAGUE, "tiers": [], "cohort_by": "none", "start_tier": ""}


@pytest.fixture
def lg() -> tuple[Game, str, str]:
    game = core_services.game_create(slug="lg", name="League game", max_submissions_per_minute=0)
    _, manage = apikeys.api_key_create(game=game, name="ops", scope=ApiKey.Scope.MANAGE)
    _, submit = apikeys.api_key_create(game=game, name="server")
    return game, manage, submit


def send(method: str, path: str, key: str | None = None, body: Any = None) -> tuple[int, Any]:
    response = getattr(Client(), method)(
        f"{API}{path}",
        json.dumps(body) if body is not None else None,
        content_type="application/json",
        headers=auth(key) if key else {},
    )
    return response.status_code, response.json()


def ok(method: str, path: str, key: str | None = None, body: Any = None) -> Any:
    status, answer = send(method, path, key, body)
    assert status in (200, 201), answer
    return answer


def play(submit: str, board: str, scores: dict[str, int | None]) -> None:
    for player, score in scores.items():
        ok("post", f"/{board}/entries", submit, {"player_id": player})
        if score is not None:
            ok("post", f"/{board}/scores", submit, {"player_id": player, "score": score})


def outcomes(answer: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (e["player_id"], e["cohort"], e["rank"], e["score"], e["tier"], e["move"], e["tier_after"], e["reward"])
        for e in answer["entries"]
    ]


def event_types(game: Game) -> list[str]:
    return sorted(Event.objects.filter(data__game=game.slug).values_list("type", flat=True))


def close_jobs_at(moment: dt.datetime) -> int:
    with clock_at(moment):
        return archive_services.close_jobs_run()


EXPECTED = [
    # silver-1: p1 wins and goes up with the reward; p3, last, goes down.
    ("p1", "silver-1", 1, 30, "silver", 1, "gold", {"coins": 100}),
    ("p2", "silver-1", 2, 20, "silver", 0, "silver", None),
    ("p3", "silver-1", 3, 10, "silver", -1, "bronze", None),
    # silver-2: p6 never scored: ranked last, and down.
    ("p5", "silver-2", 1, 50, "silver", 1, "gold", {"coins": 100}),
    ("p4", "silver-2", 2, 5, "silver", 0, "silver", None),
    ("p6", "silver-2", None, None, "silver", -1, "bronze", None),
]


def test_it_settles_a_league_week_once_with_its_moves_rewards_and_events(lg):
    game, manage, submit = lg
    with clock_at(MONDAY + dt.timedelta(hours=1)):
        ok("put", "/league", manage, LEAGUE)
        play(submit, "league", {"p1": 30, "p2": 20, "p3": 10, "p4": 5, "p5": 50, "p6": None})
        preview = ok("get", "/league/weekly/settlement/preview")
    assert (preview["preview"], preview["settled_at"], preview["entrants"], preview["cohorts"]) == (True, None, 6, 2)
    assert outcomes(preview) == EXPECTED
    with clock_at(MONDAY + dt.timedelta(hours=2)):
        status, answer = send("get", f"/league/weekly/{WEEK}/settlement")
        assert (status, answer["error"]["code"]) == (404, "not_settled")

    assert close_jobs_at(NEXT_MONDAY + GRACE) == 1
    with clock_at(NEXT_MONDAY + GRACE):
        settled = ok("get", f"/league/weekly/{WEEK}/settlement")
        assert outcomes(settled) == EXPECTED
        assert (settled["promoted"], settled["demoted"], settled["granted"]) == (2, 2, 2)
        assert outcomes(ok("get", f"/league/weekly/{WEEK}/settlement?cohort=silver-2&limit=1")) == EXPECTED[3:4]

    # The movers' tiers now; p2 and p4 stayed in the start tier, which their entries say.
    assert sorted(LeagueStanding.objects.values_list("player_id", "tier")) == [
        ("p1", "gold"),
        ("p3", "bronze"),
        ("p5", "gold"),
        ("p6", "bronze"),
    ]
    with clock_at(NEXT_MONDAY + GRACE):
        stayed = ok("get", "/league/players/p2/league")
        moved_up = ok("get", "/league/players/p1/league")
    assert (stayed["tier"]["slug"], stayed["since_period_id"], stayed["history_total"]) == ("silver", WEEK, 1)
    assert stayed["history"][0] | {"at": None} == {
        "period_id": WEEK,
        "from_tier": "silver",
        "to_tier": "silver",
        "move": 0,
        "cohort": "silver-1",
        "rank": 2,
        "at": None,
    }
    assert (moved_up["tier"]["slug"], moved_up["since_period_id"]) == ("gold", WEEK)
    assert [(h["from_tier"], h["to_tier"], h["move"], h["rank"]) for h in moved_up["history"]] == [
        ("silver", "gold", 1, 1)
    ]
    assert sorted(Grant.objects.values_list("player_id", "rank", "cohort", "status")) == [
        ("p1", 1, "silver-1", "pending"),
        ("p5", 1, "silver-2", "pending"),
    ]
    assert event_types(game).count("period.settled") == 1
    assert event_types(game).count("tier.changed") == 4 and event_types(game).count("reward.granted") == 2
    tiers = run_sync(lambda: get_redis().hgetall(keys.league_tiers("lg.league")))
    # The movers' new tiers; a player Redis has none for joins in the start tier (p2, p4).
    assert tiers == {"p1": "gold", "p3": "bronze", "p5": "gold", "p6": "bronze"}

    # Nothing twice: the archive again, the close jobs again.
    with clock_at(NEXT_MONDAY + GRACE):
        archive_services.period_archive(board=game.leaderboards.get(), period="weekly", period_id=WEEK)
    close_jobs_at(NEXT_MONDAY + 2 * GRACE)
    assert (Settlement.objects.count(), SettledEntry.objects.count(), LeagueStanding.objects.count()) == (1, 6, 4)
    assert event_types(game).count("period.settled") == 1

    # The next week's cohorts are formed within the new tiers.
    with clock_at(NEXT_MONDAY + dt.timedelta(hours=1)):
        assert ok("post", "/league/entries", submit, {"player_id": "p1"})["cohort"] == "gold-1"
        assert ok("post", "/league/entries", submit, {"player_id": "p3"})["cohort"] == "bronze-1"
        assert ok("post", "/league/entries", submit, {"player_id": "p2"})["tier"] == "silver"
        assert ok("post", "/league/entries", submit, {"player_id": "new"})["tier"] == "silver"


def test_it_waits_out_the_review_buffer_and_settles_what_moderation_left(lg):
    game, manage, submit = lg
    with clock_at(MONDAY + dt.timedelta(hours=1)):
        ok("put", "/cup", manage, {**PLAIN, "settle_delay_secs": 3600})
        play(submit, "cup", {"ada": 90, "bob": 50})
        period = ok("get", "/cup")["competition"]["period"]
    assert period["settles_at"] == "2026-03-09T01:00:00.000Z"

    assert close_jobs_at(NEXT_MONDAY + GRACE) == 0  # deferred, not failed
    assert Settlement.objects.count() == 0
    # In the buffer, a moderator hides the winner: the settlement counts it.
    with clock_at(NEXT_MONDAY + dt.timedelta(minutes=10)):
        hiding.player_set_hidden(game=game, player_id="ada", hidden=True, reason="cheated")
    assert close_jobs_at(NEXT_MONDAY + dt.timedelta(hours=1, seconds=1)) == 1
    with clock_at(NEXT_MONDAY + dt.timedelta(hours=1, seconds=2)):
        settled = ok("get", f"/cup/weekly/{WEEK}/settlement")
    assert outcomes(settled) == [
        ("bob", "1", 1, 50, None, 0, None, {"coins": 100}),
        ("ada", "1", None, None, None, 0, None, None),
    ]
    assert list(Grant.objects.values_list("player_id", flat=True)) == ["bob"]


def test_it_ends_a_seasons_competition_when_a_manage_key_says(lg):
    _, manage, submit = lg
    cup = {
        "name": "Spring cup",
        "mode": "best",
        "order": "desc",
        "windows": ["all-time"],
        "starts_at": "2026-03-02T00:00:00Z",
        "ends_at": "2026-06-01T00:00:00Z",
        "entry": "join",
        "max_entrants": 100,
        "max_attempts": 3,
        "rewards": [{"from_rank": 1, "to_rank": 2, "reward": {"badge": "spring"}}],
    }
    with clock_at(MONDAY + dt.timedelta(hours=1)):
        ok("put", "/cup", manage, cup)
        ok("put", "/weekly", manage, PLAIN)
        play(submit, "cup", {"ada": 3, "bob": 2, "cy": 1})
        status, answer = send("post", "/cup/end", submit)
        assert (status, answer["error"]["code"]) == (403, "scope")
        ended = ok("post", "/cup/end", manage)
        assert (ended["ends_at"], ended["open"]) == ("2026-03-02T01:00:00.000Z", False)
        status, answer = send("post", "/cup/scores", submit, {"player_id": "ada", "score": 9})
        assert (status, answer["error"]["code"]) == (409, "board_closed")
        for board in ("cup", "weekly"):
            status, answer = send("post", f"/{board}/end", manage)
            assert (status, answer["error"]["code"]) == (409, "not_endable"), board

    assert close_jobs_at(MONDAY + dt.timedelta(hours=1) + GRACE) == 1
    with clock_at(MONDAY + dt.timedelta(hours=2)):
        settled = ok("get", "/cup/all-time/all-time/settlement")
    assert [(e["player_id"], e["rank"], e["reward"]) for e in settled["entries"]] == [
        ("ada", 1, {"badge": "spring"}),
        ("bob", 2, {"badge": "spring"}),
        ("cy", 3, None),
    ]
    assert AuditEntry.objects.filter(action="end_competition", game_slug="lg").count() == 1


def test_it_answers_settlement_reads_of_boards_that_do_not_compete(lg):
    _, manage, _ = lg
    ok("put", "/plain", manage, {"mode": "best", "order": "desc", "windows": ["weekly"]})
    status, answer = send("get", "/plain/weekly/settlement/preview")
    assert (status, answer["error"]["code"]) == (409, "not_competing")
    ok("put", "/league", manage, LEAGUE)
    status, answer = send("get", "/league/daily/settlement/preview")
    assert (status, answer["error"]["code"]) == (404, "period_not_found")


def test_it_previews_a_balanced_period_as_its_split_would_without_splitting_it(lg):
    _, manage, submit = lg
    with clock_at(MONDAY + dt.timedelta(minutes=10)):
        ok("put", "/cup", manage, {**PLAIN, "cohort_size": 2, "cohort_fill": "balanced"})
        play(submit, "cup", {"ada": 3, "bob": 2, "cy": 1})
        preview = ok("get", "/cup/weekly/settlement/preview")
        # Split as the split would (3 in cohorts of 2: 2 and 1), in join order; the winners rewarded.
        assert [(e["player_id"], e["cohort"], e["rank"], e["reward"]) for e in preview["entries"]] == [
            ("ada", "1", 1, {"coins": 100}),
            ("bob", "1", 2, None),
            ("cy", "2", 1, {"coins": 100}),
        ]
        listed = ok("get", "/cup/weekly/cohorts")
        assert (listed["held"], listed["cohorts"]) == (3, [])  # still held: the preview wrote nothing


def test_it_settles_a_period_once_when_two_settlements_of_it_run_at_once(lg):
    # The second waits for the first on the board's row (PostgreSQL; SQLite writes one
    # transaction at a time), then finds the period settled and writes nothing.
    game, manage, submit = lg
    with clock_at(MONDAY + dt.timedelta(hours=1)):
        ok("put", "/league", manage, LEAGUE)
        play(submit, "league", {"p1": 30, "p2": 20, "p3": 10, "p4": 5, "p5": 50, "p6": None})
    board = game.leaderboards.get()
    board_config = BoardConfig.from_model(board, game)
    week = periods.window_parse(board_config, "weekly", WEEK)
    start = threading.Barrier(2)
    settled: list[int] = []

    def settle() -> None:
        try:
            start.wait()
            with transaction.atomic():
                settlement = period_settle(board=board, config=board_config, period=week, now=NEXT_MONDAY + GRACE)
            assert settlement is not None
            settled.append(settlement.pk)
        finally:
            connection.close()

    threads = [threading.Thread(target=settle) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(settled) == 2 and settled[0] == settled[1]
    assert (Settlement.objects.count(), SettledEntry.objects.count(), LeagueStanding.objects.count()) == (1, 6, 4)
    assert event_types(game).count("tier.changed") == 4 and event_types(game).count("period.settled") == 1
