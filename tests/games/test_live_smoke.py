from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from channels.testing.websocket import WebsocketCommunicator

from games import broadcaster, services
from games.config import GameConfig
from leaderboard_site.asgi import application

pytestmark = pytest.mark.django_db(transaction=True)


async def test_it_pushes_standings_after_a_tick(make_game):
    game = await sync_to_async(make_game)("tetris", max_submissions_per_minute=0)
    config = GameConfig.from_model(game, "0")
    ws = WebsocketCommunicator(application, "/ws/games/tetris/", headers=[(b"origin", b"http://127.0.0.1")])
    connected, _ = await ws.connect()
    assert connected
    await ws.send_json_to({"action": "subscribe", "period": "daily", "limit": 2})
    first = await ws.receive_json_from()
    assert (first["type"], first["entries"], first["version"]) == ("standings", [], 0)
    await ws.send_json_to({"action": "follow", "player_ids": ["a"]})
    for player, score in (("a", 5), ("b", 9), ("c", 7)):
        await services.score_submit(game=config, player_id=player, score=score)
    report = await broadcaster.tick(state=broadcaster.BroadcasterState(), games=[config])
    assert report.standings == 4
    messages = [await ws.receive_json_from(timeout=2) for _ in range(2)]
    standings = next(m for m in messages if m["type"] == "standings")
    assert [e["player_id"] for e in standings["entries"]] == ["b", "c"]
    assert standings["version"] == 1
    player = next(m for m in messages if m["type"] == "player")
    assert player["periods"]["daily"]["rank"] == 3
    assert await ws.receive_nothing(timeout=0.3)
    await ws.disconnect()
