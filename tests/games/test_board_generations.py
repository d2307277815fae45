"""A board taken out of play (DELETE) and brought back (PUT) within its periods: the periods it
was closed in stay archived for good, and the rest of each is a new generation with its own id
(games/periods.py), archived on its own when it ends. No score is lost, no archive is written
over, and every Redis board keeps the expiry of what it is."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from archive import services as archive_services
from core import keys, outbox
from core.models import Event
from core.redis import get_redis
from tests.conftest import auth, clock_at

pytestmark = pytest.mark.django_db(transaction=True)

API = "/api/v1/games/rally"
# The pinned clock: Wednesday 2026-03-04 12:00 UTC, inside this season.
CUP = {
    "name": "Cup",
    "mode": "best",
    "order": "desc",
    "windows": ["daily", "monthly", "custom"],
    "starts_at": "2026-03-02T00:00:00Z",
    "ends_at": "2026-03-30T00:00:00Z",
}
BACK_AT = dt.datetime(2026, 3, 4, 12, 5, 0, 250_000, tzinfo=dt.UTC)
GENERATION = "~20260304T120500.250Z"
AFTER_SEASON = dt.datetime(2026, 4, 1, 0, 10, tzinfo=dt.UTC)


async def call(client: AsyncClient, method: str, path: str, key: str, body: Any = None) -> tuple[int, Any]:
    response = await getattr(client, method)(
        f"{API}{path}",
        json.dumps(body) if body is not None else None,
        content_type="application/json",
        headers=auth(key),
    )
    return response.status_code, response.json()


async def submit(client: AsyncClient, key: str, player: str, score: int) -> None:
    status, body = await call(client, "post", "/leaderboards/cup/scores", key, {"player_id": player, "score": score})
    assert status == 200, body


async def standings(client: AsyncClient, window: str, period_id: str = "") -> list[tuple[str, int]]:
    path = f"{API}/leaderboards/cup/{window}" + (f"/{period_id}" if period_id else "")
    response = await client.get(path)
    assert response.status_code == 200, response.json()
    return [(e["player_id"], e["score"]) for e in response.json()["entries"]]


async def current_ids(client: AsyncClient) -> dict[str, str]:
    board = (await client.get(f"{API}/leaderboards/cup")).json()
    return {w["period"]: w["period_id"] for w in board["windows"]}


async def pttl(window: str, period_id: str) -> int:
    return int(await get_redis().pttl(keys.board("rally.cup", window, period_id)))


def announced(event_type: str) -> list[dict[str, Any]]:
    found = [outbox.envelope_of(e) for e in Event.objects.filter(type=event_type).order_by("id")]
    for envelope in found:
        outbox.envelope_check(envelope)
    return [dict(e["data"]) for e in found]


async def close_and_bring_back(client: AsyncClient, manage: str, *, archive_between: bool) -> None:
    status, body = await call(client, "delete", "/leaderboards/cup", manage)
    assert (status, body["active"]) == (200, False)
    if archive_between:
        assert await sync_to_async(archive_services.close_jobs_run)() == 3
    with clock_at(BACK_AT):
        status, body = await call(client, "put", "/leaderboards/cup", manage, CUP)
    assert (status, body["active"]) == (200, True)


@pytest.mark.parametrize("archive_between", [True, False], ids=["archived-before-the-put", "archived-after-it"])
async def test_it_brings_a_board_back_as_a_new_generation_that_loses_no_score(aclient, rally, archive_between):
    manage, submit_key = rally
    status, body = await call(aclient, "put", "/leaderboards/cup", manage, CUP)
    assert status == 200, body
    await submit(aclient, submit_key, "alice", 10)
    await close_and_bring_back(aclient, manage, archive_between=archive_between)

    with clock_at(BACK_AT + dt.timedelta(minutes=1)):
        await submit(aclient, submit_key, "bob", 20)
        ids = await current_ids(aclient)
        assert ids == {
            "daily": f"2026-03-04{GENERATION}",
            "monthly": f"2026-03{GENERATION}",
            "custom": f"season{GENERATION}",
        }
        for window in ("daily", "monthly", "custom"):
            assert await standings(aclient, window) == [("bob", 20)]  # live, rank 1
            assert await pttl(window, ids[window]) == -1  # live: no expiry before its archive
        if not archive_between:  # the closed periods' jobs, due since the DELETE, archive them now
            assert await sync_to_async(archive_services.close_jobs_run)() == 3
        for window, period_id in (("daily", "2026-03-04"), ("monthly", "2026-03"), ("custom", "season")):
            assert await standings(aclient, window, period_id) == [("alice", 10)]  # the archive, for good
            assert 0 < await pttl(window, period_id) <= 8 * 24 * 3600 * 1000  # retained, then gone

    with clock_at(AFTER_SEASON):
        await sync_to_async(archive_services.close_jobs_run)()
        await get_redis().flushdb()  # the archive alone answers now
        for window, first_id in (("daily", "2026-03-04"), ("monthly", "2026-03"), ("custom", "season")):
            assert await standings(aclient, window, first_id) == [("alice", 10)]
            assert await standings(aclient, window, ids[window]) == [("bob", 20)]
        listed = (await aclient.get(f"{API}/leaderboards/cup/periods")).json()["periods"]
    assert sorted((p["period"], p["period_id"]) for p in listed) == sorted(
        [(w, first) for w, first in (("daily", "2026-03-04"), ("monthly", "2026-03"), ("custom", "season"))]
        + list(ids.items())
    )
    archived = await sync_to_async(announced)("period.archived")
    assert sorted((e["window"], e["period_id"], e["ended_early"], e["entrants"]) for e in archived) == sorted(
        [(w, first, True, 1) for w, first in (("daily", "2026-03-04"), ("monthly", "2026-03"), ("custom", "season"))]
        + [(w, period_id, False, 1) for w, period_id in ids.items()]
    )
    # Taken out of play, the board did not end its season: it ends once, at its end, with the
    # generation's final periods.
    (season,) = await sync_to_async(announced)("season.ended")
    finals = {(p["window"], p["period_id"]) for p in season["periods"]}
    assert finals == {("custom", ids["custom"]), ("monthly", ids["monthly"])}  # no score on its last day


async def test_it_refuses_a_generation_id_that_names_no_moment_of_its_period(aclient, rally):
    manage, _ = rally
    assert (await call(aclient, "put", "/leaderboards/cup", manage, CUP))[0] == 200
    for period_id in ("2026-03-04~20260305T000000.000Z", "2026-03-04~yesterday", "2026-03-04~20261340T000000.000Z"):
        response = await aclient.get(f"{API}/leaderboards/cup/daily/{period_id}")
        assert (response.status_code, response.json()["error"]["code"]) == (404, "period_not_found"), period_id


def test_it_keeps_the_longest_period_id_in_the_archives_column():
    # A custom period's id of a later generation; PostgreSQL refused it in varchar(20).
    from archive.models import ArchivedPeriod
    from games import periods

    custom = periods.Period("custom", "2026-11-20T17:00Z", dt.datetime(2026, 11, 20, 17, tzinfo=dt.UTC), None)
    longest = periods._generation(custom, dt.datetime(2026, 11, 21, 12, 5, 0, 250000, tzinfo=dt.UTC)).id
    assert longest == "2026-11-20T17:00Z~20261121T120500.250Z"
    column = ArchivedPeriod._meta.get_field("period_id").max_length
    assert column is not None and len(longest) <= column
