"""Rewards and leagues over the API (issue 22), as a game server meets them: a player's rewards
with their status now, a claim answered alike however often it is sent, 410 once the window has
passed, nothing of another game's, a league's tier and history; every refusal clear, in the
error envelope, and changing nothing."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from competitions.models import Grant
from competitions.services.league import TierMoveSpec
from competitions.services.rewards import GrantSpec
from core.models import Event
from games.services import hiding
from tests.competitions.settled import CLAIM_WINDOW, LAST_WEEK, WEEK, competing_game, granted, moved, settled
from tests.conftest import T0, auth, clock_at

pytestmark = pytest.mark.django_db(transaction=True)

API = "/api/v1/games"


@pytest.fixture
async def cup() -> dict[str, Any]:
    """Game 'cup' with its weekly board, ada rewarded last week and this week, bob this week;
    and game 'rival' with a key of its own."""
    game, board, key = await sync_to_async(competing_game)()
    _, _, rival_key = await sync_to_async(competing_game)("rival")
    await sync_to_async(granted)(board, GrantSpec("ada", 2, {"coins": 50}), period_id=LAST_WEEK, now=T0)
    later = T0 + dt.timedelta(hours=1)
    await sync_to_async(granted)(
        board, GrantSpec("ada", 1, {"coins": 500}), GrantSpec("bob", 2, {"coins": 5}), now=later
    )
    ids = {(g.player_id, g.period_id): g.grant_id async for g in Grant.objects.all()}
    return {"game": game, "board": board, "key": key, "rival_key": rival_key, "ids": ids}


async def get(client: AsyncClient, path: str, key: str | None = None) -> tuple[int, Any]:
    response = await client.get(f"{API}{path}", headers=auth(key) if key else {})
    return response.status_code, response.json()


async def post(client: AsyncClient, path: str, key: str | None = None, body: str | None = None) -> tuple[int, Any]:
    response = await client.post(
        f"{API}{path}", body, content_type="application/json", headers=auth(key) if key else {}
    )
    return response.status_code, response.json()


def error(answer: tuple[int, Any]) -> tuple[int, str, str | None]:
    status, body = answer
    return status, body["error"]["code"], body["error"]["field"]


async def state() -> list[tuple[str, str, str, dt.datetime | None]]:
    grants = [(g.player_id, g.period_id, g.status, g.claimed_at) async for g in Grant.objects.order_by("id")]
    return [*grants, ("events", str(await Event.objects.acount()), "", None)]


async def test_it_lists_a_players_rewards_newest_first_with_their_status_now(aclient, cup) -> None:
    status, body = await get(aclient, "/cup/players/ada/rewards", cup["key"])

    assert status == 200
    assert (body["player_id"], body["total"]) == ("ada", 2)
    assert [(r["period_id"], r["reward"], r["status"]) for r in body["rewards"]] == [
        (WEEK, {"coins": 500}, "pending"),
        (LAST_WEEK, {"coins": 50}, "pending"),
    ]
    assert body["rewards"][0] == {
        "grant_id": cup["ids"][("ada", WEEK)],
        "leaderboard": "weekly",
        "window": "weekly",
        "period_id": WEEK,
        "player_id": "ada",
        "cohort": None,
        "tier": None,
        "rank": 1,
        "reward": {"coins": 500},
        "status": "pending",
        "granted_at": "2026-03-04T13:00:00.000Z",
        "expires_at": "2026-04-03T13:00:00.000Z",
        "claimed_at": None,
    }
    assert await get(aclient, "/cup/players/zed/rewards", cup["key"]) == (
        200,
        {"player_id": "zed", "total": 0, "rewards": []},
    )


async def test_it_filters_a_players_rewards_by_the_status_they_show_now(aclient, cup) -> None:
    await post(aclient, f"/cup/rewards/{cup['ids'][('ada', WEEK)]}/claim", cup["key"])

    async def listed(status: str) -> list[tuple[str, str]]:
        answer, body = await get(aclient, f"/cup/players/ada/rewards?status={status}", cup["key"])
        assert answer == 200 and body["total"] == len(body["rewards"])
        return [(r["period_id"], r["status"]) for r in body["rewards"]]

    assert await listed("pending") == [(LAST_WEEK, "pending")]
    assert await listed("claimed") == [(WEEK, "claimed")]
    assert await listed("expired") == []
    # Last week's reward's window ends an hour before this week's: expired by time, not yet swept.
    with clock_at(T0 + CLAIM_WINDOW):
        assert await listed("pending") == []
        assert await listed("expired") == [(LAST_WEEK, "expired")]
        assert await listed("claimed") == [(WEEK, "claimed")]
    assert (await Grant.objects.aget(period_id=LAST_WEEK)).status == "pending"


async def test_it_pages_a_players_rewards(aclient, cup) -> None:
    first = await get(aclient, "/cup/players/ada/rewards?limit=1", cup["key"])
    second = await get(aclient, "/cup/players/ada/rewards?limit=1&offset=1", cup["key"])
    past = await get(aclient, "/cup/players/ada/rewards?offset=2", cup["key"])

    assert [r["period_id"] for r in first[1]["rewards"]] == [WEEK]
    assert [r["period_id"] for r in second[1]["rewards"]] == [LAST_WEEK]
    assert (first[1]["total"], second[1]["total"], past[1]) == (2, 2, {"player_id": "ada", "total": 2, "rewards": []})


async def test_it_claims_a_reward_and_answers_every_repeat_alike(aclient, cup) -> None:
    grant_id = cup["ids"][("ada", WEEK)]
    with clock_at(T0 + dt.timedelta(days=2)):
        status, claimed = await post(aclient, f"/cup/rewards/{grant_id}/claim", cup["key"])
    with clock_at(T0 + dt.timedelta(days=3)):
        again = await post(aclient, f"/cup/rewards/{grant_id}/claim", cup["key"])

    assert status == 200
    assert (claimed["grant_id"], claimed["status"], claimed["claimed_at"]) == (
        grant_id,
        "claimed",
        "2026-03-06T12:00:00.000Z",
    )
    assert again == (200, claimed)
    assert await Event.objects.filter(type="reward.claimed").acount() == 1


async def test_it_refuses_a_claim_once_the_window_has_passed_and_changes_nothing(aclient, cup) -> None:
    grant_id = cup["ids"][("ada", LAST_WEEK)]
    before = await state()
    with clock_at(T0 + CLAIM_WINDOW):
        answer = await post(aclient, f"/cup/rewards/{grant_id}/claim", cup["key"])

    assert error(answer) == (410, "reward_expired", "grant_id")
    assert "2026-04-03T12:00:00.000Z" in answer[1]["error"]["message"]
    assert await state() == before


async def test_it_shows_nothing_of_another_games_rewards_to_its_key(aclient, cup) -> None:
    grant_id = cup["ids"][("ada", WEEK)]
    before = await state()

    # Through its own game: no such reward there. Through this game: not its key.
    assert error(await post(aclient, f"/rival/rewards/{grant_id}/claim", cup["rival_key"])) == (
        404,
        "reward_not_found",
        "grant_id",
    )
    assert (await get(aclient, "/rival/players/ada/rewards", cup["rival_key"]))[1]["total"] == 0
    assert error(await post(aclient, f"/cup/rewards/{grant_id}/claim", cup["rival_key"]))[:2] == (403, "wrong_game")
    assert error(await get(aclient, "/cup/players/ada/rewards", cup["rival_key"]))[:2] == (403, "wrong_game")
    assert error(await get(aclient, "/cup/players/ada/rewards"))[:2] == (401, "missing_api_key")
    assert error(await post(aclient, f"/cup/rewards/{grant_id}/claim"))[:2] == (401, "missing_api_key")
    assert await state() == before


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("/cup/rewards/nope/claim", "grant_id"),
        ("/cup/rewards/grant_short/claim", "grant_id"),
        ("/cup/rewards/grant_AAAAAAAAAAAAAAAAAAAAAA%20/claim", "grant_id"),
        ("/cup/players/ada/rewards?status=won", "status"),
        ("/cup/players/ada/rewards?status=", "status"),
        ("/cup/players/ada/rewards?limit=0", "limit"),
        ("/cup/players/ada/rewards?limit=101", "limit"),
        ("/cup/players/ada/rewards?offset=-1", "offset"),
        ("/cup/players/bad%20id!/rewards", "player_id"),
    ],
)
async def test_it_refuses_bad_inputs_naming_them_and_changes_nothing(aclient, cup, path: str, field: str) -> None:
    before = await state()
    if path.endswith("/claim"):
        answer = await post(aclient, path, cup["key"])
    else:
        answer = await get(aclient, path, cup["key"])
    assert error(answer) == (422, "invalid", field)
    assert await state() == before


async def test_it_answers_a_claim_of_an_unknown_reward_with_404(aclient, cup) -> None:
    answer = await post(aclient, "/cup/rewards/grant_" + "x" * 22 + "/claim", cup["key"])
    assert error(answer) == (404, "reward_not_found", "grant_id")


async def test_it_reads_a_players_league_with_their_moves_newest_first(aclient) -> None:
    _, board, _ = await sync_to_async(competing_game)(board="league")
    stayed = TierMoveSpec("ada", "silver", "silver", 0, "silver-1", 4)
    await sync_to_async(settled)(board, stayed, period_id=LAST_WEEK)
    with clock_at(T0 + dt.timedelta(days=7)):
        await sync_to_async(settled)(board, TierMoveSpec("ada", "silver", "gold", 1, "silver-2", 1))

    status, body = await get(aclient, "/cup/leaderboards/league/players/ada/league")

    assert status == 200
    assert body == {
        "leaderboard": "league",
        "player_id": "ada",
        "tier": {"slug": "gold", "name": "Gold"},
        "since_period_id": WEEK,
        "tiers": [
            {"slug": "bronze", "name": "Bronze"},
            {"slug": "silver", "name": "Silver"},
            {"slug": "gold", "name": "Gold"},
        ],
        "history_total": 2,
        "history": [
            {
                "period_id": WEEK,
                "from_tier": "silver",
                "to_tier": "gold",
                "move": 1,
                "cohort": "silver-2",
                "rank": 1,
                "at": "2026-03-11T12:00:00.000Z",
            },
            {
                "period_id": LAST_WEEK,
                "from_tier": "silver",
                "to_tier": "silver",
                "move": 0,
                "cohort": "silver-1",
                "rank": 4,
                "at": "2026-03-04T12:00:00.000Z",
            },
        ],
    }
    paged = await get(aclient, "/cup/leaderboards/league/players/ada/league?limit=1&offset=1")
    assert [h["period_id"] for h in paged[1]["history"]] == [LAST_WEEK] and paged[1]["history_total"] == 2


async def test_it_puts_a_player_no_settlement_placed_in_the_start_tier(aclient) -> None:
    await sync_to_async(competing_game)(board="league")
    status, body = await get(aclient, "/cup/leaderboards/league/players/newcomer/league")
    assert status == 200
    assert (body["tier"], body["since_period_id"], body["history_total"], body["history"]) == (
        {"slug": "silver", "name": "Silver"},
        None,
        0,
        [],
    )


async def test_it_refuses_a_league_read_of_a_board_without_tiers_with_409(aclient, cup) -> None:
    assert error(await get(aclient, "/cup/leaderboards/weekly/players/ada/league")) == (
        409,
        "not_a_league",
        "leaderboard",
    )
    assert error(await get(aclient, "/cup/leaderboards/nope/players/ada/league"))[:2] == (404, "board_not_found")
    assert error(await get(aclient, "/nope/leaderboards/weekly/players/ada/league"))[:2] == (404, "game_not_found")
    assert error(await get(aclient, "/cup/leaderboards/weekly/players/bad%20id!/league")) == (
        422,
        "invalid",
        "player_id",
    )
    assert error(await get(aclient, "/cup/leaderboards/weekly/players/ada/league?limit=0")) == (422, "invalid", "limit")


async def test_it_hides_a_hidden_players_league_as_their_standings(aclient) -> None:
    game, board, _ = await sync_to_async(competing_game)(board="league")
    await sync_to_async(moved)(board, WEEK, [TierMoveSpec("ada", "silver", "gold", 1)])
    await sync_to_async(hiding.player_set_hidden)(game=game, player_id="ada", hidden=True)

    assert error(await get(aclient, "/cup/leaderboards/league/players/ada/league"))[:2] == (404, "not_found")


async def test_it_reads_a_league_of_a_player_whose_id_is_players(aclient) -> None:
    # '/leaderboards/{board}/players/players/league' could pass for a period read's path.
    _, board, _ = await sync_to_async(competing_game)(board="league")
    await sync_to_async(moved)(board, WEEK, [TierMoveSpec("players", "silver", "bronze", -1)])
    status, body = await get(aclient, "/cup/leaderboards/league/players/players/league")
    assert (status, body["tier"]["slug"]) == (200, "bronze")
