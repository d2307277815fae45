"""A league's tiers as the settlement moves players (issue 22): each mover's tier now, a
tier.changed event for each real move, and the tiers of many players at once for the next
settlement. A period settles once (its settlement's row): tests/competitions/test_settlement.py."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.db import transaction

from competitions.models import LeagueStanding
from competitions.selectors import league as league_selectors
from competitions.services import league
from competitions.services.league import TierMoveSpec
from core import clock, config, keys
from core.errors import ServiceError
from core.models import Event, Leaderboard
from core.redis import get_redis, run_sync
from tests.competitions.settled import LADDER, LAST_WEEK, WEEK, competing_game, events, moved
from tests.conftest import auth, forget_redis_clients, free_port

pytestmark = pytest.mark.django_db(transaction=True)

UP = TierMoveSpec("ada", "silver", "gold", 1, cohort="silver-1", rank=1)
STAY = TierMoveSpec("bob", "silver", "silver", 0, cohort="silver-1", rank=3)
DOWN = TierMoveSpec("cy", "silver", "bronze", -1, cohort="silver-1", rank=None)


def league_board() -> Leaderboard:
    _, board, _ = competing_game(board="league")
    return board


def tiers(board: Leaderboard) -> dict[str, tuple[str, str]]:
    return {s.player_id: (s.tier, s.since_period_id) for s in LeagueStanding.objects.filter(board=board)}


def test_it_records_the_tier_of_each_player_who_moves_with_an_event_each() -> None:
    board = league_board()

    assert moved(board, WEEK, [UP, STAY, DOWN]) == 2

    # bob stayed: no standing (their settled entry records the period), no event.
    assert tiers(board) == {"ada": ("gold", WEEK), "cy": ("bronze", WEEK)}
    changed = {e["data"]["player_id"]: e["data"] for e in events("tier.changed")}
    assert set(changed) == {"ada", "cy"}
    assert changed["cy"] == {
        "game": "cup",
        "leaderboard": "league",
        "period_id": WEEK,
        "player_id": "cy",
        "from_tier": "silver",
        "to_tier": "bronze",
        "move": -1,
        "cohort": "silver-1",
        "rank": None,
        "changed_at": clock.iso(clock.now()),
    }


def test_it_keeps_when_a_player_reached_their_tier_while_they_stay_in_it() -> None:
    board = league_board()
    moved(board, LAST_WEEK, [TierMoveSpec("ada", "silver", "gold", 1), TierMoveSpec("bob", "silver", "silver", 0)])
    moved(board, WEEK, [TierMoveSpec("ada", "gold", "gold", 0), TierMoveSpec("bob", "silver", "gold", 1)])

    assert tiers(board) == {"ada": ("gold", LAST_WEEK), "bob": ("gold", WEEK)}


def test_it_rolls_back_tier_moves_and_their_events_with_the_settlements_transaction() -> None:
    board = league_board()
    with pytest.raises(RuntimeError, match="settlement failed"), transaction.atomic():
        league.tiers_apply(board=board, period_id=WEEK, moves=[UP, DOWN], now=clock.now())
        raise RuntimeError("settlement failed")
    assert not LeagueStanding.objects.exists() and not Event.objects.exists()


def test_it_refuses_to_apply_moves_outside_the_callers_transaction() -> None:
    board = league_board()
    with pytest.raises(RuntimeError, match="inside the settlement's transaction"):
        league.tiers_apply(board=board, period_id=WEEK, moves=[UP], now=clock.now())


@pytest.mark.parametrize(
    ("move", "problem"),
    [
        (TierMoveSpec("ada", "silver", "platinum", 1), "the tiers are bronze, silver, gold"),
        (TierMoveSpec("ada", "bronze", "gold", 1), "is not"),  # two tiers in one period
        (TierMoveSpec("ada", "silver", "gold", -1), "is not"),
        (TierMoveSpec("ada", "silver", "silver", 1), "is not"),
        (TierMoveSpec("bad id!", "silver", "silver", 0), "not a player id"),
        (TierMoveSpec("ada", "silver", "silver", 0, rank=0), "no rank"),
        (TierMoveSpec("bob", "silver", "silver", 0), "moves twice"),
    ],
)
def test_it_refuses_moves_that_do_not_fit_the_ladder_and_writes_nothing(move: TierMoveSpec, problem: str) -> None:
    board = league_board()
    with pytest.raises(ValueError, match=problem):
        moved(board, WEEK, [STAY, move])
    assert not LeagueStanding.objects.exists() and not Event.objects.exists()


def test_it_refuses_tier_moves_on_a_board_without_tiers() -> None:
    _, board, _ = competing_game()
    with pytest.raises(ServiceError) as refused:
        moved(board, WEEK, [STAY])
    assert (refused.value.status, refused.value.code) == (409, "not_a_league")


def test_it_gives_the_tiers_of_many_players_the_start_tier_for_those_never_placed(monkeypatch) -> None:
    monkeypatch.setattr(league_selectors, "TIERS_OF_CHUNK", 2)  # several queries' worth
    board = league_board()
    moved(board, WEEK, [UP, STAY, DOWN])

    found = league_selectors.tiers_of(board=board, player_ids=["cy", "zed", "ada", "bob", "ada", "new"])

    assert found == {"cy": "bronze", "zed": "silver", "ada": "gold", "bob": "silver", "new": "silver"}
    assert list(found) == ["cy", "zed", "ada", "bob", "new"]


def test_it_starts_a_player_again_in_the_start_tier_when_their_tier_left_the_ladder() -> None:
    board = league_board()
    moved(board, WEEK, [UP, STAY])  # ada to gold, bob stays in silver
    board.tiers = [LADDER[0], LADDER[1], {"slug": "platinum", "name": "Platinum", "demote": "2"}]
    board.save()

    assert league_selectors.tiers_of(board=board, player_ids=["ada", "bob"]) == {"ada": "silver", "bob": "silver"}
    league_read = run_sync(
        lambda: league_selectors.player_league(
            board=config.BoardConfig.from_model(board, board.game), player_id="ada", offset=0, limit=5
        )
    )
    assert (league_read.tier.slug, league_read.since_period_id) == ("silver", None)


def test_it_gives_no_tier_on_a_board_without_tiers() -> None:
    _, board, _ = competing_game()
    assert league_selectors.tiers_of(board=board, player_ids=["ada"]) == {"ada": ""}


def redis_tiers() -> dict[Any, Any]:
    return run_sync(lambda: get_redis().hgetall(keys.league_tiers("cup.league")))


def test_it_copies_the_tiers_to_redis_for_joins_once_the_settlement_commits() -> None:
    board = league_board()
    with pytest.raises(RuntimeError), transaction.atomic():
        league.tiers_apply(board=board, period_id=LAST_WEEK, moves=[UP], now=clock.now())
        raise RuntimeError("settlement failed")
    assert redis_tiers() == {}

    moved(board, WEEK, [UP, STAY, DOWN])

    assert redis_tiers() == {"ada": "gold", "cy": "bronze"}  # bob stays where Redis has him


def test_it_copies_a_boards_tiers_to_redis_again_after_an_outage_missed_them(settings, caplog) -> None:
    board = league_board()
    reachable = settings.REDIS_URL
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"
    forget_redis_clients()
    try:
        assert moved(board, WEEK, [UP, DOWN]) == 2  # the settlement stands: its tiers are in the database
    finally:
        settings.REDIS_URL = reachable
        forget_redis_clients()
    assert "league tiers not copied to Redis" in caplog.text
    assert redis_tiers() == {}

    assert league.league_tiers_copy(board=board) == 2
    assert redis_tiers() == {"ada": "gold", "cy": "bronze"}


async def test_it_places_a_joining_player_in_a_cohort_of_the_tier_the_settlement_gave_them(aclient) -> None:
    _, board, key = await sync_to_async(competing_game)(board="league")
    await sync_to_async(moved)(board, LAST_WEEK, [UP, DOWN])

    joined = {}
    for player in ("ada", "cy", "newcomer"):
        response = await aclient.post(
            "/api/v1/games/cup/leaderboards/league/entries",
            json.dumps({"player_id": player}),
            content_type="application/json",
            headers=auth(key),
        )
        assert response.status_code == 201, response.content
        joined[player] = response.json()["tier"]

    assert joined == {"ada": "gold", "cy": "bronze", "newcomer": "silver"}
