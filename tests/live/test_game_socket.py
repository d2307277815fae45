"""The live websocket /ws/games/{slug}/ end to end: real Redis, real channel layer, real broadcaster ticks."""

from __future__ import annotations

import json
from typing import Any

import pytest
from channels.layers import get_channel_layer
from channels.testing.websocket import WebsocketCommunicator

from core.config import GameConfig
from games import selectors, services
from leaderboard_site.asgi import application
from live import broadcaster, events
from live.sockets import base as socket_base
from live.sockets import game as game_socket
from presence import selectors as presence_selectors
from tests.live.entries import live_rows
from tests.live.live_helpers import QUIET_SECS, drain, make_config

pytestmark = pytest.mark.django_db(transaction=True)


async def subscribe(ws: WebsocketCommunicator, period: str, limit: int | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"action": "subscribe", "period": period}
    if limit is not None:
        message["limit"] = limit
    await ws.send_json_to(message)
    snapshot = await ws.receive_json_from()
    assert snapshot["type"] == "standings", snapshot
    return snapshot


async def tick(game: GameConfig, state: broadcaster.BroadcasterState | None = None) -> broadcaster.TickReport:
    return await broadcaster.tick(state=state or broadcaster.BroadcasterState(), games=[game])


async def submit(game: GameConfig, *scores: tuple[str, int]) -> None:
    for player_id, score in scores:
        await services.score_submit(game=game, board=game.boards[0], player_id=player_id, score=score)


async def board_rows(game: GameConfig, period: str, limit: int) -> tuple[int, list[dict[str, Any]]]:
    """The board's rows as live messages carry them: with whether each player is online."""
    board = await selectors.leaderboard_page(board=game.boards[0], period=period, limit=limit)
    online = await presence_selectors.online_among(game=game, player_ids=[e.player_id for e in board.entries])
    return board.total, live_rows(board, online)


async def handled(ws: WebsocketCommunicator) -> None:
    """Wait until the socket has handled every message sent before: messages are handled in order."""
    await ws.send_json_to({"action": "barrier"})
    await expect_error(ws, "unknown_action")


async def expect_error(ws: WebsocketCommunicator, code: str) -> None:
    message = await ws.receive_json_from()
    assert message["type"] == "error", message
    assert message["code"] == code, message
    assert message["message"]


# --------------------------------------------------------------------------- subscribe / unsubscribe


async def test_it_answers_a_subscribe_with_a_snapshot_trimmed_to_the_limit(make_game, sockets):
    game = await make_config(make_game)
    await submit(game, *((f"p{i}", i) for i in range(8)))
    ws = await sockets.open()

    snapshot = await subscribe(ws, "daily", limit=3)

    total, rows = await board_rows(game, "daily", 3)
    assert snapshot["period"] == "daily"
    assert snapshot["period_id"] == (await selectors.leaderboard_page(board=game.boards[0], period="daily")).period.id
    assert snapshot["resets_at"] is not None
    assert (snapshot["version"], snapshot["total"], snapshot["entries"]) == (0, total, rows)
    assert [e["player_id"] for e in snapshot["entries"]] == ["p7", "p6", "p5"]
    assert await ws.receive_nothing(timeout=QUIET_SECS)


async def test_it_uses_25_rows_when_no_limit_is_given(make_game, sockets):
    game = await make_config(make_game, periods_kept=["all-time"])
    await submit(game, *((f"p{i:02}", i) for i in range(30)))
    ws = await sockets.open()

    snapshot = await subscribe(ws, "all-time")

    assert len(snapshot["entries"]) == game_socket.DEFAULT_LIMIT
    assert snapshot["total"] == 30
    assert snapshot["resets_at"] is None


async def test_it_answers_with_the_boards_current_version(make_game, sockets):
    game = await make_config(make_game)
    state = broadcaster.BroadcasterState()
    for round_ in range(3):
        await submit(game, (f"p{round_}", round_))
        await tick(game, state)

    snapshot = await subscribe(await sockets.open(), "daily", limit=100)

    assert snapshot["version"] == 3
    assert (snapshot["total"], snapshot["entries"]) == await board_rows(game, "daily", 100)


