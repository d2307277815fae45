"""Webhook endpoints of the JSON API (mounted in leaderboard_site/api.py), all with a manage
key of the game: endpoints, their secret, a test event, their deliveries and replays, and the
game's event log. Endpoints adapt HTTP to the services and selectors only."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any, Literal

from asgiref.sync import sync_to_async
from django.http import HttpRequest
from ninja import Query, Router

from core import clock
from core.api import Authorized, BearerKey, Ok, authorized
from core.api import errors as error_responses
from core.models import Game
from games.schemas import Instant

from . import selectors
from .models import Attempt, Delivery, Endpoint
from .schemas import (
    DeliveryDetailOut,
    DeliveryListOut,
    EventLogOut,
    ReplayedOut,
    ReplayIn,
    RotateIn,
    TestSentOut,
    WebhookIn,
    WebhookListOut,
    WebhookOut,
    WebhookPatch,
    WebhookSecretOut,
)
from .services import endpoints as endpoint_services
from .services import replay as replay_services

router = Router(tags=["webhooks"])

READ = error_responses(401, 403, 404, 422, 429, 503)
# A request without a body that may be refused for the endpoint's state (409 webhook_disabled).
ACTION = error_responses(401, 403, 404, 409, 422, 429, 503)
# A request with a JSON body: also a body malformed (400), too slow (408) or too large (413).
WRITE = error_responses(400, 401, 403, 404, 408, 409, 413, 422, 429, 503)
PAGE_MAX = 100
PAGE_DEFAULT = 50


def _iso(instant: dt.datetime | None) -> str | None:
    return clock.iso(instant) if instant is not None else None


def endpoint_json(endpoint: Endpoint, now: dt.datetime) -> dict[str, Any]:
    rotating = endpoint.previous_secret_until if endpoint.previous_secret and endpoint.previous_secret_until else None
    return {
        "endpoint_id": endpoint.endpoint_id,
        "url": endpoint.url,
        "description": endpoint.description,
        "event_types": endpoint.event_types,
        "enabled": endpoint.enabled,
        "disabled_reason": endpoint.disabled_reason or None,
        "disabled_at": _iso(endpoint.disabled_at),
        "created_at": clock.iso(endpoint.created_at),
        "updated_at": clock.iso(endpoint.updated_at),
        "health": {
            "last_success_at": _iso(endpoint.last_success_at),
            "last_failure_at": _iso(endpoint.last_failure_at),
            "failing_since": _iso(endpoint.failing_since),
            "failure_streak": endpoint.failure_streak,
            "last_error": endpoint.last_error or None,
        },
        "secret_rotating_until": _iso(rotating) if rotating is not None and rotating > now else None,
    }


def delivery_json(delivery: Delivery) -> dict[str, Any]:
    return {
        "delivery_id": delivery.delivery_id,
        "event_id": delivery.event_id,
        "event_type": delivery.event_type,
        "status": delivery.status,
        "attempts": delivery.attempts,
        "next_attempt_at": _iso(delivery.next_attempt_at),
        "created_at": clock.iso(delivery.created_at),
        "finished_at": _iso(delivery.finished_at),
        "last_status_code": delivery.last_status_code,
        "last_error": delivery.last_error or None,
        "replays": delivery.replays,
    }


def attempt_json(attempt: Attempt) -> dict[str, Any]:
    return {
        "number": attempt.number,
        "started_at": clock.iso(attempt.started_at),
        "duration_ms": attempt.duration_ms,
        "address": attempt.address or None,
        "status_code": attempt.status_code,
        "response_body": attempt.response_body,
        "error": attempt.error or None,
        "outcome": attempt.outcome,
        "request_headers": attempt.request_headers,
    }


async def _endpoint(key: Authorized, endpoint_id: str) -> Endpoint:
    return await sync_to_async(selectors.endpoint_get)(game_id=key.game.id, endpoint_id=endpoint_id)


@router.get(
    "/games/{game}/webhooks",
    response={200: WebhookListOut, **READ},
    auth=BearerKey(),
    summary="A game's webhook endpoints",
)
@authorized(manage=True)
async def list_webhooks(request: HttpRequest, key: Authorized, game: str) -> Ok:
    now = clock.now()
    found = await sync_to_async(selectors.endpoints_of)(game_id=key.game.id)
    return Ok({"webhooks": [endpoint_json(endpoint, now) for endpoint in found]})


@router.post(
    "/games/{game}/webhooks",
    response={201: WebhookSecretOut, **WRITE},
    auth=BearerKey(),
    summary="Register a webhook endpoint",
)
@authorized(manage=True)
async def create_webhook(request: HttpRequest, key: Authorized, game: str, payload: WebhookIn) -> Ok:
    """Answers its `secret` this once: keep it to verify the signatures (docs/webhooks.md)."""
    now = clock.now()
    model = await Game.objects.aget(pk=key.game.id)
    endpoint = await sync_to_async(endpoint_services.endpoint_create)(
        game=model, now=now, by=key.actor, **payload.model_dump()
    )
    return Ok({**endpoint_json(endpoint, now), "secret": endpoint.secret}, status=201)


@router.get(
    "/games/{game}/webhooks/events",
    response={200: EventLogOut, **READ},
    auth=BearerKey(),
    summary="The game's event log",
)
@authorized(manage=True)
async def event_log(
    request: HttpRequest,
    key: Authorized,
    game: str,
    since: Instant | None = Query(None, description="Events written from this instant on (RFC 3339)."),
    after: str | None = Query(None, max_length=40, description="The `next_after` of the page before."),
    type: list[str] = Query([], description="Only these event types (repeat the parameter)."),
    limit: int = Query(PAGE_DEFAULT, ge=1, le=PAGE_MAX),
) -> Ok:
    """Every event of the game, in the order written, as webhooks send them, kept
    EVENT_RETENTION_SECS (7 days by default): page through it to reconcile after an outage."""
    page = await sync_to_async(selectors.events_page)(
        game_slug=key.game.slug,
        since=since,
        after=after,
        types=type,
        limit=limit,
    )
    return Ok({"events": page.events, "next_after": page.next_after})


@router.get(
    "/games/{game}/webhooks/{endpoint_id}",
    response={200: WebhookOut, **READ},
    auth=BearerKey(),
    summary="A webhook endpoint",
)
@authorized(manage=True)
async def get_webhook(request: HttpRequest, key: Authorized, game: str, endpoint_id: str) -> Ok:
    return Ok(endpoint_json(await _endpoint(key, endpoint_id), clock.now()))


@router.patch(
    "/games/{game}/webhooks/{endpoint_id}",
    response={200: WebhookOut, **WRITE},
    auth=BearerKey(),
    summary="Change a webhook endpoint",
)
@authorized(manage=True)
async def patch_webhook(
    request: HttpRequest, key: Authorized, game: str, endpoint_id: str, payload: WebhookPatch
) -> Ok:
    now = clock.now()
    changes = {name: value for name, value in payload.model_dump(exclude_unset=True).items() if value is not None}
    endpoint = await _endpoint(key, endpoint_id)
    endpoint = await sync_to_async(endpoint_services.endpoint_update)(
        endpoint=endpoint, changes=changes, now=now, by=key.actor
    )
    return Ok(endpoint_json(endpoint, now))


@router.delete(
    "/games/{game}/webhooks/{endpoint_id}",
    response={200: WebhookOut, **ACTION},
    auth=BearerKey(),
    summary="Delete a webhook endpoint",
)
@authorized(manage=True)
async def delete_webhook(request: HttpRequest, key: Authorized, game: str, endpoint_id: str) -> Ok:
    """Deletes it with its deliveries; answers it as it was."""
    endpoint = await _endpoint(key, endpoint_id)
    body = endpoint_json(endpoint, clock.now())
    await sync_to_async(endpoint_services.endpoint_delete)(endpoint=endpoint, by=key.actor)
    return Ok(body)


@router.post(
    "/games/{game}/webhooks/{endpoint_id}/rotate-secret",
    response={200: WebhookSecretOut, **WRITE},
    auth=BearerKey(),
    summary="Rotate a webhook endpoint's secret",
)
@authorized(manage=True)
async def rotate_secret(request: HttpRequest, key: Authorized, game: str, endpoint_id: str, payload: RotateIn) -> Ok:
    """A new secret signs from now on; the old one signs beside it for `grace_secs`."""
    now = clock.now()
    endpoint = await _endpoint(key, endpoint_id)
    endpoint = await sync_to_async(endpoint_services.secret_rotate)(
        endpoint=endpoint, grace_secs=payload.grace_secs, now=now, by=key.actor
    )
    return Ok({**endpoint_json(endpoint, now), "secret": endpoint.secret})


@router.post(
    "/games/{game}/webhooks/{endpoint_id}/test",
    response={202: TestSentOut, **ACTION},
    auth=BearerKey(),
    summary="Send a test event to a webhook endpoint",
)
@authorized(manage=True)
async def test_webhook(request: HttpRequest, key: Authorized, game: str, endpoint_id: str) -> Ok:
    endpoint = await _endpoint(key, endpoint_id)
    event = await sync_to_async(endpoint_services.endpoint_test)(endpoint=endpoint, now=clock.now(), by=key.actor)
    return Ok({"event_id": event.event_id, "event_type": event.type}, status=202)


@router.get(
    "/games/{game}/webhooks/{endpoint_id}/deliveries",
    response={200: DeliveryListOut, **READ},
    auth=BearerKey(),
    summary="A webhook endpoint's deliveries",
)
@authorized(manage=True)
async def list_deliveries(
    request: HttpRequest,
    key: Authorized,
    game: str,
    endpoint_id: str,
    status: Literal["pending", "delivered", "failed"] | None = Query(None),
    since: Instant | None = Query(None, description="Deliveries of events from this instant on (RFC 3339)."),
    offset: int = Query(0, ge=0, le=100_000),
    limit: int = Query(PAGE_DEFAULT, ge=1, le=PAGE_MAX),
) -> Ok:
    """Newest first."""
    endpoint = await _endpoint(key, endpoint_id)
    total, found = await sync_to_async(selectors.deliveries_page)(
        endpoint=endpoint,
        status=status,
        since=since,
        offset=offset,
        limit=limit,
    )
    return Ok({"total": total, "deliveries": [delivery_json(d) for d in found]})


@router.get(
    "/games/{game}/webhooks/{endpoint_id}/deliveries/{delivery_id}",
    response={200: DeliveryDetailOut, **READ},
    auth=BearerKey(),
    summary="A delivery with its attempts",
)
@authorized(manage=True)
async def get_delivery(request: HttpRequest, key: Authorized, game: str, endpoint_id: str, delivery_id: str) -> Ok:
    endpoint = await _endpoint(key, endpoint_id)
    delivery = await sync_to_async(selectors.delivery_get)(endpoint=endpoint, delivery_id=delivery_id)
    attempts = await sync_to_async(selectors.attempts_of)(delivery)
    return Ok(
        {
            **delivery_json(delivery),
            "payload": json.loads(delivery.payload),
            "attempt_list": [attempt_json(a) for a in attempts],
        }
    )


@router.post(
    "/games/{game}/webhooks/{endpoint_id}/deliveries/{delivery_id}/replay",
    response={202: DeliveryListOut, **ACTION},
    auth=BearerKey(),
    summary="Send one delivery again",
)
@authorized(manage=True)
async def replay_delivery(request: HttpRequest, key: Authorized, game: str, endpoint_id: str, delivery_id: str) -> Ok:
    """Pending again, due now, with a fresh schedule and the same `webhook-id` and body."""
    endpoint = await _endpoint(key, endpoint_id)
    delivery = await sync_to_async(selectors.delivery_get)(endpoint=endpoint, delivery_id=delivery_id)
    delivery = await sync_to_async(replay_services.delivery_replay)(delivery=delivery, now=clock.now(), by=key.actor)
    return Ok({"total": 1, "deliveries": [delivery_json(delivery)]}, status=202)


@router.post(
    "/games/{game}/webhooks/{endpoint_id}/replay",
    response={202: ReplayedOut, **WRITE},
    auth=BearerKey(),
    summary="Send every failed delivery since a time again",
)
@authorized(manage=True)
async def replay_failed(request: HttpRequest, key: Authorized, game: str, endpoint_id: str, payload: ReplayIn) -> Ok:
    """The endpoint's failed deliveries of events from `since` (to `until`), oldest first, at
    most 10,000 a call: pending again, due now, in event order."""
    endpoint = await _endpoint(key, endpoint_id)
    since, until = payload.since, payload.until
    replayed = await sync_to_async(replay_services.failed_replay)(
        endpoint=endpoint, since=since, until=until, now=clock.now(), by=key.actor
    )
    return Ok({"replayed": replayed}, status=202)
