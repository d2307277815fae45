"""The presence endpoints: a game server's report (API key, rate limit, JSON errors that
change nothing) and the public reads (paging, order, names, watching, one player)."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from asgiref.sync import sync_to_async

from core import apikeys
from core.clock import now as clock_now
from core.models import ApiKey, Game
from games import services as game_services
from presence import services
from tests.conftest import auth, clock_at
from tests.presence.conftest import redis_state

pytestmark = pytest.mark.django_db(transaction=True)

URL = "/api/v1/games/tetris/presence"


@pytest.fixture
async def game(presence_game):
    return await presence_game("tetris")


@pytest.fixture
async def key(game):
    model = await Game.objects.aget(slug="tetris")
    _, raw = await sync_to_async(apikeys.api_key_create)(game=model, name="server")
    return raw


async def post(aclient, raw_key, body, url=URL):
    data = body if isinstance(body, (str, bytes)) else json.dumps(body)
    headers = auth(raw_key) if raw_key else {}
    return await aclient.post(url, data, content_type="application/json", headers=headers)


def error_of(response):
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message", "field"}
    assert body["error"]["message"]
    return body["error"]


def when(text):
    return dt.datetime.fromisoformat(text)


def ms(moment: dt.datetime) -> dt.datetime:
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


# --------------------------------------------------------------------------- POST


async def test_it_takes_a_report_and_answers_with_counts_and_rate_headers(aclient, game, key):
    response = await post(aclient, key, {"online": ["a", "b"]})
    assert response.status_code == 200
    assert response.json() == {"online": 2, "offline": 0, "joined": 2, "left": 0}
    assert response["RateLimit-Policy"].startswith('"api-key";q=')
    assert response["RateLimit"].startswith('"api-key";r=')

    response = await post(aclient, key, {"online": ["b", "c"], "offline": ["a", "never-seen"]})
    assert response.json() == {"online": 2, "offline": 2, "joined": 1, "left": 1}
    page = (await aclient.get(URL)).json()
    assert (page["online"], sorted(p["player_id"] for p in page["players"])) == (2, ["b", "c"])
    assert (await post(aclient, key, {})).json() == {"online": 0, "offline": 0, "joined": 0, "left": 0}


@pytest.mark.parametrize(
    ("header", "status", "code"),
    [
        (None, 401, "missing_api_key"),
        ("Basic abc", 401, "missing_api_key"),
        ("Bearer nonsense", 401, "invalid_api_key"),
        ("Bearer lbk_00000000_secret", 401, "invalid_api_key"),
    ],
)
async def test_it_refuses_a_missing_or_unknown_key_and_changes_nothing(aclient, game, key, header, status, code):
    before = await redis_state()
    headers = {"Authorization": header} if header else {}
    response = await aclient.post(URL, json.dumps({"online": ["a"]}), content_type="application/json", headers=headers)
    assert response.status_code == status
    assert error_of(response)["code"] == code
    assert await redis_state() == before


async def test_it_refuses_a_key_of_another_game(aclient, game, key, presence_game):
    await presence_game("chess")
    before = await redis_state()
    response = await post(aclient, key, {"online": ["a"]}, url="/api/v1/games/chess/presence")
    assert response.status_code == 403
    assert error_of(response)["code"] == "wrong_game"
    assert await redis_state() == before


async def test_it_refuses_a_revoked_key(aclient, game, key):
    assert (await post(aclient, key, {"online": ["a"]})).status_code == 200
    api_key = await ApiKey.objects.aget(prefix=key.split("_")[1])
    await sync_to_async(apikeys.api_key_revoke)(api_key=api_key)
    before = await redis_state("presence:*")
    response = await post(aclient, key, {"offline": ["a"]})
    assert response.status_code == 403
    assert error_of(response)["code"] == "revoked_api_key"
    assert await redis_state("presence:*") == before


async def test_it_refuses_reports_for_an_inactive_game(aclient, game, key):
    model = await Game.objects.aget(slug="tetris")
    model.active = False
    await sync_to_async(model.save)()
    before = await redis_state("presence:*")
    response = await post(aclient, key, {"online": ["a"]})
    assert response.status_code == 403
    assert error_of(response)["code"] == "game_inactive"
    assert await redis_state("presence:*") == before


async def test_it_answers_404_json_for_an_unknown_game(aclient, game, key):
    response = await post(aclient, key, {"online": ["a"]}, url="/api/v1/games/nope/presence")
    assert response.status_code == 404
    assert error_of(response)["code"] == "game_not_found"
    for url in ("/api/v1/games/nope/presence", "/api/v1/games/nope/presence/a"):
        response = await aclient.get(url)
        assert response.status_code == 404
        assert error_of(response)["code"] == "game_not_found"


async def test_it_rate_limits_reports_like_scores(aclient, game):
    model = await Game.objects.aget(slug="tetris")
    _, raw = await sync_to_async(apikeys.api_key_create)(game=model, name="slow", requests_per_minute=2)
    for _ in range(2):
        assert (await post(aclient, raw, {"online": ["a"]})).status_code == 200
    before = await redis_state()
    response = await post(aclient, raw, {"offline": ["a"]})
    assert response.status_code == 429
    assert error_of(response)["code"] == "rate_limited"
    assert int(response["Retry-After"]) >= 1
    assert await redis_state() == before


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({"online": ["a", "b", "c", "bad id"]}, {"online.3", "online[3]"}),
        ({"offline": ["x" * 65]}, {"offline.0", "offline[0]"}),
        ({"online": [""]}, {"online.0", "online[0]"}),
        ({"online": [7]}, {"online.0", "online[0]"}),
        ({"online": [None]}, {"online.0", "online[0]"}),
        ({"online": ["a\n"]}, {"online.0", "online[0]"}),
        ({"online": "a"}, {"online"}),
        ({"online": None}, {"online"}),
        ({"online": {"a": 1}}, {"online"}),
        ({"online": ["a"], "offline": ["a"]}, {"offline"}),
        ({"online": [f"p{i}" for i in range(1001)]}, {"online"}),
        ({"offline": [f"p{i}" for i in range(1001)]}, {"offline"}),
        ({"online": [f"p{i}" for i in range(600)], "offline": [f"q{i}" for i in range(401)]}, {"online"}),
        ({"online": ["a"], "players": ["b"]}, {"players"}),
    ],
    ids=[
        "bad-char",
        "too-long",
        "empty",
        "int",
        "null-id",
        "newline",
        "string",
        "null-list",
        "object",
        "both-lists",
        "1001-online",
        "1001-offline",
        "1001-in-all",
        "unknown-field",
    ],
)
async def test_it_refuses_bad_bodies_with_422_naming_the_field_and_changes_nothing(aclient, game, key, body, fields):
    assert (await post(aclient, key, {"online": ["a"], "offline": ["b"]})).status_code == 200
    before = await redis_state()
    response = await post(aclient, key, body)
    assert response.status_code == 422
    error = error_of(response)
    assert (error["code"], error["field"] in fields) == ("invalid", True), error
    assert await redis_state() == before


@pytest.mark.parametrize("raw", ["{not json", '{"online": ["a"]', "\xff\xfe", '{"online": ["a"]}}'])
async def test_it_answers_400_for_malformed_json_and_changes_nothing(aclient, game, key, raw):
    before = await redis_state()
    response = await post(aclient, key, raw)
    assert response.status_code == 400
    assert error_of(response)["code"] == "malformed_json"
    assert await redis_state() == before


@pytest.mark.parametrize("raw", ['"a string"', "[]", "42", "null"])
async def test_it_refuses_json_that_is_not_an_object(aclient, game, key, raw):
    before = await redis_state()
    response = await post(aclient, key, raw)
    assert response.status_code in (400, 422)
    error_of(response)
    assert await redis_state() == before


# --------------------------------------------------------------------------- GET


async def test_it_lists_online_players_most_recent_first_with_names_and_counts(aclient, game):
    now = clock_now()
    for seconds_ago, players in ((30, ["old"]), (5, ["b", "a", "B"]), (1, ["new"]), (61, ["expired"])):
        with clock_at(now - dt.timedelta(seconds=seconds_ago)):
            await services.presence_report(game=game, online=players, offline=[])
    with clock_at(now):
        await game_services.score_submit(
            game=game, board=game.boards[0], player_id="named", score=1, display_name="Zoë 🎮"
        )
    with clock_at(now):
        await services.watcher_beat(game=game, socket_id="w1")
    with clock_at(now - dt.timedelta(seconds=90)):
        await services.watcher_beat(game=game, socket_id="w2")

    body = (await aclient.get(URL)).json()
    assert set(body) >= {"online", "watching", "players"}
    assert (body["online"], body["watching"]) == (6, 1)
    assert [p["player_id"] for p in body["players"]] == ["named", "new", "b", "a", "B", "old"]
    assert set(body["players"][0]) == {"player_id", "display_name", "last_seen"}
    assert body["players"][0]["display_name"] == "Zoë 🎮"
    assert when(body["players"][0]["last_seen"]) == ms(now)
    assert when(body["players"][-1]["last_seen"]) == ms(now - dt.timedelta(seconds=30))
    assert {p["display_name"] for p in body["players"][1:]} == {"new", "b", "a", "B", "old"}


async def test_it_pages_the_online_list(aclient, game):
    now = clock_now()
    for i in range(5):
        with clock_at(now - dt.timedelta(seconds=i)):
            await services.presence_report(game=game, online=[f"p{i}"], offline=[])
    pages = []
    for offset in (0, 2, 4, 5, 100):
        body = (await aclient.get(URL, {"offset": offset, "limit": 2})).json()
        assert body["online"] == 5
        pages.append([p["player_id"] for p in body["players"]])
    assert pages == [["p0", "p1"], ["p2", "p3"], ["p4"], [], []]
    body = (await aclient.get(URL)).json()
    assert len(body["players"]) == 5


@pytest.mark.parametrize(
    "query",
    ["limit=0", "limit=201", "limit=-1", "offset=-1", "offset=abc", "limit=1.5", f"offset={10**7 + 1}"],
)
async def test_it_refuses_paging_out_of_bounds(aclient, game, query):
    response = await aclient.get(f"{URL}?{query}")
    assert response.status_code == 422
    assert error_of(response)["field"] == query.split("=")[0]


async def test_it_tells_whether_a_player_is_online_and_when_last_seen(aclient, game, key):
    assert (await post(aclient, key, {"online": ["a", "b"]})).status_code == 200
    assert (await post(aclient, key, {"offline": ["b"]})).status_code == 200
    a = (await aclient.get(f"{URL}/a")).json()
    b = (await aclient.get(f"{URL}/b")).json()
    ghost = (await aclient.get(f"{URL}/ghost")).json()
    assert (a["online"], b["online"], ghost) == (True, False, {"online": False, "last_seen": None})
    now = clock_now()
    for body in (a, b):
        assert set(body) == {"online", "last_seen"}
        assert now - dt.timedelta(seconds=10) < when(body["last_seen"]) <= now
    assert when(b["last_seen"]) >= when(a["last_seen"])


async def test_it_keeps_a_hidden_players_last_seen_private(aclient, game, key):
    assert (await post(aclient, key, {"online": ["banned"]})).status_code == 200
    assert (await post(aclient, key, {"offline": ["banned"]})).status_code == 200
    assert (await aclient.get(f"{URL}/banned")).json()["last_seen"] is not None
    model = await Game.objects.aget(slug=game.slug)

    await sync_to_async(game_services.player_set_hidden)(game=model, player_id="banned", hidden=True)

    assert (await aclient.get(f"{URL}/banned")).json() == {"online": False, "last_seen": None}


async def test_it_counts_a_score_posted_through_the_api_as_a_heartbeat(aclient, game, key):
    response = await aclient.post(
        "/api/v1/games/tetris/leaderboards/main/scores",
        json.dumps({"player_id": "a", "score": 3, "display_name": "Ann"}),
        content_type="application/json",
        headers=auth(key),
    )
    assert response.status_code == 200
    assert (await aclient.get(f"{URL}/a")).json()["online"] is True
    players = (await aclient.get(URL)).json()["players"]
    assert [(p["player_id"], p["display_name"]) for p in players] == [("a", "Ann")]


@pytest.mark.parametrize("player_id", ["bad%20id", "x" * 65, "%3Cb%3E", "a%0A"])
async def test_it_refuses_an_invalid_player_id(aclient, game, player_id):
    response = await aclient.get(f"{URL}/{player_id}")
    assert response.status_code == 422
    assert error_of(response)["field"] == "player_id"
