"""Exports of a period (GET …/{period}/{period_id}/export): the same entries as the API's pages,
in the same order, from Redis while the period is open and from the archive once it is closed,
streamed in chunks; every refusal answered before the first byte."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from archive import exports
from core import apikeys, config
from core import services as core_services
from core.clock import now as clock_now
from core.models import Game
from core.redis import get_redis
from games import periods, services
from tests.archive.test_archived_reads import ODD_IDS, archive_period, fill, new_game, tied_scores
from tests.conftest import auth

pytestmark = pytest.mark.django_db(transaction=True)

# Small chunks, so that tie groups and pages straddle them.
CHUNK_ROWS = 7


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(exports, "EXPORT_CHUNK_ROWS", CHUNK_ROWS)


async def key_of(game: Game) -> dict[str, str]:
    _, raw = await sync_to_async(apikeys.api_key_create)(game=game, name="exports")
    return auth(raw)


async def download(aclient, path: str, headers: dict[str, str]) -> tuple[Any, bytes]:
    response = await aclient.get(path, headers=headers)
    if not response.streaming:
        return response, response.content
    return response, b"".join([chunk async for chunk in response.streaming_content])


async def every_page(aclient, base: str) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    while True:
        page = (await aclient.get(f"{base}?offset={len(entries)}&limit=50")).json()
        entries += page["entries"]
        if len(entries) >= page["total"]:
            return entries


def reference_order(scores: dict[str, int]) -> list[tuple[int, str, int]]:
    """(rank, player, score), best first: competition ranks, ties by player id in byte order."""
    ordered = sorted(scores.items(), key=lambda item: (-item[1], item[0].encode()))
    return [(1 + sum(1 for s in scores.values() if s > score), player, score) for player, score in ordered]


async def test_it_exports_the_pages_entries_from_redis_and_the_same_bytes_from_the_archive(make_game, aclient):
    game = await new_game(make_game)
    headers = await key_of(game)
    at = clock_now() - dt.timedelta(days=3)
    scores = tied_scores(60)
    await fill(game, at, scores, names={"alice": 'Alice, "the" first', "Zed": "Zed ☃"})
    day = periods.current("daily", "UTC", at).id
    base = f"/api/v1/games/tetris/leaderboards/main/daily/{day}"
    pages = await every_page(aclient, base)

    response, live_csv = await download(aclient, f"{base}/export?format=csv", headers)
    _, live_jsonl = await download(aclient, f"{base}/export?format=jsonl", headers)

    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == f'attachment; filename="tetris-main-daily-{day}.csv"'
    rows = list(csv.DictReader(io.StringIO(live_csv.decode())))
    assert [(int(r["rank"]), r["player_id"], int(r["score"])) for r in rows] == reference_order(scores)
    assert [(int(r["rank"]), r["player_id"], r["display_name"]) for r in rows] == [
        (e["rank"], e["player_id"], e["display_name"]) for e in pages
    ]
    lines = [json.loads(line) for line in live_jsonl.decode().splitlines()]
    assert [(line["rank"], line["player_id"], line["score"]) for line in lines] == reference_order(scores)

    await archive_period(game, "daily", day)
    await get_redis().flushdb()
    config.invalidate()

    assert (await download(aclient, f"{base}/export?format=csv", headers))[1] == live_csv
    assert (await download(aclient, f"{base}/export?format=jsonl", headers))[1] == live_jsonl


async def test_it_reads_a_tie_longer_than_a_chunk_from_the_archive_in_byte_order(make_game, aclient):
    game = await new_game(make_game)
    headers = await key_of(game)
    at = clock_now() - dt.timedelta(days=3)
    tied = {player_id: 5 for player_id in [*ODD_IDS, *(f"t{i:02d}" for i in range(20))]}
    await fill(game, at, tied)
    day = periods.current("daily", "UTC", at).id
    await archive_period(game, "daily", day)
    await get_redis().flushdb()

    _, body = await download(aclient, f"/api/v1/games/tetris/leaderboards/main/daily/{day}/export", headers)

    rows = list(csv.DictReader(io.StringIO(body.decode())))
    assert [(r["rank"], r["player_id"]) for r in rows] == [("1", p) for p in sorted(tied, key=str.encode)]


async def test_it_writes_names_as_text_formats_scores_and_keeps_subscores_and_metadata(make_game, aclient):
    game = await new_game(make_game, score_format="time_ms", order="asc", ties="subscore")
    headers = await key_of(game)
    game_config = await config.get_game("tetris")
    assert game_config is not None
    board = game_config.boards[0]
    await services.score_submit(
        game=game_config,
        board=board,
        player_id="ada",
        score=81999,
        subscore=3,
        display_name="=HYPERLINK(1)",
        metadata={"car": "red"},
    )
    await services.score_submit(game=game_config, board=board, player_id="bob", score=90000, display_name="Bob")
    base = "/api/v1/games/tetris/leaderboards/main/daily/current/export"

    _, body = await download(aclient, base, headers)
    _, lines = await download(aclient, f"{base}?format=jsonl", headers)

    assert body.decode().split("\r\n") == [
        "rank,player_id,display_name,score,shown,subscore,metadata",
        '1,ada,\'=HYPERLINK(1),81999,1:21.999,3,"{""car"":""red""}"',
        "2,bob,Bob,90000,1:30.000,0,",
        "",
    ]
    first = json.loads(lines.decode().splitlines()[0])
    assert first == {
        "rank": 1,
        "player_id": "ada",
        "display_name": "=HYPERLINK(1)",
        "score": 81999,
        "shown": "1:21.999",
        "subscore": 3,
        "metadata": {"car": "red"},
    }


async def test_it_names_the_current_period_by_its_id_in_the_file(make_game, aclient):
    game = await new_game(make_game)
    headers = await key_of(game)
    today = periods.current("daily", "UTC", clock_now()).id

    response, body = await download(
        aclient, "/api/v1/games/tetris/leaderboards/main/daily/current/export?format=jsonl", headers
    )

    assert response["Content-Type"] == "application/jsonl; charset=utf-8"
    assert response["Content-Disposition"] == f'attachment; filename="tetris-main-daily-{today}.jsonl"'
    assert body == b""


@pytest.mark.parametrize(
    ("path", "status", "code"),
    [
        ("main/daily/current/export?format=xlsx", 422, "invalid"),
        ("main/yearly/current/export", 404, "period_not_found"),
        ("main/daily/2001-01-01/export", 404, "period_not_found"),
        ("main/daily/not-a-day/export", 404, "period_not_found"),
        ("nope/daily/current/export", 404, "board_not_found"),
    ],
)
async def test_it_refuses_a_bad_export_with_an_error_before_any_byte(make_game, aclient, path, status, code):
    game = await new_game(make_game)
    headers = await key_of(game)

    response, body = await download(aclient, f"/api/v1/games/tetris/leaderboards/{path}", headers)

    assert (response.status_code, json.loads(body)["error"]["code"]) == (status, code)


async def test_it_asks_for_a_key_of_the_game(make_game, aclient):
    await new_game(make_game)
    other = await sync_to_async(core_services.game_create)(slug="other", name="Other")
    path = "/api/v1/games/tetris/leaderboards/main/daily/current/export"

    without, _ = await download(aclient, path, {})
    wrong, _ = await download(aclient, path, await key_of(other))

    assert (without.status_code, without.json()["error"]["code"]) == (401, "missing_api_key")
    assert (wrong.status_code, wrong.json()["error"]["code"]) == (403, "wrong_game")