async def test_it_serves_several_periods_on_one_socket(make_game, sockets):
    game = await make_config(make_game, periods_kept=["daily", "all-time"])
    await submit(game, *((f"p{i}", i) for i in range(6)))
    ws = await sockets.open()

    daily = await subscribe(ws, "daily", limit=2)
    all_time = await subscribe(ws, "all-time", limit=4)
    assert (daily["period"], len(daily["entries"])) == ("daily", 2)
    assert (all_time["period"], all_time["period_id"], len(all_time["entries"])) == ("all-time", "all-time", 4)

    await submit(game, ("top", 100))
    report = await tick(game)

    assert report.standings == 2
    pushed = {m["period"]: m for m in await drain(ws)}
    assert set(pushed) == {"daily", "all-time"}
    assert [len(pushed["daily"]["entries"]), len(pushed["all-time"]["entries"])] == [2, 4]
    for message in pushed.values():
        assert (message["type"], message["version"], message["total"]) == ("standings", 1, 7)
        assert message["entries"][0]["player_id"] == "top"


async def test_it_changes_the_limit_when_subscribed_again(make_game, sockets):
    game = await make_config(make_game)
    await submit(game, *((f"p{i}", i) for i in range(10)))
    ws = await sockets.open()
    assert len((await subscribe(ws, "daily", limit=5))["entries"]) == 5

    again = await subscribe(ws, "daily", limit=2)
    assert len(again["entries"]) == 2

    await submit(game, ("top", 100))
    await tick(game)
    # One group membership: the board's update arrives once, with the new limit.
    (pushed,) = await drain(ws)
    assert [e["player_id"] for e in pushed["entries"]] == ["top", "p9"]


async def test_it_stops_standings_of_an_unsubscribed_period(make_game, sockets):
    game = await make_config(make_game, periods_kept=["daily", "all-time"])
    ws = await sockets.open()
    await subscribe(ws, "daily")
    await subscribe(ws, "all-time")

    await ws.send_json_to({"action": "unsubscribe", "period": "daily"})
    await handled(ws)
    await submit(game, ("a", 1))
    report = await tick(game)

    assert report.standings == 2
    assert [m["period"] for m in await drain(ws)] == ["all-time"]


async def test_it_ignores_an_unsubscribe_of_a_period_not_subscribed(make_game, sockets):
    game = await make_config(make_game, periods_kept=["daily", "all-time"])
    ws = await sockets.open()
    await subscribe(ws, "all-time")

    await ws.send_json_to({"action": "unsubscribe", "period": "daily"})
    await handled(ws)
    await submit(game, ("a", 1))
    await tick(game)

    assert [m["period"] for m in await drain(ws)] == ["all-time"]


# --------------------------------------------------------------------------- follow


async def test_it_answers_a_follow_with_each_followed_player_on_a_subscribed_board(make_game, sockets):
    game = await make_config(make_game, periods_kept=["daily", "weekly", "all-time"])
    await submit(game, ("a", 30), ("b", 20), ("c", 10))
    ws = await sockets.open()
    await subscribe(ws, "daily")
    await subscribe(ws, "all-time")

    await ws.send_json_to({"action": "follow", "player_ids": ["c", "a", "nobody"]})

    players = {m["player_id"]: m for m in await drain(ws)}
    assert set(players) == {"a", "c"}
    daily_id = (await selectors.leaderboard_page(board=game.boards[0], period="daily")).period.id
    assert players["c"] == {
        "type": "player",
        "leaderboard": "main",
        "player_id": "c",
        "display_name": "c",
        "periods": {
            "daily": {"period_id": daily_id, "score": 10, "shown": "10", "rank": 3, "total": 3, "percentile": 0.0},
            "all-time": {"period_id": "all-time", "score": 10, "shown": "10", "rank": 3, "total": 3, "percentile": 0.0},
        },
    }
    assert players["a"]["periods"]["all-time"]["rank"] == 1


async def test_it_sends_followed_players_when_a_board_is_subscribed_after_the_follow(make_game, sockets):
    game = await make_config(make_game, periods_kept=["daily", "all-time"])
    await submit(game, ("a", 30), ("b", 20))
    ws = await sockets.open()
    await ws.send_json_to({"action": "follow", "player_ids": ["b"]})
    # Nothing is subscribed yet, so there is nothing to say about b.
    assert await ws.receive_nothing(timeout=QUIET_SECS)

    await subscribe(ws, "all-time")

    (player,) = await drain(ws)
    assert player["player_id"] == "b"
    assert player["periods"] == {
        "all-time": {"period_id": "all-time", "score": 20, "shown": "20", "rank": 2, "total": 2, "percentile": 0.0}
    }


