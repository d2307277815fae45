"""What JSON can read but not carry back is refused at the door: a number that is not finite
(NaN, Infinity, 1e400) or a lone surrogate anywhere in a body, and a season time without its
zone, each with 422 naming its field, changing nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import AsyncClient

from tests.conftest import auth

pytestmark = pytest.mark.django_db(transaction=True)

API = "/api/v1/games/rally"
POINTS = {"name": "Points", "mode": "increment", "order": "desc", "windows": ["daily", "all-time"]}


async def send(client: AsyncClient, method: str, path: str, key: str, raw: str) -> tuple[int, Any]:
    response = await getattr(client, method)(f"{API}{path}", raw, content_type="application/json", headers=auth(key))
    return response.status_code, response.json()


async def test_it_refuses_a_number_json_cannot_carry_and_names_its_field(aclient: AsyncClient, rally: Any) -> None:
    manage, submit = rally
    assert (await send(aclient, "put", "/leaderboards/points", manage, json.dumps(POINTS)))[0] == 200
    # What Python's json.dumps writes by default for these floats, and a number past a double.
    for literal in ("NaN", "Infinity", "-Infinity", "1e400"):
        raw = f'{{"player_id": "ann", "score": 1, "metadata": {{"run": {{"avg_speed": [1.5, {literal}]}}}}}}'
        status, body = await send(aclient, "post", "/leaderboards/points/scores", submit, raw)
        assert (status, body["error"]["code"], body["error"]["field"]) == (422, "invalid", "metadata.run.avg_speed[1]")
        assert "finite" in body["error"]["message"]
        items = [
            {"leaderboard": "points", "player_id": "bob", "score": 2},
            {"leaderboard": "points", "player_id": "cy"},
        ]
        raw = json.dumps({"scores": items}).replace('"cy"}', f'"cy", "score": {literal}}}')
        status, body = await send(aclient, "post", "/scores/batch", submit, raw)
        assert (status, body["error"]["field"]) == (422, "scores[1].score")
    board = (await aclient.get(f"{API}/leaderboards/points/daily")).json()
    assert board["total"] == 0


async def test_it_refuses_a_lone_surrogate_in_a_value_or_a_key(aclient: AsyncClient, rally: Any) -> None:
    manage, submit = rally
    assert (await send(aclient, "put", "/leaderboards/points", manage, json.dumps(POINTS)))[0] == 200
    cases = (
        ('{"player_id": "ann", "score": 1, "metadata": {"note": "a\\ud800b"}}', "metadata.note"),
        ('{"player_id": "ann", "score": 1, "metadata": {"k\\udc00": 1}}', "metadata"),
    )
    for raw, field in cases:
        status, body = await send(aclient, "post", "/leaderboards/points/scores", submit, raw)
        assert (status, body["error"]["field"]) == (422, field), body
        assert "Unicode" in body["error"]["message"]
    # A surrogate pair is a character like any other.
    raw = '{"player_id": "ann", "score": 1, "metadata": {"flag": "\\ud83c\\udfc1"}}'
    status, body = await send(aclient, "post", "/leaderboards/points/scores", submit, raw)
    assert status == 200, body
    board = (await aclient.get(f"{API}/leaderboards/points/daily")).json()
    assert [(e["player_id"], e["metadata"]) for e in board["entries"]] == [("ann", {"flag": "🏁"})]


async def test_it_refuses_a_season_time_without_its_zone(aclient: AsyncClient, rally: Any) -> None:
    manage, _ = rally
    season = {**POINTS, "starts_at": "2020-01-01T00:00:00Z", "ends_at": "2030-02-01T00:00:00"}
    status, body = await send(aclient, "put", "/leaderboards/season", manage, json.dumps(season))
    assert (status, body["error"]["field"]) == (422, "ends_at"), body
    assert (await send(aclient, "put", "/leaderboards/points", manage, json.dumps(POINTS)))[0] == 200
    status, body = await send(aclient, "patch", "/leaderboards/points", manage, '{"starts_at": "2026-03-01T00:00:00"}')
    assert (status, body["error"]["field"]) == (422, "starts_at"), body
    boards = (await aclient.get(API)).json()["leaderboards"]
    assert [(b["slug"], b["starts_at"]) for b in boards] == [("points", None)]
