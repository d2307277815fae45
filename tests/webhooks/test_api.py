"""Webhook endpoints over the API, as a studio meets them with a manage key: registered with
a secret shown once, read, changed, deleted, the secret rotated, a test event sent, deliveries
listed and replayed, the game's event log paged; nothing of another game's, and every refusal
clear, in the error envelope, and changing nothing."""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from core import apikeys, clock, services
from core.models import ApiKey, AuditEntry, Event, Game
from tests.conftest import auth
from webhooks.models import Delivery, Endpoint
from webhooks.services.endpoints import WEBHOOK_ENDPOINTS_PER_GAME

from .helpers import erased, run_once
from .receiver import Receiver, Reply

pytestmark = pytest.mark.django_db(transaction=True)

API = "/api/v1/games"
URL = "https://hooks.example.com/leaderboard"


@pytest.fixture
async def keys() -> dict[str, str]:
    """Game 'tetris' with a manage and a submit key, and game 'rival' with a manage key."""

    def make() -> dict[str, str]:
        tetris = services.game_create(slug="tetris", name="Tetris")
        rival = services.game_create(slug="rival", name="Rival")
        return {
            "manage": apikeys.api_key_create(game=tetris, name="ops", scope=ApiKey.Scope.MANAGE)[1],
            "submit": apikeys.api_key_create(game=tetris, name="server")[1],
            "rival": apikeys.api_key_create(game=rival, name="ops", scope=ApiKey.Scope.MANAGE)[1],
        }

    return await sync_to_async(make)()


async def call(method: str, path: str, key: str, body: Any = None) -> tuple[int, Any]:
    client = AsyncClient()
    data = json.dumps(body) if body is not None else None
    response = (
        await getattr(client, method)(f"{API}{path}", data, content_type="application/json", headers=auth(key))
        if method in ("post", "patch")
        else await getattr(client, method)(f"{API}{path}", headers=auth(key))
    )
    return response.status_code, response.json()


def error(answer: tuple[int, Any]) -> tuple[int, str, str | None]:
    status, body = answer
    return status, body["error"]["code"], body["error"]["field"]


async def test_it_registers_an_endpoint_and_shows_its_secret_only_then(keys: dict[str, str]) -> None:
    status, made = await call(
        "post", "/tetris/webhooks", keys["manage"], {"url": URL, "event_types": ["period.settled"]}
    )
    assert status == 201
    assert made["secret"].startswith("whsec_") and len(base64.b64decode(made["secret"][6:])) >= 24
    assert made["url"] == URL and made["event_types"] == ["period.settled"] and made["enabled"] is True
    assert made["health"] == {
        "last_success_at": None,
        "last_failure_at": None,
        "failing_since": None,
        "failure_streak": 0,
        "last_error": None,
    }
    endpoint_id = made["endpoint_id"]
    status, listed = await call("get", "/tetris/webhooks", keys["manage"])
    assert status == 200 and [w["endpoint_id"] for w in listed["webhooks"]] == [endpoint_id]
    assert "secret" not in listed["webhooks"][0]
    status, one = await call("get", f"/tetris/webhooks/{endpoint_id}", keys["manage"])
    assert status == 200 and "secret" not in one and one == listed["webhooks"][0]
    assert await AuditEntry.objects.filter(action="webhook_create", game_slug="tetris").acount() == 1


async def test_it_changes_rotates_and_deletes_an_endpoint(keys: dict[str, str]) -> None:
    _, made = await call("post", "/tetris/webhooks", keys["manage"], {"url": URL})
    path = f"/tetris/webhooks/{made['endpoint_id']}"
    status, changed = await call("patch", path, keys["manage"], {"description": "Economy", "enabled": False})
    assert status == 200 and changed["description"] == "Economy" and changed["enabled"] is False
    assert changed["disabled_reason"] == "Disabled by the studio."
    status, enabled = await call("patch", path, keys["manage"], {"enabled": True})
    assert (enabled["enabled"], enabled["disabled_reason"]) == (True, None)

    status, rotated = await call("post", f"{path}/rotate-secret", keys["manage"], {"grace_secs": 3600})
    assert status == 200 and rotated["secret"] != made["secret"]
    assert rotated["secret_rotating_until"] == clock.iso(clock.now() + dt.timedelta(hours=1))
    endpoint = await Endpoint.objects.aget(endpoint_id=made["endpoint_id"])
    assert (endpoint.previous_secret, endpoint.secret) == (made["secret"], rotated["secret"])

    status, deleted = await call("delete", path, keys["manage"])
    assert status == 200 and deleted["endpoint_id"] == made["endpoint_id"]
    assert error(await call("get", path, keys["manage"])) == (404, "webhook_not_found", "endpoint_id")