async def test_it_pushes_a_followed_player_who_moved_with_only_the_subscribed_periods(make_game, sockets):
    game = await make_config(make_game)  # all four periods
    await submit(game, ("a", 30), ("b", 20))
    ws = await sockets.open()
    await subscribe(ws, "all-time")
    await ws.send_json_to({"action": "follow", "player_ids": ["b"]})
    await drain(ws)

    await submit(game, ("c", 99))
    report = await tick(game)

    assert report.standings == 4
    messages = await drain(ws)
    assert [m["type"] for m in messages] == ["standings", "player"]
    assert messages[1]["player_id"] == "b"
    assert messages[1]["periods"] == {
        "all-time": {"period_id": "all-time", "score": 20, "shown": "20", "rank": 3, "total": 3, "percentile": 0.0}
    }


async def test_it_sends_no_player_message_for_a_player_this_socket_does_not_follow(make_game, sockets):
    game = await make_config(make_game, periods_kept=["all-time"])
    await submit(game, ("a", 30), ("b", 20))
    follows_a, follows_b, follows_nothing = await sockets.open(), await sockets.open(), await sockets.open()
    for ws, player_ids in ((follows_a, ["a"]), (follows_b, ["b"]), (follows_nothing, [])):
        await subscribe(ws, "all-time")
        if player_ids:
            await ws.send_json_to({"action": "follow", "player_ids": player_ids})
            await drain(ws)

    await submit(game, ("c", 99))
    report = await tick(game)

    assert report.players == 2
    received = {name: await drain(ws) for name, ws in (("a", follows_a), ("b", follows_b), ("-", follows_nothing))}
    assert [(m["type"], m.get("player_id")) for m in received["a"]] == [("standings", None), ("player", "a")]
    assert [(m["type"], m.get("player_id")) for m in received["b"]] == [("standings", None), ("player", "b")]
    assert [m["type"] for m in received["-"]] == ["standings"]


async def test_it_sends_no_player_message_to_a_socket_with_no_subscribed_board(make_game, sockets):
    game = await make_config(make_game, periods_kept=["all-time"])
    await submit(game, ("a", 30))
    ws = await sockets.open()
    await ws.send_json_to({"action": "follow", "player_ids": ["a"]})
    await handled(ws)

    await submit(game, ("c", 99))
    report = await tick(game)

    assert report.players == 1
    assert await ws.receive_nothing(timeout=QUIET_SECS)


async def test_it_refuses_to_follow_more_than_50_players(make_game, sockets):
    await make_config(make_game)
    ws = await sockets.open()

    await ws.send_json_to({"action": "follow", "player_ids": [f"p{i}" for i in range(game_socket.MAX_FOLLOWED + 1)]})
    await expect_error(ws, "invalid")

    await ws.send_json_to({"action": "follow", "player_ids": [f"p{i}" for i in range(30)]})
    # Following again counts each player once.
    await ws.send_json_to({"action": "follow", "player_ids": [f"p{i}" for i in range(game_socket.MAX_FOLLOWED)]})
    assert await ws.receive_nothing(timeout=QUIET_SECS)
    await ws.send_json_to({"action": "follow", "player_ids": ["one-more"]})
    await expect_error(ws, "invalid")


async def test_it_caps_the_board_windows_a_socket_subscribes_to(make_game, sockets, monkeypatch):
    monkeypatch.setattr(game_socket, "SUBSCRIPTIONS_MAX", 2)
    await make_config(make_game, periods_kept=["daily", "weekly", "all-time"])
    ws = await sockets.open()
    await subscribe(ws, "daily")
    await subscribe(ws, "weekly")

    await ws.send_json_to({"action": "subscribe", "period": "all-time"})
    message = await ws.receive_json_from()
    assert (message["type"], message["code"]) == ("error", "invalid")
    assert "at most 2 board windows" in message["message"]
    # Subscribing again to one it has is a change of limit, not one more; after an unsubscribe
    # there is room again.
    assert len((await subscribe(ws, "daily", limit=3))["entries"]) <= 3
    await ws.send_json_to({"action": "unsubscribe", "period": "weekly"})
    assert (await subscribe(ws, "all-time"))["period"] == "all-time"


async def test_it_refuses_an_unknown_board_without_listing_the_games_boards(make_game, sockets):
    await make_config(make_game)
    ws = await sockets.open()
    await ws.send_json_to({"action": "subscribe", "leaderboard": "nope", "period": "daily"})
    message = await ws.receive_json_from()
    assert (message["type"], message["code"]) == ("error", "invalid")
    assert "main" not in message["message"] and "leaderboard" in message["message"]


