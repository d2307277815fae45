from __future__ import annotations

import pytest

from core import apikeys
from tests.conftest import auth

pytestmark = pytest.mark.django_db(transaction=True)


async def test_it_accepts_a_score_and_ranks_it(make_game, aclient):
    from asgiref.sync import sync_to_async

    game = await sync_to_async(make_game)("tetris", mode="best")
    _, raw = await sync_to_async(apikeys.api_key_create)(game=game, name="server")
    response = await aclient.post(
        "/api/v1/games/tetris/leaderboards/main/scores",
        {"player_id": "alice", "score": 120, "display_name": "Alice"},
        content_type="application/json",
        headers=auth(raw),
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["periods"]["all-time"] == {"period_id": "all-time", "score": 120, "rank": 1}
    board = (await aclient.get("/api/v1/games/tetris/leaderboards/main/daily")).json()
    assert board["entries"] == [
        {"rank": 1, "player_id": "alice", "display_name": "Alice", "score": 120, "metadata": None}
    ]
