"""Named-period reads of archived periods answer exactly what the live board said at close,
and GET /periods lists the archived periods.

Boards are filled through games.services.score_submit in past periods (an injected
``now``), read through the API while Redis holds them, archived, and read again
with Redis emptied: every answer must be the same bytes.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from archive import services as archive_services
from archive.models import ArchivedPeriod
from core import config
from core.clock import iso
from core.clock import now as clock_now
from core.models import Game
from core.redis import get_redis
from games import periods, services
from tests.conftest import clock_at

pytestmark = pytest.mark.django_db(transaction=True)

# Ids that sort differently by bytes than by a locale's collation (case, punctuation).
ODD_IDS = ["Zed", "alice", "_under", "a.b", "A-1", "b:c", "0zero", "Bob", "bob", "a-b"]


async def archive_period(
    game: Game, period: str, period_id: str, now: dt.datetime | None = None, **options: Any
) -> ArchivedPeriod:
    """Archive a period the way its close job does, at ``now`` (options: force, chunk_size, after_chunk)."""
    board = await game.leaderboards.afirst()
    assert board is not None
    with clock_at(now):
        return await sync_to_async(archive_services.period_archive)(
            board=board, period=period, period_id=period_id, **options
        )


async def crash_mid_archive(game: Game, period: str, period_id: str) -> ArchivedPeriod:
    """An archive left 'archiving': its run died after the first chunk."""

    def crash(index: int) -> None:
        raise RuntimeError("worker died")

    with pytest.raises(RuntimeError):
        await archive_period(game, period, period_id, chunk_size=1, after_chunk=crash)
    return await ArchivedPeriod.objects.aget(game=game, period=period, period_id=period_id)


async def new_game(make_game, slug: str = "tetris", **kwargs: object) -> Game:
    return await sync_to_async(make_game)(slug, **kwargs)


async def fill(game: Game, at: dt.datetime, scores: dict[str, int], names: dict[str, str] | None = None) -> None:
    game_config = await config.get_game(game.slug)
    assert game_config is not None
    for player_id, score in scores.items():
        name = (names or {}).get(player_id)
        with clock_at(at):
            await services.score_submit(
                game=game_config, board=game_config.boards[0], player_id=player_id, score=score, display_name=name
            )


def tied_scores(count: int, *, negative: bool = False) -> dict[str, int]:
    """``count`` players (and the odd ids) on few distinct scores: long tie groups across pages."""
    scores = {f"p{i:03d}": (i * 7) % 23 - (11 if negative else 0) for i in range(count)}
    scores.update({player_id: i % 3 for i, player_id in enumerate(ODD_IDS)})
    return scores


def read_paths(slug: str, period: str, period_id: str, player_ids: list[str]) -> list[str]:
    """Every named-period read worth comparing: pages, standings, windows, friends."""
    base = f"/api/v1/games/{slug}/leaderboards/main/{period}/{period_id}"
    paths = [f"{base}?offset={o}&limit={n}" for o, n in [(0, 50), (50, 50), (100, 50), (7, 13), (0, 1), (141, 5)]]
    paths += [f"{base}?offset=1000&limit=10", base]
    ordered = sorted(player_ids)
    picks = [*ODD_IDS, *ordered[::9], "nobody"]
    paths += [f"{base}/players/{p}" for p in picks]
    for radius in (0, 1, 5, 50):
        paths += [f"{base}/players/{p}/around?radius={radius}" for p in picks]
    friends = ",".join([*ODD_IDS[:4], "nobody", ordered[40], ODD_IDS[0], ordered[3]])
    paths += [f"{base}/players?ids={friends}", f"{base}/players?ids=nobody,ghost"]
    return paths


async def read_all(aclient, paths: list[str]) -> dict[str, tuple[int, bytes]]:
    answers = {}
    for path in paths:
        response = await aclient.get(path)
        answers[path] = (response.status_code, response.content)
    return answers


@pytest.mark.parametrize(
    ("options", "negative"),
    [
        ({"order": "desc", "mode": "best"}, False),
        ({"order": "asc", "mode": "increment", "timezone_name": "America/New_York"}, True),
    ],
)
async def test_it_answers_archived_reads_byte_for_byte_like_the_live_board(make_game, aclient, options, negative):
    game = await new_game(make_game, "tetris", **options)
    at = clock_now() - dt.timedelta(days=40)
    scores = tied_scores(140, negative=negative)
    await fill(game, at, scores, names={"alice": "Alice <b>", "Zed": "Zed ☃"})
    kinds = [periods.DAILY, periods.WEEKLY, periods.MONTHLY]
    ids = {kind: periods.current(kind, game.timezone, at).id for kind in kinds}
    paths = [path for kind in kinds for path in read_paths("tetris", kind, ids[kind], list(scores))]
    live = await read_all(aclient, paths)
    assert live[f"/api/v1/games/tetris/leaderboards/main/daily/{ids['daily']}"][0] == 200
    assert {status for status, _ in live.values()} == {200, 404}

    for kind in kinds:
        await archive_period(game, kind, ids[kind])
    # Redis loses everything: the archive alone answers.
    await get_redis().flushdb()
    config.invalidate()

    archived = await read_all(aclient, paths)
    for path in paths:
        assert archived[path] == live[path], path


async def test_it_keeps_ties_in_player_id_byte_order_across_pages(make_game, aclient):
    game = await new_game(make_game)
    at = clock_now() - dt.timedelta(days=3)
    await fill(game, at, {player_id: 5 for player_id in ODD_IDS})
    day = periods.current("daily", "UTC", at).id
    await archive_period(game, "daily", day)
    await get_redis().flushdb()

    seen = []
    for offset in range(0, len(ODD_IDS), 3):
        response = await aclient.get(f"/api/v1/games/tetris/leaderboards/main/daily/{day}?offset={offset}&limit=3")
        seen += [(e["rank"], e["player_id"]) for e in response.json()["entries"]]

    assert seen == [(1, p) for p in sorted(ODD_IDS, key=str.encode)]


async def test_it_reads_the_percentile_over_ties_like_live(make_game, aclient):
    game = await new_game(make_game)
    at = clock_now() - dt.timedelta(days=3)
    await fill(game, at, {"a": 9, "b": 7, "c": 7, "d": 7, "e": 1})
    day = periods.current("daily", "UTC", at).id
    await archive_period(game, "daily", day)
    await get_redis().flushdb()

    response = await aclient.get(f"/api/v1/games/tetris/leaderboards/main/daily/{day}/players/c")

    assert response.json() == {
        "player_id": "c",
        "display_name": "c",
        "rank": 2,
        "score": 7,
        "total": 5,
        "percentile": 20.0,
        "metadata": None,
    }


async def test_it_prefers_the_archive_to_a_board_still_kept_in_redis(make_game, aclient):
    game = await new_game(make_game)
    at = clock_now() - dt.timedelta(days=3)
    await fill(game, at, {"alice": 10, "bob": 5})
    day = periods.current("daily", "UTC", at).id
    await archive_period(game, "daily", day)
    # A late change to the kept Redis board (as a hide would make) does not rewrite the record.
    await get_redis().zadd(f"lb:{{tetris.main}}:daily:{day}", {"carol": -100})

    response = await aclient.get(f"/api/v1/games/tetris/leaderboards/main/daily/{day}")

    assert [e["player_id"] for e in response.json()["entries"]] == ["alice", "bob"]
    assert response.json()["total"] == 2


@pytest.mark.parametrize("status", ["archiving", "snapshot"])
async def test_it_does_not_serve_an_archive_that_is_not_complete(make_game, aclient, status):
    game = await new_game(make_game)
    at = clock_now() - dt.timedelta(days=3)
    await fill(game, at, {"alice": 10, "carol": 5})
    day = periods.current("daily", "UTC", at).id
    if status == "archiving":
        archived = await crash_mid_archive(game, "daily", day)
    else:
        # A snapshot taken while the period was still open.
        with clock_at(at):
            archived = await archive_period(game, "daily", day, force=True)
    assert archived.status == status
    await get_redis().zadd(f"lb:{{tetris.main}}:daily:{day}", {"bob": -20})

    kept = await aclient.get(f"/api/v1/games/tetris/leaderboards/main/daily/{day}")
    assert [e["player_id"] for e in kept.json()["entries"]] == ["bob", "alice", "carol"]

    await get_redis().flushdb()
    gone = await aclient.get(f"/api/v1/games/tetris/leaderboards/main/daily/{day}")
    assert gone.status_code == 404
    assert gone.json()["error"]["code"] == "period_not_found"


async def test_it_reads_the_current_period_live_even_when_archived(make_game, aclient):
    game = await new_game(make_game)
    await fill(game, clock_now(), {"alice": 10})
    today = periods.current("daily", "UTC", clock_now()).id
    # A complete archive of today's board (as if the day had ended) must not shadow it.
    with clock_at(clock_now() + dt.timedelta(days=1)):
        await archive_period(game, "daily", today)
    await fill(game, clock_now(), {"bob": 20})

    response = await aclient.get(f"/api/v1/games/tetris/leaderboards/main/daily/{today}")

    assert [e["player_id"] for e in response.json()["entries"]] == ["bob", "alice"]


async def test_it_does_not_serve_another_games_archive(make_game, aclient):
    tetris = await new_game(make_game, "tetris")
    await new_game(make_game, "snake")
    at = clock_now() - dt.timedelta(days=3)
    await fill(tetris, at, {"alice": 10})
    day = periods.current("daily", "UTC", at).id
    await archive_period(tetris, "daily", day)

    response = await aclient.get(f"/api/v1/games/snake/leaderboards/main/daily/{day}")

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "period_not_found"


# --------------------------------------------------------------------------- GET /periods


async def archive_days(game: Game, days_ago: list[int], kind: str = "daily") -> list[str]:
    ids = []
    for n in days_ago:
        at = clock_now() - dt.timedelta(days=n)
        await fill(game, at, {f"p{n}": n, "common": 1})
        period_id = periods.current(kind, game.timezone, at).id
        if period_id not in ids:
            await archive_period(game, kind, period_id)
            ids.append(period_id)
    return ids


async def test_it_lists_archived_periods_newest_first(make_game, aclient):
    game = await new_game(make_game, periods_kept=["daily", "monthly", "all-time"])
    days = await archive_days(game, [5, 2, 9])
    month = periods.current("monthly", "UTC", clock_now() - dt.timedelta(days=40))
    assert month.starts_at is not None
    await fill(game, month.starts_at, {"m": 1})
    await archive_period(game, "monthly", month.id)

    response = await aclient.get("/api/v1/games/tetris/leaderboards/main/periods")

    assert response.status_code == 200
    body = response.json()
    assert body["total"] == 4
    assert [(p["period"], p["period_id"]) for p in body["periods"]] == [
        ("daily", days[1]),
        ("daily", days[0]),
        ("daily", days[2]),
        ("monthly", month.id),
    ]
    first = body["periods"][0]
    expected = periods.parse("daily", days[1], "UTC")
    assert expected.starts_at is not None and expected.ends_at is not None
    assert set(first) == {"leaderboard", "period", "period_id", "starts_at", "ends_at", "total", "archived_at"}
    assert first["starts_at"] == iso(expected.starts_at)
    assert first["ends_at"] == iso(expected.ends_at)
    assert first["total"] == 2
    assert first["archived_at"]


async def test_it_lists_the_shorter_period_first_when_two_end_together(make_game, aclient):
    game = await new_game(make_game)
    # The last day of a month: its daily and monthly boards close at the same instant.
    month = periods.current("monthly", "UTC", clock_now() - dt.timedelta(days=40))
    assert month.ends_at is not None
    last_day = month.ends_at - dt.timedelta(hours=1)
    await fill(game, last_day, {"alice": 1})
    await archive_period(game, "monthly", month.id)
    await archive_period(game, "daily", periods.current("daily", "UTC", last_day).id)

    response = await aclient.get("/api/v1/games/tetris/leaderboards/main/periods")

    assert [p["period"] for p in response.json()["periods"]] == ["daily", "monthly"]


async def test_it_pages_and_filters_archived_periods(make_game, aclient):
    game = await new_game(make_game)
    days = await archive_days(game, [1, 2, 3, 4, 5])
    weeks = await archive_days(game, [14, 21], kind="weekly")

    page = (await aclient.get("/api/v1/games/tetris/leaderboards/main/periods?period=daily&offset=1&limit=2")).json()
    past_end = (await aclient.get("/api/v1/games/tetris/leaderboards/main/periods?period=daily&offset=5")).json()
    weekly = (await aclient.get("/api/v1/games/tetris/leaderboards/main/periods?period=weekly")).json()
    monthly = (await aclient.get("/api/v1/games/tetris/leaderboards/main/periods?period=monthly")).json()

    assert page["total"] == 5
    assert [p["period_id"] for p in page["periods"]] == days[1:3]
    assert past_end == {"total": 5, "periods": []}
    assert [p["period_id"] for p in weekly["periods"]] == weeks
    assert monthly == {"total": 0, "periods": []}


async def test_it_lists_only_complete_archives_of_this_game(make_game, aclient):
    tetris = await new_game(make_game, "tetris")
    snake = await new_game(make_game, "snake")
    at = clock_now() - dt.timedelta(days=3)
    await fill(tetris, at, {"alice": 1})
    await fill(snake, at, {"alice": 1})
    with clock_at(at):
        await archive_period(tetris, "daily", periods.current("daily", "UTC", at).id, force=True)
    await archive_period(snake, "daily", periods.current("daily", "UTC", at).id)

    response = await aclient.get("/api/v1/games/tetris/leaderboards/main/periods")

    assert response.json() == {"total": 0, "periods": []}


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("period=yearly", "period"),
        ("period=hourly", "period"),
        ("period=", "period"),
        ("offset=-1", "offset"),
        ("offset=x", "offset"),
        ("limit=0", "limit"),
        ("limit=201", "limit"),
    ],
)
async def test_it_rejects_bad_period_list_parameters(make_game, aclient, query, field):
    await new_game(make_game)

    response = await aclient.get(f"/api/v1/games/tetris/leaderboards/main/periods?{query}")

    assert response.status_code == 422
    assert response.json()["error"]["code"] == "invalid"
    assert response.json()["error"]["field"] == field


async def test_it_answers_404_for_the_periods_of_an_unknown_game(aclient):
    response = await aclient.get("/api/v1/games/nope/leaderboards/main/periods")

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "game_not_found"


async def test_it_lists_each_windows_current_period_with_the_board(make_game, aclient):
    await new_game(make_game)

    response = await aclient.get("/api/v1/games/tetris/leaderboards/main")

    assert response.status_code == 200
    assert [p["period"] for p in response.json()["windows"]] == ["daily", "weekly", "monthly", "all-time"]


async def test_it_documents_the_periods_endpoint(aclient):
    schema = (await aclient.get("/api/v1/openapi.json")).json()

    operation = schema["paths"]["/api/v1/games/{game}/leaderboards/{board}/periods"]["get"]
    assert operation["summary"] == "Archived periods"
    assert set(operation["responses"]) == {"200", "400", "404", "422", "503"}
    assert "ArchivedPeriodsOut" in operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