@pytest.mark.parametrize(
    "player_ids",
    [None, "a", {"a": 1}, [1], [None], [""], ["has space"], ["x" * 65], ["ok", "bad/slash"], [True]],
    ids=repr,
)
async def test_it_refuses_invalid_player_ids(make_game, sockets, player_ids):
    game = await make_config(make_game, periods_kept=["all-time"])
    await submit(game, ("ok", 1))
    ws = await sockets.open()
    await subscribe(ws, "all-time")

    await ws.send_json_to({"action": "follow", "player_ids": player_ids})

    await expect_error(ws, "invalid")
    assert await ws.receive_nothing(timeout=QUIET_SECS)


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        ("{not json", "malformed"),
        ("", "malformed"),
        ("[1, 2]", "malformed"),
        ('"subscribe"', "malformed"),
        ("null", "malformed"),
        ("{}", "unknown_action"),
        ('{"action": "publish", "period": "daily"}', "unknown_action"),
        ('{"action": "subscribe", "period": "yearly"}', "invalid"),
        ('{"action": "subscribe"}', "invalid"),
        ('{"action": "subscribe", "period": 1}', "invalid"),
        ('{"action": "subscribe", "period": "weekly"}', "invalid"),  # a period this game does not keep
        ('{"action": "unsubscribe", "period": "yearly"}', "invalid"),
        ('{"action": "subscribe", "period": "daily", "limit": 0}', "invalid"),
        ('{"action": "subscribe", "period": "daily", "limit": 101}', "invalid"),
        ('{"action": "subscribe", "period": "daily", "limit": -1}', "invalid"),
        ('{"action": "subscribe", "period": "daily", "limit": "5"}', "invalid"),
        ('{"action": "subscribe", "period": "daily", "limit": true}', "invalid"),
        ('{"action": "subscribe", "period": "daily", "limit": 2.5}', "invalid"),
        ('{"action": "subscribe", "period": "daily", "limit": null}', "invalid"),
    ],
)
async def test_it_answers_a_bad_message_with_an_error_and_stays_open(make_game, sockets, frame, code):
    await make_config(make_game, periods_kept=["daily", "all-time"])
    ws = await sockets.open()

    if frame:
        await ws.send_to(text_data=frame)
    else:
        # send_to() cannot send an empty text frame.
        await ws.send_input({"type": "websocket.receive", "text": ""})

    await expect_error(ws, code)
    assert (await subscribe(ws, "daily", limit=1))["version"] == 0


# Each of these once raised out of the consumer and killed the socket instead of answering with an error.
@pytest.mark.parametrize(
    ("frame", "code"),
    [
        ('{"action": ["subscribe"]}', "unknown_action"),  # TypeError: unhashable type: 'list'
        ('{"action": {"subscribe": 1}}', "unknown_action"),  # TypeError: unhashable type: 'dict'
        ("[" * 2000 + "]" * 2000, "malformed"),  # RecursionError from json.loads, not a ValueError
    ],
    ids=["list-action", "object-action", "deep-nesting"],
)
async def test_it_answers_a_pathological_message_with_an_error_and_stays_open(make_game, sockets, frame, code):
    await make_config(make_game)
    ws = await sockets.open()

    await ws.send_to(text_data=frame)

    await expect_error(ws, code)
    assert (await subscribe(ws, "daily", limit=1))["version"] == 0


async def test_it_answers_a_binary_frame_with_an_error(make_game, sockets):
    await make_config(make_game)
    ws = await sockets.open()

    await ws.send_to(bytes_data=json.dumps({"action": "subscribe", "period": "daily"}).encode())

    await expect_error(ws, "malformed")
    await subscribe(ws, "daily")


async def test_it_accepts_a_frame_of_exactly_4_kib(make_game, sockets):
    await make_config(make_game)
    ws = await sockets.open()
    # Padded with whitespace: a field the server does not know would be refused.
    frame = json.dumps({"action": "subscribe", "period": "daily"})
    frame = frame[:-1] + " " * (socket_base.MAX_FRAME_BYTES - len(frame)) + "}"
    assert len(frame.encode()) == socket_base.MAX_FRAME_BYTES

    await ws.send_to(text_data=frame)

    assert (await ws.receive_json_from())["type"] == "standings"


