"""Link codes issued for game servers: at most three live per player, hidden players refused."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from asgiref.sync import sync_to_async

from accounts import services
from core import apikeys, keys
from core.clock import now as clock_now
from core.config import GameConfig
from core.errors import ServiceError
from core.redis import get_redis
from games import services as game_services
from tests.conftest import auth, clock_at

pytestmark = pytest.mark.django_db(transaction=True)

T0 = dt.datetime(2026, 11, 22, 12, 0, tzinfo=dt.UTC)
URL = "/api/v1/games/tetris/players/alice/link-code"
CODE = re.compile(f"^[{services.LINK_CODE_ALPHABET}]{{8}}$")


@pytest.fixture
async def game(make_game):
    return await sync_to_async(make_game)("tetris")


@pytest.fixture
def config(game):
    return GameConfig.from_model(game, "0")


@pytest.fixture
async def key(game):
    _, raw = await sync_to_async(apikeys.api_key_create)(game=game, name="server")
    return raw


def at(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


async def issue(config, player_id="alice", seconds=0.0):
    with clock_at(at(seconds)):
        return await services.link_code_issue(game=config, player_id=player_id)


async def test_it_issues_an_eight_character_code_valid_ten_minutes(config):
    issued = await issue(config)
    assert CODE.match(issued.code)
    assert issued.player_id == "alice"
    assert issued.expires_at == at(services.LINK_CODE_TTL_SECS)
    stored = await get_redis().get(keys.link_code("tetris", issued.code))
    assert isinstance(stored, str) and stored.endswith(":alice")
    assert 0 < await get_redis().pttl(keys.link_code("tetris", issued.code)) <= services.LINK_CODE_TTL_SECS * 1000
    assert 0 < await get_redis().pttl(keys.link_codes_issued("tetris", "alice")) <= services.LINK_CODE_TTL_SECS * 1000


async def test_it_draws_unambiguous_characters_only():
    drawn = "".join(services._new_code() for _ in range(200))
    assert not set(drawn) & set("01OIL")
    assert set(drawn) <= set(services.LINK_CODE_ALPHABET)


async def test_it_refuses_a_fourth_live_code_with_retry_after(config):
    codes = [(await issue(config, seconds=s)).code for s in (0, 60, 120)]
    assert len(set(codes)) == services.LINK_CODES_PER_PLAYER == 3
    with pytest.raises(ServiceError) as refused:
        await issue(config, seconds=180)
    assert refused.value.status == 429
    assert refused.value.code == "link_code_limit"
    # The oldest code expires at 600 s: 420 s from now.
    assert refused.value.headers["Retry-After"] == "420"
    # The refused attempt stored nothing: still three codes.
    assert await get_redis().zcard(keys.link_codes_issued("tetris", "alice")) == 3


async def test_it_reopens_issuance_when_the_oldest_code_expires(config):
    for seconds in (0, 60, 120):
        await issue(config, seconds=seconds)
    with pytest.raises(ServiceError) as refused:
        await issue(config, seconds=599.9)
    assert refused.value.headers["Retry-After"] == "1"
    await issue(config, seconds=600)
    with pytest.raises(ServiceError) as again:
        await issue(config, seconds=601)
    assert again.value.headers["Retry-After"] == str(660 - 601)


async def test_it_counts_codes_per_player(config):
    for seconds in (0, 1, 2):
        await issue(config, "alice", seconds)
    assert CODE.match((await issue(config, "bob", 3)).code)


async def test_it_refuses_a_hidden_player(game, config):
    await sync_to_async(game_services.player_set_hidden)(game=game, player_id="alice", hidden=True)
    with pytest.raises(ServiceError) as refused:
        await issue(config)
    assert (refused.value.status, refused.value.code) == (403, "player_hidden")
    assert [k async for k in get_redis().scan_iter(match="link:*")] == []


@pytest.mark.parametrize("player_id", ["", "a b", "x" * 65, "<script>"])
async def test_it_refuses_a_malformed_player_id(config, player_id):
    with pytest.raises(ServiceError) as refused:
        await issue(config, player_id)
    assert (refused.value.status, refused.value.field) == (422, "player_id")


# --------------------------------------------------------------------------- API


def error_of(response):
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message", "field"}
    return body["error"]


async def test_it_answers_the_code_its_expiry_and_where_to_enter_it(aclient, key):
    response = await aclient.post(URL, headers=auth(key))
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"code", "expires_at", "link_url"}
    assert CODE.match(body["code"])
    expires_at = dt.datetime.fromisoformat(body["expires_at"].replace("Z", "+00:00"))
    now = clock_now()
    assert now + dt.timedelta(seconds=590) < expires_at <= now + dt.timedelta(seconds=600)
    assert body["link_url"] == "http://testserver/games/tetris/link/"
    assert "RateLimit" in response.headers
    assert await get_redis().get(keys.link_code("tetris", body["code"])) is not None


async def test_it_answers_429_with_retry_after_over_the_limit(aclient, key):
    for _ in range(services.LINK_CODES_PER_PLAYER):
        assert (await aclient.post(URL, headers=auth(key))).status_code == 200
    response = await aclient.post(URL, headers=auth(key))
    assert response.status_code == 429
    assert error_of(response)["code"] == "link_code_limit"
    assert 590 <= int(response.headers["Retry-After"]) <= 600
    assert "RateLimit" in response.headers


async def test_it_answers_403_for_a_hidden_player(aclient, key, game):
    await sync_to_async(game_services.player_set_hidden)(game=game, player_id="alice", hidden=True)
    response = await aclient.post(URL, headers=auth(key))
    assert response.status_code == 403
    assert error_of(response)["code"] == "player_hidden"


@pytest.mark.parametrize("player_id", ["a%20b", "x" * 65, "%3Cscript%3E"])
async def test_it_answers_422_json_for_a_bad_player_id(aclient, key, player_id):
    response = await aclient.post(f"/api/v1/games/tetris/players/{player_id}/link-code", headers=auth(key))
    assert response.status_code == 422
    assert error_of(response)["field"] == "player_id"
    assert [k async for k in get_redis().scan_iter(match="link:*")] == []


async def test_it_requires_an_api_key(aclient, key):
    response = await aclient.post(URL)
    assert response.status_code == 401
    assert error_of(response)["code"] == "missing_api_key"
    response = await aclient.post(URL, headers=auth("lbk_nope1234_secret"))
    assert response.status_code == 401
    assert error_of(response)["code"] == "invalid_api_key"


async def test_it_refuses_another_games_key(aclient, key, make_game):
    other = await sync_to_async(make_game)("pong")
    _, other_key = await sync_to_async(apikeys.api_key_create)(game=other)
    response = await aclient.post(URL, headers=auth(other_key))
    assert response.status_code == 403
    assert error_of(response)["code"] == "wrong_game"
    assert [k async for k in get_redis().scan_iter(match="link:*")] == []


async def test_it_answers_404_for_an_unknown_game(aclient, key):
    response = await aclient.post("/api/v1/games/nope/players/alice/link-code", headers=auth(key))
    assert response.status_code == 404
    assert error_of(response)["code"] == "game_not_found"