async def test_it_refuses_bad_endpoints_clearly_and_keeps_nothing(keys: dict[str, str], settings: Any) -> None:
    settings.WEBHOOK_ALLOW_HTTP = False
    settings.WEBHOOK_ALLOW_PRIVATE = False
    refused = [
        {"url": "http://hooks.example.com/x"},
        {"url": "https://127.0.0.1/x"},
        {"url": "https://10.1.2.3/x"},
        {"url": "https://169.254.169.254/latest/meta-data"},
        {"url": "https://[::1]/x"},
        {"url": "https://[::ffff:192.168.0.1]/x"},
        {"url": "https://localhost/x"},
        {"url": "https://user:pass@hooks.example.com/x"},
        {"url": "not a url"},
        {"url": URL, "event_types": ["period.nope"]},
        {"url": URL, "description": "two\nlines"},
    ]
    for body in refused:
        status, code, field = error(await call("post", "/tetris/webhooks", keys["manage"], body))
        assert (status, code) == (422, "invalid"), body
        assert field in ("url", "event_types", "description"), body
    assert error(await call("post", "/tetris/webhooks", keys["manage"], {"url": URL, "secret": "x"}))[:2] == (
        422,
        "invalid",
    )
    assert error(await call("post", "/tetris/webhooks", keys["submit"], {"url": URL}))[:2] == (403, "scope")
    assert not await Endpoint.objects.aexists()


async def test_it_shows_nothing_of_another_games_endpoints(keys: dict[str, str]) -> None:
    _, made = await call("post", "/tetris/webhooks", keys["manage"], {"url": URL})
    path = f"/webhooks/{made['endpoint_id']}"
    assert error(await call("get", f"/rival{path}", keys["rival"]))[:2] == (404, "webhook_not_found")
    assert error(await call("delete", f"/rival{path}", keys["rival"]))[:2] == (404, "webhook_not_found")
    assert error(await call("get", f"/tetris{path}", keys["rival"]))[:2] == (403, "wrong_game")
    assert await Endpoint.objects.acount() == 1


async def test_it_refuses_an_endpoint_past_the_games_limit(keys: dict[str, str]) -> None:
    for i in range(WEBHOOK_ENDPOINTS_PER_GAME):
        assert (await call("post", "/tetris/webhooks", keys["manage"], {"url": f"{URL}/{i}"}))[0] == 201
    assert error(await call("post", "/tetris/webhooks", keys["manage"], {"url": URL})) == (409, "webhook_limit", "url")


async def test_it_sends_a_test_event_and_lists_and_replays_its_delivery(keys: dict[str, str]) -> None:
    receiver = Receiver()
    with receiver.running():
        _, made = await call("post", "/tetris/webhooks", keys["manage"], {"url": receiver.url})
        receiver.secrets.append(made["secret"])
        receiver.replies.append(Reply(400))
        path = f"/tetris/webhooks/{made['endpoint_id']}"
        status, sent = await call("post", f"{path}/test", keys["manage"])
        assert status == 202 and sent["event_type"] == "webhook.test"
        await asyncio.to_thread(run_once)
        status, listed = await call("get", f"{path}/deliveries?status=failed", keys["manage"])
        assert status == 200 and listed["total"] == 1
        (failed,) = listed["deliveries"]
        assert (failed["event_id"], failed["status"], failed["last_status_code"]) == (sent["event_id"], "failed", 400)

        status, replayed = await call("post", f"{path}/deliveries/{failed['delivery_id']}/replay", keys["manage"])
        assert status == 202 and replayed["deliveries"][0]["status"] == "pending"
        await asyncio.to_thread(run_once)
        status, detail = await call("get", f"{path}/deliveries/{failed['delivery_id']}", keys["manage"])
        assert detail["status"] == "delivered" and detail["replays"] == 1
        assert [a["status_code"] for a in detail["attempt_list"]] == [400, 200]
        assert detail["payload"]["id"] == sent["event_id"]
        assert detail["attempt_list"][1]["request_headers"]["webhook-id"] == sent["event_id"]
    assert receiver.ids() == [sent["event_id"], sent["event_id"]]