@pytest.mark.parametrize(
    "frame",
    [
        {"text_data": json.dumps({"action": "subscribe", "period": "daily", "pad": "x" * 4096})},
        # Fewer than 4096 characters, more than 4096 bytes.
        {"text_data": json.dumps({"action": "subscribe", "period": "daily", "pad": "é" * 2100}, ensure_ascii=False)},
        {"bytes_data": b"x" * 4097},
    ],
    ids=["ascii", "multibyte", "binary"],
)
async def test_it_closes_with_1009_on_a_frame_over_4_kib(make_game, sockets, frame):
    await make_config(make_game)
    ws = await sockets.open()

    await ws.send_to(**frame)

    assert await ws.receive_output() == {"type": "websocket.close", "code": 1009}


# --------------------------------------------------------------------------- connecting


@pytest.mark.parametrize("origin", [b"http://evil.example", b"http://127.0.0.1.evil.example", None])
async def test_it_refuses_a_foreign_or_missing_origin(make_game, sockets, origin):
    await make_config(make_game)

    connected, _ = await sockets.communicator(origin=origin).connect()

    assert not connected


async def test_it_accepts_localhost_as_an_origin(make_game, sockets):
    await make_config(make_game)

    connected, _ = await sockets.communicator(origin=b"http://localhost:8000").connect()

    assert connected


@pytest.mark.parametrize("slug", ["no-such-game", "x" * 60])
async def test_it_closes_with_4404_for_an_unknown_game(make_game, sockets, slug):
    await make_config(make_game)
    communicator = sockets.communicator(slug)

    # Accepted, then closed: a browser sees 4404 (a refused handshake would read as 1006).
    assert await communicator.connect() == (True, None)
    assert await communicator.receive_output() == {"type": "websocket.close", "code": socket_base.CLOSE_NO_SUCH_GAME}


@pytest.mark.parametrize("path", ["/ws/games/tetris", "/ws/nowhere/", "/ws/games/Bad_Slug!/"])
async def test_it_refuses_websocket_paths_it_does_not_serve(make_game, path):
    from channels.testing.websocket import WebsocketCommunicator

    communicator = WebsocketCommunicator(application, path, headers=[(b"origin", b"http://127.0.0.1")])
    assert (await communicator.connect())[0] is False


async def test_it_closes_the_watchers_of_a_board_with_1012_when_asked(make_game, sockets):
    await make_config(make_game, periods_kept=["daily", "all-time"])
    daily_watcher, all_time_watcher = await sockets.open(), await sockets.open()
    await subscribe(daily_watcher, "daily")
    await subscribe(all_time_watcher, "all-time")

    await events.send_reconnect("tetris.main", "daily")

    assert await daily_watcher.receive_output(timeout=2) == {"type": "websocket.close", "code": 1012}
    assert await all_time_watcher.receive_nothing(timeout=QUIET_SECS)


async def test_it_does_not_close_a_socket_that_unsubscribed(make_game, sockets):
    await make_config(make_game)
    ws = await sockets.open()
    await subscribe(ws, "daily")
    await ws.send_json_to({"action": "unsubscribe", "period": "daily"})
    await handled(ws)

    await events.send_reconnect("tetris.main", "daily")

    assert await ws.receive_nothing(timeout=QUIET_SECS)


# --------------------------------------------------------------------------- versions and payloads


async def test_it_never_sends_a_version_the_socket_already_has(make_game, sockets):
    game = await make_config(make_game, periods_kept=["all-time"])
    state = broadcaster.BroadcasterState()
    for round_ in range(3):
        await submit(game, (f"p{round_}", round_))
        await tick(game, state)
    ws = await sockets.open()
    snapshot = await subscribe(ws, "all-time", limit=2)
    assert snapshot["version"] == 3

    layer = get_channel_layer()
    group = events.board_group("tetris.main", "all-time")
    entries = [
        {
            "rank": i + 1,
            "player_id": f"x{i}",
            "display_name": f"x{i}",
            "score": 100 - i,
            "shown": str(100 - i),
            "metadata": None,
            "online": False,
        }
        for i in range(5)
    ]
    stale = {**snapshot, "entries": entries}
    # What a slower broadcaster's late send of an older snapshot would look like.
    for version in (3, 2, 0):
        await layer.group_send(group, {"type": "live.event", "group": group, "payload": {**stale, "version": version}})
    await layer.group_send(group, {"type": "live.event", "group": group, "payload": {**stale, "version": 4}})

    # Pub/sub keeps one publisher's order, so the newer one arriving first shows the older ones were dropped.
    newer = await ws.receive_json_from(timeout=2)
    assert newer["version"] == 4
    assert newer["entries"] == entries[:2]
    assert await ws.receive_nothing(timeout=QUIET_SECS)
    await layer.group_send(group, {"type": "live.event", "group": group, "payload": {**stale, "version": 4}})
    assert await ws.receive_nothing(timeout=QUIET_SECS)


