"""Every bad input gets its status and a JSON error naming the field, and changes nothing."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async

from core import apikeys
from core.models import ApiKey
from core.redis import get_redis
from games import services
from tests.conftest import auth
from tests.games.reference import CALENDAR_EDGE_IDS

pytestmark = pytest.mark.django_db(transaction=True)

URL = "/api/v1/games/tetris/leaderboards/main/scores"


@pytest.fixture
async def key(make_game):
    game = await sync_to_async(make_game)("tetris", mode="best", min_score=0, max_score=1_000_000)
    _, raw = await sync_to_async(apikeys.api_key_create)(game=game, name="server")
    return raw


async def post(aclient, raw_key, body, url=URL, **extra):
    data = body if isinstance(body, (str, bytes)) else json.dumps(body)
    headers = auth(raw_key) if raw_key else {}
    return await aclient.post(url, data, content_type="application/json", headers=headers, **extra)


def error_of(response):
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message", "field"}
    assert body["error"]["message"]
    return body["error"]


async def assert_nothing_stored():
    stored = [k async for k in get_redis().scan_iter(match="lb:*")]
    assert [k for k in stored if not k.endswith(":config-version")] == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"player_id": "a", "score": 1.5}, "score"),
        ({"player_id": "a", "score": 1.0}, "score"),
        ({"player_id": "a", "score": "12"}, "score"),
        ({"player_id": "a", "score": True}, "score"),
        ({"player_id": "a", "score": None}, "score"),
        ({"player_id": "a", "score": 2**53}, "score"),
        ({"player_id": "a", "score": -(2**53)}, "score"),
        ({"player_id": "a"}, "score"),
        ({"score": 5}, "player_id"),
        ({"player_id": "", "score": 5}, "player_id"),
        ({"player_id": "a b", "score": 5}, "player_id"),
        ({"player_id": "x" * 65, "score": 5}, "player_id"),
        ({"player_id": "<script>", "score": 5}, "player_id"),
        ({"player_id": 7, "score": 5}, "player_id"),
        ({"player_id": "a", "score": 5, "display_name": "n" * 65}, "display_name"),
        ({"player_id": "a", "score": 5, "display_name": 3}, "display_name"),
        ({"player_id": "a", "score": 5, "extra": 1}, "extra"),
        ({"player_id": ".", "score": 5}, "player_id"),
        ({"player_id": "..", "score": 5}, "player_id"),
        ({"player_id": "...", "score": 5}, "player_id"),
        ({"player_id": "a", "score": 5, "display_name": "bad\x00name"}, "display_name"),
        ({"player_id": "a", "score": 5, "display_name": "tab\there"}, "display_name"),
        ({"player_id": "a", "score": 5, "display_name": "esc\x1b[31m"}, "display_name"),
        ({"player_id": "a", "score": 5, "display_name": "\u202egnp.exe"}, "display_name"),
        ({"player_id": "a", "score": 5, "display_name": "c1\x85"}, "display_name"),
    ],
)
async def test_it_rejects_invalid_fields_with_422_naming_the_field(aclient, key, body, field):
    response = await post(aclient, key, body)
    assert response.status_code == 422
    assert error_of(response)["field"] == field
    await assert_nothing_stored()


@pytest.mark.parametrize("raw", ['{"player_id": "a", "score": NaN}', '{"player_id": "a", "score": Infinity}'])
async def test_it_rejects_nan_and_infinity(aclient, key, raw):
    response = await post(aclient, key, raw)
    assert response.status_code == 422
    assert error_of(response)["field"] == "score"


@pytest.mark.parametrize("score", [-1, 1_000_001])
async def test_it_rejects_values_outside_the_game_bounds(aclient, key, score):
    response = await post(aclient, key, {"player_id": "a", "score": score})
    assert response.status_code == 422
    assert error_of(response) | {"message": "-"} == {"code": "out_of_bounds", "field": "score", "message": "-"}
    await assert_nothing_stored()


@pytest.mark.parametrize("raw", ["{not json", '{"player_id": "a", "score": 1', "\xff\xfe", "[1, 2"])
async def test_it_answers_400_for_malformed_json(aclient, key, raw):
    response = await post(aclient, key, raw)
    assert response.status_code == 400
    assert error_of(response)["code"] == "malformed_json"


async def test_it_answers_400_for_an_empty_body_as_the_docs_say(aclient, key):
    response = await post(aclient, key, "")
    assert response.status_code == 400
    assert error_of(response)["code"] == "malformed_json"
    await assert_nothing_stored()


async def test_it_refuses_a_lone_surrogate_in_a_name(aclient, key):
    # Valid JSON that no UTF-8 encoder can write: refused before it reaches Redis.
    response = await post(aclient, key, '{"player_id": "a", "score": 1, "display_name": "\\ud800"}')
    assert response.status_code == 422
    assert error_of(response)["field"] == "display_name"
    await assert_nothing_stored()


async def test_it_names_a_batch_items_control_characters(aclient, key):
    body = {
        "scores": [
            {"leaderboard": "main", "player_id": "a", "score": 1},
            {"leaderboard": "main", "player_id": "b", "score": 1, "display_name": "x\x00"},
        ]
    }
    response = await post(aclient, key, body, url=URL.replace("/leaderboards/main/scores", "/scores/batch"))
    results = response.json()["results"]
    assert response.status_code == 200 and "error" not in results[0]
    assert results[1]["error"]["field"] == "scores[1].display_name"


async def test_it_answers_head_on_reads_with_the_get_headers_and_no_body(aclient, key):
    get = await aclient.get("/api/v1/games/tetris/leaderboards/main/daily")
    head = await aclient.head("/api/v1/games/tetris/leaderboards/main/daily")
    assert head.status_code == 200 and head.content == b""
    assert head["Content-Type"] == get["Content-Type"]
    assert head["Content-Length"] == str(len(get.content))


async def test_it_refuses_a_host_outside_allowed_hosts_before_anything_runs(aclient, key):
    response = await aclient.post(
        URL,
        {"player_id": "a", "score": 1},
        content_type="application/json",
        headers={**auth(key), "Host": "evil.example"},
    )
    assert response.status_code == 400
    assert error_of(response)["code"] == "bad_host"
    await assert_nothing_stored()


@pytest.mark.parametrize("timezone_name", ["UTC", "Asia/Tokyo", "Pacific/Pago_Pago"])
@pytest.mark.parametrize("period_id", CALENDAR_EDGE_IDS)
async def test_it_answers_periods_at_the_calendars_edges_with_404(aclient, make_game, timezone_name, period_id):
    await sync_to_async(make_game)("edge", timezone_name=timezone_name)
    base = f"/api/v1/games/edge/leaderboards/main/{period_id}"
    for path in (base, f"{base}/players/a", f"{base}/players/a/around", f"{base}/players?ids=a"):
        response = await aclient.get(path)
        assert response.status_code == 404, (path, response.content)
        assert error_of(response)["code"] == "period_not_found"
    page = await aclient.get(f"/games/edge/history/{period_id}/")
    assert page.status_code == 404


@pytest.mark.parametrize("raw", ['"a string"', "[]", "42", "null"])
async def test_it_answers_422_for_json_that_is_not_an_object(aclient, key, raw):
    response = await post(aclient, key, raw)
    assert response.status_code in (400, 422)
    error_of(response)


async def test_it_answers_413_for_a_body_over_one_mebibyte(aclient, key):
    body = json.dumps({"player_id": "a", "score": 1, "display_name": "x" * (1024 * 1024)})
    response = await post(aclient, key, body)
    assert response.status_code == 413
    assert error_of(response)["code"] == "body_too_large"
    await assert_nothing_stored()


@pytest.mark.parametrize(
    ("header", "code"),
    [
        (None, "missing_api_key"),
        ("Bearer", "missing_api_key"),
        ("Basic abc", "missing_api_key"),
        ("Bearer nonsense", "invalid_api_key"),
        ("Bearer lbk_00000000_secret", "invalid_api_key"),
    ],
)
async def test_it_answers_401_for_a_missing_or_unknown_key(aclient, key, header, code):
    headers = {"Authorization": header} if header else {}
    response = await aclient.post(
        URL, json.dumps({"player_id": "a", "score": 1}), content_type="application/json", headers=headers
    )
    assert response.status_code == 401
    assert error_of(response)["code"] == code
    await assert_nothing_stored()


async def test_it_answers_401_for_a_right_prefix_with_a_wrong_secret(aclient, key):
    prefix = key.split("_")[1]
    response = await post(aclient, f"lbk_{prefix}_wrong-secret", {"player_id": "a", "score": 1})
    assert response.status_code == 401
    assert error_of(response)["code"] == "invalid_api_key"


async def test_it_answers_403_for_a_revoked_key(aclient, key):
    api_key = await ApiKey.objects.aget(prefix=key.split("_")[1])
    assert (await post(aclient, key, {"player_id": "a", "score": 1})).status_code == 200
    await sync_to_async(apikeys.api_key_revoke)(api_key=api_key)
    response = await post(aclient, key, {"player_id": "a", "score": 2})
    assert response.status_code == 403
    assert error_of(response)["code"] == "revoked_api_key"
    board = (await aclient.get("/api/v1/games/tetris/leaderboards/main/all-time")).json()
    assert [e["score"] for e in board["entries"]] == [1]


async def test_it_answers_403_for_a_key_of_another_game(aclient, key, make_game):
    await sync_to_async(make_game)("chess")
    response = await post(
        aclient, key, {"player_id": "a", "score": 1}, url="/api/v1/games/chess/leaderboards/main/scores"
    )
    assert response.status_code == 403
    assert error_of(response)["code"] == "wrong_game"
    await assert_nothing_stored()


async def test_it_answers_404_for_an_unknown_game(aclient, key):
    response = await post(
        aclient, key, {"player_id": "a", "score": 1}, url="/api/v1/games/nope/leaderboards/main/scores"
    )
    assert response.status_code == 404
    assert error_of(response)["code"] == "game_not_found"


async def test_it_answers_403_for_a_hidden_player_and_hides_them_from_reads(aclient, key):
    from core.models import Game

    for player, score in (("a", 10), ("b", 20)):
        assert (await post(aclient, key, {"player_id": player, "score": score})).status_code == 200
    game = await Game.objects.aget(slug="tetris")
    await sync_to_async(services.player_set_hidden)(game=game, player_id="b", hidden=True)
    response = await post(aclient, key, {"player_id": "b", "score": 30})
    assert response.status_code == 403
    assert error_of(response) | {"message": "-"} == {"code": "player_hidden", "field": "player_id", "message": "-"}
    board = (await aclient.get("/api/v1/games/tetris/leaderboards/main/daily")).json()
    assert [(e["player_id"], e["rank"]) for e in board["entries"]] == [("a", 1)]
    assert board["total"] == 1
    assert (await aclient.get("/api/v1/games/tetris/leaderboards/main/daily/players/b")).status_code == 404
    recent = (await aclient.get("/api/v1/games/tetris/recent")).json()
    assert [r["player_id"] for r in recent] == ["a"]

    await sync_to_async(services.player_set_hidden)(game=game, player_id="b", hidden=False)
    board = (await aclient.get("/api/v1/games/tetris/leaderboards/main/daily")).json()
    assert [(e["player_id"], e["score"]) for e in board["entries"]] == [("b", 20), ("a", 10)]


async def test_it_answers_403_when_the_game_is_inactive(aclient, key):
    from core.models import Game

    game = await Game.objects.aget(slug="tetris")
    game.active = False
    await sync_to_async(game.save)()
    response = await post(aclient, key, {"player_id": "a", "score": 1})
    assert response.status_code == 403
    assert error_of(response)["code"] == "game_inactive"


@pytest.mark.parametrize(
    ("url", "status"),
    [
        ("/api/v1/games/nope/leaderboards/main/daily", 404),
        ("/api/v1/games/tetris/leaderboards/main/yearly", 404),
        ("/api/v1/games/tetris/leaderboards/main/daily?limit=0", 422),
        ("/api/v1/games/tetris/leaderboards/main/daily?limit=201", 422),
        ("/api/v1/games/tetris/leaderboards/main/daily?offset=-1", 422),
        ("/api/v1/games/tetris/leaderboards/main/daily?offset=abc", 422),
        ("/api/v1/games/tetris/leaderboards/main/daily/2026-02-30", 404),
        ("/api/v1/games/tetris/leaderboards/main/daily/1999-01-01", 404),
        ("/api/v1/games/tetris/leaderboards/main/weekly/2026-11", 404),
        ("/api/v1/games/tetris/leaderboards/main/daily/players/ghost", 404),
        ("/api/v1/games/tetris/leaderboards/main/daily/players/bad%20id", 422),
        ("/api/v1/games/tetris/leaderboards/main/daily/players/ghost/around", 404),
        ("/api/v1/games/tetris/leaderboards/main/daily/players/a/around?radius=51", 422),
        ("/api/v1/games/tetris/leaderboards/main/daily/players", 422),
        ("/api/v1/games/tetris/leaderboards/main/daily/players?ids=", 422),
        ("/api/v1/games/tetris/leaderboards/main/daily/players?ids=a,b%20c", 422),
        ("/api/v1/games/tetris/leaderboards/main/daily/players?ids=" + ",".join(f"p{i}" for i in range(101)), 422),
    ],
)
async def test_it_answers_reads_with_json_errors(aclient, key, url, status):
    response = await aclient.get(url)
    assert response.status_code == status
    error_of(response)


async def test_it_serves_the_openapi_schema_and_docs_without_a_cdn(aclient):
    schema = (await aclient.get("/api/v1/openapi.json")).json()
    assert "/api/v1/games/{game}/leaderboards/{board}/scores" in schema["paths"]
    docs = await aclient.get("/api/docs")
    assert docs.status_code == 200
    html = docs.content.decode()
    assert "swagger-ui-bundle.js" in html
    assert "cdn" not in html.lower()


@pytest.mark.parametrize(
    ("method", "url", "status"),
    [
        ("get", "/api/v1/nope", 404),
        ("get", "/api/v1/games/tetris/leaderboards/main/scores", 405),
        ("delete", "/api/v1/games", 405),
    ],
)
async def test_it_answers_unmatched_api_paths_and_methods_with_json(aclient, method, url, status):
    response = await getattr(aclient, method)(url)
    assert response.status_code == status
    error_of(response)


async def test_it_names_each_failing_batch_item_by_position(aclient, key):
    body = {
        "scores": [
            {"leaderboard": "main", "player_id": "a", "score": 5},
            {"leaderboard": "main", "player_id": "b", "score": -5},
            {"leaderboard": "main", "player_id": "c", "score": "x"},
            {"leaderboard": "main", "player_id": "d", "score": 7},
        ]
    }
    response = await post(aclient, key, body, url=URL.replace("/leaderboards/main/scores", "/scores/batch"))
    assert response.status_code == 200
    results = response.json()["results"]
    assert [r.get("player_id") for r in results] == ["a", None, None, "d"]
    assert (results[1]["error"]["code"], results[1]["error"]["field"]) == ("out_of_bounds", "scores[1].score")
    assert results[2]["error"]["field"] == "scores[2].score"
    board = (await aclient.get("/api/v1/games/tetris/leaderboards/main/daily")).json()
    assert [e["player_id"] for e in board["entries"]] == ["d", "a"]


@pytest.mark.parametrize("count", [0, 1001])
async def test_it_refuses_an_empty_or_oversized_batch(aclient, key, count):
    body = {"scores": [{"leaderboard": "main", "player_id": f"p{i}", "score": 1} for i in range(count)]}
    response = await post(aclient, key, body, url=URL.replace("/leaderboards/main/scores", "/scores/batch"))
    assert response.status_code == 422
    assert error_of(response)["field"] == "scores"
    await assert_nothing_stored()


async def test_it_accepts_keys_whose_secret_contains_underscores(aclient, make_game):
    from core.models import ApiKey, hash_secret

    game = await sync_to_async(make_game)("chess")
    await ApiKey.objects.acreate(game=game, prefix="0123abcd", secret_hash=hash_secret("s_e_c_r_e_t"))
    response = await post(
        aclient,
        "lbk_0123abcd_s_e_c_r_e_t",
        {"player_id": "a", "score": 1},
        url="/api/v1/games/chess/leaderboards/main/scores",
    )
    assert response.status_code == 200
