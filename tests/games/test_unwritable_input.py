"""What JSON can read but not carry back is refused at the door: a number that is not finite
(NaN, Infinity, 1e400), text with a lone surrogate anywhere in a body, text that is no UTF-8, a
body that is no JSON object, and a season time that is no ISO 8601 instant with its zone; each
with its refusal naming its field, changing nothing. The values are the review's catalogue,
tests/bad_inputs.py."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import AsyncClient

from tests.bad_inputs import ANYWHERE, BODIES, KEYS, SEASONS, spliced
from tests.conftest import auth

pytestmark = pytest.mark.django_db(transaction=True)

API = "/api/v1/games/rally"
POINTS = {"name": "Points", "mode": "increment", "order": "desc", "windows": ["daily", "all-time"]}
SUBMISSION = {"player_id": "ann", "score": 1, "metadata": {"run": {"avg_speed": [1.5, 2.5]}}}
BATCH = {
    "scores": [
        {"leaderboard": "points", "player_id": "bob", "score": 2},
        {"leaderboard": "points", "player_id": "cy", "score": 3},
    ]
}


async def send(client: AsyncClient, method: str, path: str, key: str, raw: bytes) -> tuple[int, Any]:
    response = await getattr(client, method)(f"{API}{path}", raw, content_type="application/json", headers=auth(key))
    return response.status_code, response.json()


def refused(answer: tuple[int, Any]) -> tuple[int, str, str | None]:
    status, body = answer
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "field"}, body
    assert body["error"]["message"], body
    return status, body["error"]["code"], body["error"]["field"]


async def test_it_refuses_a_value_json_cannot_carry_wherever_it_stands_and_names_its_field(
    aclient: AsyncClient, rally: Any
) -> None:
    manage, submit = rally
    assert (await send(aclient, "put", "/leaderboards/points", manage, json.dumps(POINTS).encode()))[0] == 200
    for bad in ANYWHERE:
        expected = (bad.refusal.status, bad.refusal.code)
        raw, field = spliced(SUBMISSION, ("metadata", "run", "avg_speed", 1), bad)
        assert refused(await send(aclient, "post", "/leaderboards/points/scores", submit, raw)) == (*expected, field)
        # One bad number fails the whole batch: the parser refuses it before any item is read.
        raw, field = spliced(BATCH, ("scores", 1, "score"), bad)
        assert refused(await send(aclient, "post", "/scores/batch", submit, raw)) == (*expected, field), bad.name
    assert refused(await send(aclient, "post", "/scores/batch", submit, b'{"scores": [NaN]}'))[2] == "scores[0]"
    board = (await aclient.get(f"{API}/leaderboards/points/daily")).json()
    assert board["total"] == 0


async def test_it_refuses_a_lone_surrogate_in_a_key(aclient: AsyncClient, rally: Any) -> None:
    manage, submit = rally
    assert (await send(aclient, "put", "/leaderboards/points", manage, json.dumps(POINTS).encode()))[0] == 200
    for bad in KEYS:
        for path in (("metadata",), ("metadata", "run"), ()):
            raw, field = spliced(SUBMISSION, path, bad)
            answer = refused(await send(aclient, "post", "/leaderboards/points/scores", submit, raw))
            assert answer == (bad.refusal.status, bad.refusal.code, field), bad.name
    # A surrogate pair is a character like any other.
    raw = b'{"player_id": "ann", "score": 1, "metadata": {"flag": "\\ud83c\\udfc1"}}'
    status, body = await send(aclient, "post", "/leaderboards/points/scores", submit, raw)
    assert status == 200, body
    board = (await aclient.get(f"{API}/leaderboards/points/daily")).json()
    assert [(e["player_id"], e["metadata"]) for e in board["entries"]] == [("ann", {"flag": "🏁"})]


async def test_it_refuses_a_season_time_that_is_no_instant_with_its_zone(aclient: AsyncClient, rally: Any) -> None:
    manage, _ = rally
    assert (await send(aclient, "put", "/leaderboards/points", manage, json.dumps(POINTS).encode()))[0] == 200
    for bad in SEASONS:
        expected = (bad.refusal.status, bad.refusal.code, bad.field)
        raw = json.dumps({**POINTS, **bad.settings}).encode()
        assert refused(await send(aclient, "put", "/leaderboards/season", manage, raw)) == expected, bad.name
        raw = json.dumps(bad.settings).encode()
        assert refused(await send(aclient, "patch", "/leaderboards/points", manage, raw)) == expected, bad.name
    boards = (await aclient.get(API)).json()["leaderboards"]
    assert [(b["slug"], b["starts_at"], b["ends_at"]) for b in boards] == [("points", None, None)]


async def test_it_refuses_a_body_that_is_no_json_object_at_every_endpoint_that_takes_one(
    aclient: AsyncClient, rally: Any
) -> None:
    manage, _ = rally
    assert (await send(aclient, "put", "/leaderboards/points", manage, json.dumps(POINTS).encode()))[0] == 200
    endpoints = [
        ("post", "/leaderboards/points/scores"),
        ("post", "/scores/batch"),
        ("post", "/presence"),
        ("put", "/leaderboards/points"),
        ("put", "/leaderboards/new"),
        ("patch", "/leaderboards/points"),
    ]
    for bad in BODIES:
        for method, path in endpoints:
            answer = refused(await send(aclient, method, path, manage, bad.raw))
            assert answer == (bad.refusal.status, bad.refusal.code, None), (bad.name, method, path)
    boards = (await aclient.get(API)).json()["leaderboards"]
    assert [(b["slug"], b["name"]) for b in boards] == [("points", "Points")]