async def test_it_accepts_version_1_of_a_new_period_after_a_reset(make_game, sockets):
    game = await make_config(make_game, periods_kept=["daily"])
    state = broadcaster.BroadcasterState()
    for round_ in range(2):
        await submit(game, (f"p{round_}", round_))
        await tick(game, state)
    ws = await sockets.open()
    snapshot = await subscribe(ws, "daily")
    assert snapshot["version"] == 2

    layer = get_channel_layer()
    group = events.board_group("tetris.main", "daily")
    reset = {"type": "reset", "leaderboard": "main", "period": "daily", "period_id": "2099-01-01", "resets_at": None}
    await layer.group_send(group, {"type": "live.event", "group": group, "payload": reset})
    fresh = {**snapshot, "period_id": "2099-01-01", "version": 1, "total": 0, "entries": []}
    await layer.group_send(group, {"type": "live.event", "group": group, "payload": fresh})

    assert await drain(ws) == [reset, fresh]


async def test_it_skips_standings_that_change_nothing_the_socket_shows(make_game, sockets):
    game = await make_config(make_game, periods_kept=["all-time"])
    await submit(game, ("a", 30), ("b", 20), ("c", 5))
    top_2, top_10 = await sockets.open(), await sockets.open()
    await subscribe(top_2, "all-time", limit=2)
    await subscribe(top_10, "all-time", limit=10)

    await submit(game, ("c", 10))  # moves below the top 2; the total stays
    assert (await tick(game)).standings == 1

    assert await top_2.receive_nothing(timeout=QUIET_SECS)
    (seen,) = await drain(top_10)
    assert (seen["version"], seen["entries"][2]["score"]) == (1, 10)

    await submit(game, ("c", 25))
    await tick(game)
    (seen,) = await drain(top_2)
    assert (seen["version"], [e["player_id"] for e in seen["entries"]]) == (2, ["a", "c"])


# A standings message of the period that just ended, sent by a broadcaster that snapshotted it
# just before midnight, can arrive after another broadcaster's reset: the socket must drop it
# rather than show the old board under the new period and then skip the new board's versions.
async def test_it_drops_a_late_standings_of_the_previous_period_after_a_reset(make_game, sockets):
    game = await make_config(make_game, periods_kept=["daily"])
    state = broadcaster.BroadcasterState()
    for round_ in range(2):
        await submit(game, (f"p{round_}", round_))
        await tick(game, state)
    ws = await sockets.open()
    snapshot = await subscribe(ws, "daily")
    layer = get_channel_layer()
    group = events.board_group("tetris.main", "daily")
    reset = {"type": "reset", "leaderboard": "main", "period": "daily", "period_id": "2099-01-01", "resets_at": None}
    late = {**snapshot, "version": 3, "entries": [], "total": 9}
    fresh = {**snapshot, "period_id": "2099-01-01", "version": 1, "total": 0, "entries": []}

    for payload in (reset, late, fresh):
        await layer.group_send(group, {"type": "live.event", "group": group, "payload": payload})

    assert await drain(ws) == [reset, fresh]


async def test_it_sends_display_names_as_raw_strings(make_game, sockets):
    game = await make_config(make_game, periods_kept=["all-time"])
    name = "<script>alert('x')</script> & \"Bob\""
    await services.score_submit(game=game, board=game.boards[0], player_id="bob", score=5, display_name=name)
    ws = await sockets.open()

    snapshot = await subscribe(ws, "all-time")
    await ws.send_json_to({"action": "follow", "player_ids": ["bob"]})
    followed = await ws.receive_json_from()
    await services.score_submit(game=game, board=game.boards[0], player_id="bob", score=6)
    await tick(game)
    pushed = await drain(ws)

    assert snapshot["entries"][0]["display_name"] == name
    assert followed["display_name"] == name
    assert [m["type"] for m in pushed] == ["standings", "player"]
    assert pushed[0]["entries"][0]["display_name"] == name
    assert pushed[1]["display_name"] == name
