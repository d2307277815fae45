"""Tie rules at any range: 'earliest' and 'subscore' on every window, the all-time one
included, with no bounds and no season, for every integer the API accepts; and everything that
moves entries (hiding, erasing, correcting, archiving, the rebuild, the upgrade of boards kept
in the retired format) keeps them exact and in order."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from core import apikeys, keys
from core.config import GameConfig
from core.models import MAX_SAFE_SCORE, Game
from core.redis import get_redis, run_sync
from games import services
from games.services import upgrade
from tests.conftest import auth, clock_at

pytestmark = pytest.mark.django_db(transaction=True)

MAX = MAX_SAFE_SCORE


def config_of(game: Game) -> GameConfig:
    return GameConfig.from_model(game, "0")


async def new_game(make_game: Any, **board: Any) -> tuple[GameConfig, str]:
    board.setdefault("max_submissions_per_minute", 0)
    game = await sync_to_async(make_game)("arcade", **board)
    _, raw = await sync_to_async(apikeys.api_key_create)(game=game, name="server")
    return config_of(game), raw


async def post(client: AsyncClient, raw: str, body: dict[str, Any]) -> dict[str, Any]:
    response = await client.post(
        "/api/v1/games/arcade/leaderboards/main/scores", body, content_type="application/json", headers=auth(raw)
    )
    reply: dict[str, Any] = response.json()
    assert response.status_code == 200, reply
    return reply


async def page(client: AsyncClient, window: str = "all-time") -> list[tuple[str, int, int, Any]]:
    body = (await client.get(f"/api/v1/games/arcade/leaderboards/main/{window}?limit=200")).json()
    return [(e["player_id"], e["score"], e["rank"], e.get("subscore")) for e in body["entries"]]


def later(ms: int) -> Any:
    return clock_at(dt.datetime(2026, 3, 4, 12, 0, tzinfo=dt.UTC) + dt.timedelta(milliseconds=ms))


async def test_it_orders_equal_scores_by_who_reached_them_first_all_time_at_any_size(aclient, make_game):
    """An arcade board: the first to set a record keeps it, all-time, scores in the billions
    and up to the last exact integer, with no bounds and no season."""
    _, raw = await new_game(make_game, mode="best", order="desc", ties="earliest", periods_kept=["all-time", "daily"])
    for ms, player, score in [(0, "late", MAX), (5, "first", 10**12), (9, "second", 10**12), (1, "early", MAX - 1)]:
        with later(ms):
            reply = await post(aclient, raw, {"player_id": player, "score": score})
        assert reply["periods"]["all-time"]["score"] == score
    assert await page(aclient) == [
        ("late", MAX, 1, None),
        ("early", MAX - 1, 2, None),
        ("first", 10**12, 3, None),
        ("second", 10**12, 4, None),
    ]
    # The same score again keeps the moment it was first reached.
    with later(20):
        await post(aclient, raw, {"player_id": "first", "score": 10**12})
    assert (await page(aclient))[2][0] == "first"


async def test_it_ranks_equal_scores_of_one_batch_in_the_order_given(aclient, make_game):
    _, raw = await new_game(make_game, mode="best", order="asc", ties="earliest", periods_kept=["weekly"])
    items = [{"leaderboard": "main", "player_id": p, "score": -MAX} for p in ("z", "a", "m")]
    response = await aclient.post(
        "/api/v1/games/arcade/scores/batch", {"scores": items}, content_type="application/json", headers=auth(raw)
    )
    assert [r["periods"]["weekly"]["rank"] for r in response.json()["results"]] == [1, 2, 3]
    assert [row[:3] for row in await page(aclient, "weekly")] == [("z", -MAX, 1), ("a", -MAX, 2), ("m", -MAX, 3)]


async def test_it_ranks_an_increment_total_by_when_it_reached_it(aclient, make_game):
    _, raw = await new_game(make_game, mode="increment", order="desc", ties="earliest", periods_kept=["all-time"])
    with later(0):
        await post(aclient, raw, {"player_id": "a", "score": 5})
    with later(1):
        await post(aclient, raw, {"player_id": "b", "score": 10})
    with later(2):
        await post(aclient, raw, {"player_id": "a", "score": 5})  # a reaches 10 after b
    with later(3):
        await post(aclient, raw, {"player_id": "b", "score": 0})  # unchanged: b keeps its moment
    assert await page(aclient) == [("b", 10, 1, None), ("a", 10, 2, None)]


async def test_it_orders_equal_scores_by_subscore_then_by_who_reached_the_pair_first(aclient, make_game):
    _, raw = await new_game(
        make_game, mode="best", order="desc", ties="subscore", subscore_order="asc", periods_kept=["all-time", "daily"]
    )
    sends = [("a", 100, 30), ("b", 100, 20), ("c", 100, 20), ("d", 100, None), ("e", 99, -MAX), ("f", 100, MAX)]
    for ms, (player, score, subscore) in enumerate(sends):
        body: dict[str, Any] = {"player_id": player, "score": score}
        if subscore is not None:
            body["subscore"] = subscore
        with later(ms):
            reply = await post(aclient, raw, body)
        assert reply["periods"]["daily"]["subscore"] == (subscore or 0)
    assert await page(aclient) == [
        ("d", 100, 1, 0),
        ("b", 100, 2, 20),
        ("c", 100, 3, 20),
        ("a", 100, 4, 30),
        ("f", 100, 5, MAX),
        ("e", 99, 6, -MAX),
    ]
    # best compares the pair as a whole: a better subscore at the same score is an improvement.
    with later(10):
        reply = await post(aclient, raw, {"player_id": "a", "score": 100, "subscore": 10})
    assert reply["periods"]["all-time"] == {"period_id": "all-time", "score": 100, "rank": 2, "subscore": 10}
    with later(11):
        reply = await post(aclient, raw, {"player_id": "a", "score": 100, "subscore": 15})  # worse: kept
    assert reply["periods"]["all-time"]["subscore"] == 10
    standing = (await aclient.get("/api/v1/games/arcade/leaderboards/main/all-time/players/a")).json()
    assert (standing["rank"], standing["subscore"], standing["percentile"]) == (2, 10, 66.67)


async def test_it_refuses_a_subscore_on_a_board_without_them(aclient, make_game):
    _, raw = await new_game(make_game, mode="best", order="desc")
    response = await aclient.post(
        "/api/v1/games/arcade/leaderboards/main/scores",
        {"player_id": "a", "score": 1, "subscore": 2},
        content_type="application/json",
        headers=auth(raw),
    )
    assert (response.status_code, response.json()["error"]["field"]) == (422, "subscore")
    assert await page(aclient) == []


async def test_it_refuses_a_total_past_the_exact_range_and_changes_nothing(aclient, make_game):
    _, raw = await new_game(make_game, mode="increment", order="desc", ties="subscore", periods_kept=["all-time"])
    await post(aclient, raw, {"player_id": "a", "score": MAX, "subscore": 1})
    for body in ({"player_id": "a", "score": 1}, {"player_id": "a", "score": 0, "subscore": MAX}):
        response = await aclient.post(
            "/api/v1/games/arcade/leaderboards/main/scores", body, content_type="application/json", headers=auth(raw)
        )
        assert (response.status_code, response.json()["error"]["code"]) == (422, "score_overflow")
    assert await page(aclient) == [("a", MAX, 1, 1)]


async def test_it_keeps_a_hidden_players_moment_and_erases_a_prefixed_entry(make_game):
    game, _ = await new_game(make_game, mode="best", order="desc", ties="earliest", periods_kept=["all-time"])
    for ms, player in enumerate(["a", "b", "c"]):
        with later(ms):
            await services.score_submit(game=game, board=game.boards[0], player_id=player, score=7)
    model = await Game.objects.aget(slug="arcade")
    await sync_to_async(services.player_set_hidden)(game=model, player_id="a", hidden=True)
    board = game.boards[0]
    ranked = await services_page(board)
    assert ranked == ["b", "c"]
    await sync_to_async(services.player_set_hidden)(game=model, player_id="a", hidden=False)
    assert await services_page(board) == ["a", "b", "c"]  # a still reached 7 first

    from moderation import services as moderation

    await sync_to_async(moderation.player_erase)(game=model, player_id="b", reason="asked")
    assert await services_page(board) == ["a", "c"]
    board_key = keys.board(board.ref, "all-time", "all-time")
    assert await get_redis().hkeys(keys.entry_members(board_key)) == ["a", "c"]


async def services_page(board: Any) -> list[str]:
    from games import selectors

    found = await selectors.leaderboard_page(board=board, period="all-time")
    return [e.player_id for e in found.entries]


def test_it_upgrades_earliest_boards_kept_in_the_retired_format(make_game):
    """A daily board written before entries had a prefix: score = base * 2^bits + ms since the
    period started, member = player. The upgrade keeps every score exact and every order."""
    game = make_game("arcade", mode="best", order="desc", ties="earliest", periods_kept=["daily"], min_score=0)
    config = config_of(game)
    board = config.boards[0]
    ref = board.ref
    board_key = keys.board(ref, "daily", "2026-03-04")
    bits = 27  # 25 hours of ms
    retired = {"late": (-500, 9_000), "early": (-500, 10), "top": (-900, 70_000), "low": (-3, 1)}

    async def write() -> None:
        client = get_redis()
        await client.zadd(board_key, {p: base * 2**bits + ms for p, (base, ms) in retired.items()})
        await client.zadd(keys.boards_index(ref), {board_key: float("inf")})

    run_sync(write)
    report = upgrade.boards_upgrade()
    assert (report.boards, report.entries) == (1, 4)
    assert upgrade.boards_upgrade().boards == 0  # done once
    from games import selectors

    found = run_sync(
        lambda: selectors.board_page(board=board, period=selectors.resolve_period(board=board, period="daily")[0])
    )
    assert [(e.player_id, e.score, e.rank) for e in found.entries] == [
        ("top", 900, 1),
        ("early", 500, 2),
        ("late", 500, 3),
        ("low", 3, 4),
    ]
    # A later score still ranks after the ones reached before it.
    with clock_at(dt.datetime(2026, 3, 4, 12, 0, tzinfo=dt.UTC)):
        run_sync(lambda: services.score_submit(game=config, board=board, player_id="new", score=500))
    found = run_sync(
        lambda: selectors.board_page(board=board, period=selectors.resolve_period(board=board, period="daily")[0])
    )
    assert [e.player_id for e in found.entries] == ["top", "early", "late", "new", "low"]
