"""Leaderboards as their own objects: made and changed with a manage key, each with its own
windows, tie rule, format, season and entry metadata; one batch feeds several of them."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from archive import services as archive_services
from core.models import Game
from core.redis import get_redis
from games import services as game_services
from tests.conftest import auth, clock_at

pytestmark = pytest.mark.django_db(transaction=True)

API = "/api/v1/games/rally"
# The pinned clock's week: Wednesday 2026-03-04 12:00 UTC.
SEASON = {"starts_at": "2026-03-02T00:00:00Z", "ends_at": "2026-03-30T00:00:00Z"}
TRACK = {
    "name": "Track 1",
    "mode": "best",
    "order": "asc",
    "windows": ["weekly", "custom"],
    "cron": "0 18 * * FRI",
    "ties": "earliest",
    "format": "time_ms",
    "min_score": 1,
    "max_score": 3_600_000,
    **SEASON,
}
POINTS = {"name": "Points", "mode": "increment", "order": "desc", "windows": ["daily", "all-time"]}


async def call(client: AsyncClient, method: str, path: str, key: str, body: Any = None) -> tuple[int, Any]:
    send = getattr(client, method)
    response = await send(
        f"{API}{path}",
        json.dumps(body) if body is not None else None,
        content_type="application/json",
        headers=auth(key),
    )
    return response.status_code, response.json()


async def make_boards(aclient: AsyncClient, manage: str) -> None:
    for slug, settings in (("track-1", TRACK), ("track-2", {**TRACK, "name": "Track 2"}), ("points", POINTS)):
        status, body = await call(aclient, "put", f"/leaderboards/{slug}", manage, settings)
        assert status == 200, body


async def test_it_creates_boards_with_a_manage_key_and_lists_them_with_their_windows(aclient, rally):
    manage, _ = rally
    await make_boards(aclient, manage)

    game = (await aclient.get(API)).json()
    assert [b["slug"] for b in game["leaderboards"]] == ["track-1", "track-2", "points"]
    track = (await aclient.get(f"{API}/leaderboards/track-1")).json()
    assert (track["mode"], track["order"], track["ties"], track["format"], track["open"]) == (
        "best",
        "asc",
        "earliest",
        "time_ms",
        True,
    )
    # The custom window's current period began last Friday at 18:00 UTC (the game's zone).
    assert track["windows"][1] == {
        "period": "custom",
        "name": "Custom",
        "period_id": "2026-02-27T18:00Z",
        "starts_at": "2026-02-27T18:00:00.000Z",
        "resets_at": "2026-03-06T18:00:00.000Z",
    }


async def test_it_refuses_every_manage_call_from_a_submit_key(aclient, rally):
    manage, submit = rally
    await make_boards(aclient, manage)
    for method, body in (("put", POINTS), ("patch", {"name": "New"})):
        status, reply = await call(aclient, method, "/leaderboards/points", submit, body)
        assert (status, reply["error"]["code"]) == (403, "scope"), method
    # A manage key may also submit.
    status, _ = await call(aclient, "post", "/leaderboards/points/scores", manage, {"player_id": "a", "score": 3})
    assert status == 200


async def test_it_explains_a_board_it_refuses_and_makes_nothing(aclient, rally):
    manage, _ = rally
    cases = (
        ({**TRACK, "cron": "every friday"}, "cron"),
        ({**TRACK, "cron": "*/5 * * * *"}, "cron"),
        ({**POINTS, "ties": "first"}, "ties"),
        ({**POINTS, "subscore_order": "up"}, "subscore_order"),
        ({**POINTS, "windows": ["hourly"]}, "windows"),
        ({**POINTS, "format": "decimal:9"}, "format"),
    )
    for settings, field in cases:
        status, body = await call(aclient, "put", "/leaderboards/bad", manage, settings)
        assert (status, body["error"]["field"]) == (422, field), body
    status, body = await call(aclient, "put", "/leaderboards/Bad_Slug", manage, POINTS)
    assert (status, body["error"]["field"]) == (422, "slug")
    assert (await aclient.get(API)).json()["leaderboards"] == []


async def test_it_refuses_a_board_past_the_games_limit_and_an_admin_raises_it(aclient, rally, settings):
    manage, _ = rally
    settings.MAX_BOARDS_PER_GAME = 2
    for slug in ("one", "two"):
        assert (await call(aclient, "put", f"/leaderboards/{slug}", manage, POINTS))[0] == 200
    status, body = await call(aclient, "put", "/leaderboards/three", manage, POINTS)
    assert (status, body["error"]["code"], body["error"]["field"]) == (409, "board_limit", "slug")
    assert "2 leaderboards" in body["error"]["message"]
    # Replacing a board it has is no new board; an operator raises the limit for this game.
    assert (await call(aclient, "put", "/leaderboards/two", manage, {**POINTS, "name": "Two"}))[0] == 200
    await Game.objects.filter(slug="rally").aupdate(max_boards=3)
    assert (await call(aclient, "put", "/leaderboards/three", manage, POINTS))[0] == 200
    slugs = [b["slug"] for b in (await aclient.get(API)).json()["leaderboards"]]
    assert sorted(slugs) == ["one", "three", "two"]


async def test_it_refuses_to_change_how_a_board_with_scores_ranks(aclient, rally):
    manage, _ = rally
    await make_boards(aclient, manage)
    status, body = await call(aclient, "patch", "/leaderboards/points", manage, {"order": "asc"})
    assert status == 200 and body["order"] == "asc"  # no scores yet: allowed
    await call(aclient, "post", "/leaderboards/points/scores", manage, {"player_id": "a", "score": 3})

    status, body = await call(aclient, "patch", "/leaderboards/points", manage, {"mode": "best"})
    assert (status, body["error"]["code"]) == (409, "board_has_scores")
    status, body = await call(aclient, "patch", "/leaderboards/points", manage, {"name": "Season points"})
    assert (status, body["name"]) == (200, "Season points")


async def test_it_feeds_three_boards_from_one_batch_each_item_alone(aclient, rally):
    manage, submit = rally
    await make_boards(aclient, manage)
    items = [
        {"leaderboard": "track-1", "player_id": "ann", "score": 81_999, "metadata": {"car": "mx-5"}},
        {"leaderboard": "track-2", "player_id": "ann", "score": 92_500},
        {"leaderboard": "points", "player_id": "ann", "score": 10},
        {"leaderboard": "nope", "player_id": "ann", "score": 1},
        {"player_id": "ann", "score": 1},
    ]
    status, body = await call(aclient, "post", "/scores/batch", submit, {"scores": items})

    assert status == 200
    results = body["results"]
    assert [r.get("leaderboard") for r in results[:3]] == ["track-1", "track-2", "points"]
    assert results[0]["metadata"] == {"car": "mx-5"}
    assert results[3]["error"]["code"] == "board_not_found"
    assert (results[4]["error"]["code"], results[4]["error"]["field"]) == ("invalid", "scores[4].leaderboard")
    profile = (await aclient.get(f"{API}/players/ann")).json()
    assert profile["leaderboards"]["track-1"]["custom"]["standing"]["score"] == 81_999
    assert profile["leaderboards"]["points"]["all-time"]["standing"]["score"] == 10


async def test_it_ranks_equal_times_by_who_set_them_first(aclient, rally, clock):
    manage, submit = rally
    await make_boards(aclient, manage)
    start = clock.now()
    for minutes, player in ((0, "bea"), (1, "ann"), (2, "cid")):
        with clock_at(start + dt.timedelta(minutes=minutes)):
            status, _ = await call(
                aclient, "post", "/leaderboards/track-1/scores", submit, {"player_id": player, "score": 75_000}
            )
            assert status == 200
    # bea sets the same time again later: she keeps the moment she first reached it.
    with clock_at(start + dt.timedelta(minutes=3)):
        await call(aclient, "post", "/leaderboards/track-1/scores", submit, {"player_id": "bea", "score": 75_000})

    board = (await aclient.get(f"{API}/leaderboards/track-1/weekly")).json()
    assert [(e["rank"], e["player_id"], e["score"]) for e in board["entries"]] == [
        (1, "bea", 75_000),
        (2, "ann", 75_000),
        (3, "cid", 75_000),
    ]


async def test_it_keeps_the_metadata_of_the_best_and_of_the_latest(aclient, rally):
    manage, submit = rally
    await make_boards(aclient, manage)

    async def post(board: str, score: int, metadata: dict[str, Any] | None) -> None:
        body: dict[str, Any] = {"player_id": "ann", "score": score}
        if metadata is not None:
            body["metadata"] = metadata
        status, reply = await call(aclient, "post", f"/leaderboards/{board}/scores", submit, body)
        assert status == 200, reply

    await post("track-1", 80_000, {"car": "a"})
    await post("track-1", 90_000, {"car": "b"})  # slower: the best stays, with its car
    await post("points", 5, {"level": 1})
    await post("points", 5, None)  # the latest submission carried none
    track = (await aclient.get(f"{API}/leaderboards/track-1/weekly/players/ann")).json()
    points = (await aclient.get(f"{API}/leaderboards/points/daily")).json()
    assert (track["score"], track["metadata"]) == (80_000, {"car": "a"})
    assert (points["entries"][0]["score"], points["entries"][0]["metadata"]) == (10, None)


async def test_it_refuses_metadata_too_large_or_not_an_object(aclient, rally):
    manage, submit = rally
    await make_boards(aclient, manage)
    big = {"note": "x" * 600}
    status, body = await call(
        aclient, "post", "/leaderboards/points/scores", submit, {"player_id": "a", "score": 1, "metadata": big}
    )
    assert (status, body["error"]["code"], body["error"]["field"]) == (413, "metadata_too_large", "metadata")
    status, body = await call(
        aclient, "post", "/leaderboards/points/scores", submit, {"player_id": "a", "score": 1, "metadata": [1]}
    )
    assert status == 422
    assert (await aclient.get(f"{API}/leaderboards/points/daily")).json()["total"] == 0


async def test_it_refuses_scores_outside_the_season_with_its_times(aclient, rally):
    manage, submit = rally
    await make_boards(aclient, manage)
    for instant in (dt.datetime(2026, 3, 1, tzinfo=dt.UTC), dt.datetime(2026, 3, 30, tzinfo=dt.UTC)):
        with clock_at(instant):
            status, body = await call(
                aclient, "post", "/leaderboards/track-1/scores", submit, {"player_id": "a", "score": 70_000}
            )
        assert (status, body["error"]["code"]) == (409, "board_closed")
        assert (
            "2026-03-02T00:00:00.000Z" in body["error"]["message"]
            and "2026-03-30T00:00:00.000Z" in body["error"]["message"]
        )


async def test_it_reads_a_custom_period_by_its_utc_start_and_refuses_other_ids(aclient, rally):
    manage, submit = rally
    await make_boards(aclient, manage)
    await call(aclient, "post", "/leaderboards/track-1/scores", submit, {"player_id": "a", "score": 70_000})

    current = await aclient.get(f"{API}/leaderboards/track-1/custom/2026-02-27T18:00Z")
    assert current.status_code == 200 and current.json()["total"] == 1
    for wrong in ("2026-02-27T17:00Z", "2026-02-27", "season"):
        response = await aclient.get(f"{API}/leaderboards/track-1/custom/{wrong}")
        assert (response.status_code, response.json()["error"]["code"]) == (404, "period_not_found"), wrong


async def test_it_rolls_a_cron_window_over_at_local_time_across_a_dst_change(aclient, rally):
    """Paris leaves summer time on Sunday 2026-10-25: Friday 18:00 is 16:00 UTC before, 17:00 after."""
    manage, submit = rally
    paris = {**POINTS, "windows": ["custom"], "cron": "0 18 * * FRI", "timezone": "Europe/Paris"}
    assert (await call(aclient, "put", "/leaderboards/weekly-cup", manage, paris))[0] == 200

    async def period_at(instant: str) -> str:
        with clock_at(dt.datetime.fromisoformat(instant)):
            status, body = await call(
                aclient, "post", "/leaderboards/weekly-cup/scores", submit, {"player_id": "a", "score": 1}
            )
        assert status == 200, body
        return body["periods"]["custom"]["period_id"]

    assert await period_at("2026-10-23T15:59:00+00:00") == "2026-10-16T16:00Z"
    assert await period_at("2026-10-23T16:00:00+00:00") == "2026-10-23T16:00Z"
    assert await period_at("2026-10-30T16:59:59+00:00") == "2026-10-23T16:00Z"
    assert await period_at("2026-10-30T17:00:00+00:00") == "2026-10-30T17:00Z"


async def test_it_answers_404_for_an_unknown_board(aclient, rally):
    _, submit = rally
    status, body = await call(aclient, "post", "/leaderboards/nope/scores", submit, {"player_id": "a", "score": 1})
    assert (status, body["error"]["code"]) == (404, "board_not_found")
    response = await aclient.get(f"{API}/leaderboards/nope/daily")
    assert (response.status_code, response.json()["error"]["code"]) == (404, "board_not_found")


async def test_it_gives_a_new_board_the_games_hidden_players(aclient, rally):
    manage, submit = rally
    await make_boards(aclient, manage)
    game = await Game.objects.aget(slug="rally")
    await sync_to_async(game_services.player_set_hidden)(game=game, player_id="cheat", hidden=True)
    assert (await call(aclient, "put", "/leaderboards/track-3", manage, TRACK))[0] == 200

    status, body = await call(
        aclient, "post", "/leaderboards/track-3/scores", submit, {"player_id": "cheat", "score": 1}
    )
    assert (status, body["error"]["code"]) == (403, "player_hidden")


async def test_it_takes_a_board_out_of_play_and_serves_its_final_standings_from_the_archive(aclient, rally):
    manage, submit = rally
    await make_boards(aclient, manage)
    for player, score in (("ann", 10), ("bo", 7)):
        await call(aclient, "post", "/leaderboards/points/scores", submit, {"player_id": player, "score": score})

    status, body = await call(aclient, "delete", "/leaderboards/points", submit)
    assert (status, body["error"]["code"]) == (403, "scope")
    status, body = await call(aclient, "delete", "/leaderboards/points", manage)
    assert (status, body["active"], body["open"]) == (200, False, False)

    status, body = await call(aclient, "post", "/leaderboards/points/scores", submit, {"player_id": "cy", "score": 1})
    assert (status, body["error"]["code"]) == (409, "board_closed")
    assert await sync_to_async(archive_services.close_jobs_run)() == 1  # the daily window, at once
    await get_redis().flushdb()  # the archive alone answers now

    board = (await aclient.get(f"{API}/leaderboards/points/daily")).json()
    assert [(e["player_id"], e["score"]) for e in board["entries"]] == [("ann", 10), ("bo", 7)]
    standing = (await aclient.get(f"{API}/leaderboards/points/daily/players/bo")).json()
    assert (standing["rank"], standing["total"]) == (2, 2)

    # A PUT brings it back.
    status, body = await call(aclient, "put", "/leaderboards/points", manage, POINTS)
    assert (status, body["active"]) == (200, True)


async def test_it_archives_a_season_when_it_ends_and_reads_it_from_the_archive(aclient, rally, clock):
    manage, submit = rally
    season = {**POINTS, "windows": ["all-time"], **SEASON}
    assert (await call(aclient, "put", "/leaderboards/cup", manage, season))[0] == 200
    for player, score in (("ann", 3), ("bo", 5)):
        await call(aclient, "post", "/leaderboards/cup/scores", submit, {"player_id": player, "score": score})

    board = (await aclient.get(f"{API}/leaderboards/cup")).json()
    assert board["windows"][0]["resets_at"] == "2026-03-30T00:00:00.000Z"  # the season's end
    with clock_at(dt.datetime(2026, 3, 30, 0, 5, tzinfo=dt.UTC)):
        assert await sync_to_async(archive_services.close_jobs_run)() == 1
        await get_redis().flushdb()  # the archive alone answers now
        page = (await aclient.get(f"{API}/leaderboards/cup/all-time")).json()
        periods = (await aclient.get(f"{API}/leaderboards/cup/periods")).json()
    assert [(e["player_id"], e["score"]) for e in page["entries"]] == [("bo", 5), ("ann", 3)]
    assert [(p["period"], p["period_id"]) for p in periods["periods"]] == [("all-time", "all-time")]


@pytest.mark.parametrize(
    "field", ["name", "description", "mode", "order", "windows", "cron", "timezone", "ties", "subscore_order", "format"]
)
async def test_it_refuses_a_patch_that_nulls_a_setting_every_board_has(aclient, rally, field):
    # Null was taken to the database, which refused it: answered 409 "conflict" (created meanwhile).
    manage, _ = rally
    await make_boards(aclient, manage)
    before = await call(aclient, "get", "/leaderboards/track-1", manage)

    status, body = await call(aclient, "patch", "/leaderboards/track-1", manage, {field: None})

    assert (status, body["error"]["code"], body["error"]["field"]) == (422, "invalid", field)
    assert await call(aclient, "get", "/leaderboards/track-1", manage) == before


async def test_it_names_a_window_as_the_studio_says_and_refuses_names_that_cannot_be(aclient, rally):
    manage, _ = rally
    race = {**TRACK, "window_labels": {"custom": "Race week"}}

    status, made = await call(aclient, "put", "/leaderboards/track-1", manage, race)

    assert status == 200, made
    assert made["window_labels"] == {"custom": "Race week"}
    assert [(w["period"], w["name"]) for w in made["windows"]] == [("weekly", "Weekly"), ("custom", "Race week")]
    for labels, says in (
        ({"daily": "Today"}, "The board keeps no daily window to name."),
        ({"custom": " Race week"}, "custom: one line of 1 to 40 characters, without spaces at either end."),
        ({"custom": "x" * 41}, None),
        ({"custom": ""}, None),
        ({"custom": "Race\nweek"}, None),
    ):
        status, refused = await call(aclient, "patch", "/leaderboards/track-1", manage, {"window_labels": labels})
        # The schema names the key it refused (window_labels.custom); the board's rules, the field.
        assert (status, refused["error"]["code"]) == (422, "invalid"), labels
        assert refused["error"]["field"] in ("window_labels", "window_labels.custom"), labels
        if says:
            assert refused["error"]["message"] == says
    status, kept = await call(aclient, "patch", "/leaderboards/track-1", manage, {"window_labels": {}})
    assert (status, kept["window_labels"], kept["windows"][1]["name"]) == (200, {}, "Custom")