async def test_it_replays_every_failed_delivery_since_a_time_in_order(keys: dict[str, str], settings: Any) -> None:
    settings.WEBHOOK_ENDPOINT_CONCURRENCY = 1  # one at a time: they arrive in the order sent
    receiver = Receiver()
    with receiver.running():
        _, made = await call("post", "/tetris/webhooks", keys["manage"], {"url": receiver.url})
        receiver.secrets.append(made["secret"])
        receiver.replies.extend([Reply(422)] * 3)
        game = await sync_to_async(lambda: Endpoint.objects.get(endpoint_id=made["endpoint_id"]).game)()
        for player in ("ada", "bob", "cy"):
            await sync_to_async(erased)(game, player)
        await asyncio.to_thread(run_once)
        assert await Delivery.objects.filter(status="failed").acount() == 3
        path = f"/tetris/webhooks/{made['endpoint_id']}"
        status, body = await call("post", f"{path}/replay", keys["manage"], {"since": "2026-03-04T00:00:00Z"})
        assert (status, body) == (202, {"replayed": 3})
        assert await AuditEntry.objects.filter(action="webhook_replay", game_slug="tetris").acount() == 1
        await asyncio.to_thread(run_once)
    players = [e["data"]["player_id"] for e in receiver.events()]
    assert players == ["ada", "bob", "cy"] * 2
    assert error(await call("post", f"{path}/replay", keys["manage"], {"since": "yesterday"})) == (
        422,
        "invalid",
        "since",
    )


async def test_it_refuses_a_test_or_replay_of_a_disabled_endpoint(keys: dict[str, str]) -> None:
    _, made = await call("post", "/tetris/webhooks", keys["manage"], {"url": URL, "enabled": False})
    path = f"/tetris/webhooks/{made['endpoint_id']}"
    assert error(await call("post", f"{path}/test", keys["manage"]))[:2] == (409, "webhook_disabled")
    assert error(await call("post", f"{path}/replay", keys["manage"], {"since": "2026-03-04T00:00:00Z"}))[:2] == (
        409,
        "webhook_disabled",
    )
    assert not await Event.objects.filter(type="webhook.test").aexists()


async def test_it_pages_through_the_games_event_log(keys: dict[str, str]) -> None:
    game = await sync_to_async(lambda: services.game_create(slug="chess", name="Chess"))()
    tetris = await Game.objects.aget(slug="tetris")
    written = [await sync_to_async(erased)(tetris, f"p{i}") for i in range(5)]
    await sync_to_async(erased)(game, "other")
    status, first = await call("get", "/tetris/webhooks/events?limit=2&since=2026-03-04T00:00:00Z", keys["manage"])
    assert status == 200 and [e["id"] for e in first["events"]] == [e.event_id for e in written[:2]]
    seen = [e["id"] for e in first["events"]]
    after = first["next_after"]
    while after is not None:
        _, page = await call("get", f"/tetris/webhooks/events?limit=2&after={after}", keys["manage"])
        seen += [e["id"] for e in page["events"]]
        after = page["next_after"]
    assert seen == [e.event_id for e in written]
    _, typed = await call("get", "/tetris/webhooks/events?type=season.ended", keys["manage"])
    assert typed == {"events": [], "next_after": None}
    assert error(await call("get", "/tetris/webhooks/events?after=evt_nope", keys["manage"])) == (
        404,
        "webhook_not_found",
        "after",
    )
    assert error(await call("get", "/tetris/webhooks/events?since=2026-03-04", keys["manage"]))[:2] == (422, "invalid")
