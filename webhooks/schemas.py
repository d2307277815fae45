"""Request and response shapes of the webhook endpoints (webhooks/api.py). Class names are
unique across the API: the OpenAPI components are keyed by them."""

from __future__ import annotations

from typing import Any, Literal

from ninja import Schema
from pydantic import Field, StrictBool, StrictInt, StrictStr

from core.schemas import with_example
from games.schemas import Instant

_ENDPOINT: dict[str, Any] = {
    "endpoint_id": "ep_3kTq9XbN0vLw9RtYc3ZpEg",
    "url": "https://hooks.example.com/leaderboard",
    "description": "Economy service",
    "event_types": ["period.settled", "reward.granted"],
    "enabled": True,
    "disabled_reason": None,
    "disabled_at": None,
    "created_at": "2026-11-26T12:00:00.000Z",
    "updated_at": "2026-11-26T12:00:00.000Z",
    "health": {
        "last_success_at": "2026-11-26T12:05:00.120Z",
        "last_failure_at": None,
        "failing_since": None,
        "failure_streak": 0,
        "last_error": None,
    },
    "secret_rotating_until": None,
}
_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw9zVX6WThxBk="
_ATTEMPT: dict[str, Any] = {
    "number": 1,
    "started_at": "2026-11-26T12:05:00.100Z",
    "duration_ms": 20,
    "address": "203.0.113.7",
    "status_code": 200,
    "response_body": "ok",
    "error": None,
    "outcome": "delivered",
    "request_headers": {"webhook-id": "evt_019cd2a8a1e0aa11bb22cc33dd44", "webhook-timestamp": "1795694700"},
}
_DELIVERY: dict[str, Any] = {
    "delivery_id": "dlv_Zk1uN0pYb3lJc2Fh",
    "event_id": "evt_019cd2a8a1e0aa11bb22cc33dd44",
    "event_type": "period.settled",
    "status": "delivered",
    "attempts": 1,
    "next_attempt_at": None,
    "created_at": "2026-11-26T12:05:00.090Z",
    "finished_at": "2026-11-26T12:05:00.121Z",
    "last_status_code": 200,
    "last_error": None,
    "replays": 0,
}


class WebhookIn(Schema):
    model_config = with_example(
        {"url": "https://hooks.example.com/leaderboard", "event_types": ["period.settled"]}, forbid_extra=True
    )

    url: StrictStr = Field(description="Where events go: https:// (http:// only where WEBHOOK_ALLOW_HTTP is on).")
    description: StrictStr = Field("", description="One line for people, at most 200 characters.")
    event_types: list[StrictStr] = Field(
        default_factory=list, description="The event types it receives (docs/events.md); empty or omitted: all."
    )
    enabled: StrictBool = True


class WebhookPatch(Schema):
    model_config = with_example({"enabled": True}, forbid_extra=True)

    url: StrictStr | None = None
    description: StrictStr | None = None
    event_types: list[StrictStr] | None = None
    enabled: StrictBool | None = Field(None, description="true re-enables a disabled endpoint and clears its failures.")


class RotateIn(Schema):
    model_config = with_example({"grace_secs": 3600}, forbid_extra=True)

    grace_secs: StrictInt = Field(
        86400, ge=0, le=7 * 86400, description="How long the old secret also signs (0: not at all). Default a day."
    )


class ReplayIn(Schema):
    model_config = with_example({"since": "2026-11-25T00:00:00Z"}, forbid_extra=True)

    since: Instant = Field(description="Replay the failed deliveries of events from this instant (RFC 3339) on.")
    until: Instant | None = Field(None, description="...and before this one; omitted: up to now.")


class WebhookHealthOut(Schema):
    model_config = with_example(_ENDPOINT["health"])

    last_success_at: str | None
    last_failure_at: str | None
    failing_since: str | None = Field(description="The first failure since the last success; null when healthy.")
    failure_streak: int = Field(description="Failed attempts since the last success.")
    last_error: str | None


class WebhookOut(Schema):
    model_config = with_example(_ENDPOINT)

    endpoint_id: str
    url: str
    description: str
    event_types: list[str] = Field(description="Empty: every event type.")
    enabled: bool
    disabled_reason: str | None = Field(description="Why it is disabled: by the studio, a 410, or days of failures.")
    disabled_at: str | None
    created_at: str
    updated_at: str
    health: WebhookHealthOut
    secret_rotating_until: str | None = Field(description="Until when the previous secret also signs.")


class WebhookSecretOut(WebhookOut):
    model_config = with_example({**_ENDPOINT, "secret": _SECRET})

    secret: str = Field(description="'whsec_' and the base64 key: shown only when created or rotated. Keep it.")


class WebhookListOut(Schema):
    model_config = with_example({"webhooks": [_ENDPOINT]})

    webhooks: list[WebhookOut]


class TestSentOut(Schema):
    model_config = with_example({"event_id": "evt_019cd2a8a1e0aa11bb22cc33dd44", "event_type": "webhook.test"})

    event_id: str = Field(description="The test event's id: the delivery's webhook-id.")
    event_type: Literal["webhook.test"]


class AttemptOut(Schema):
    model_config = with_example(_ATTEMPT)

    number: int
    started_at: str
    duration_ms: int
    address: str | None = Field(description="The checked address it connected to.")
    status_code: int | None = Field(description="null: no answer (timeout, refused, unreachable).")
    response_body: str = Field(description="The first 1,024 characters of the answer.")
    error: str | None
    outcome: Literal["delivered", "retry", "failed"]
    request_headers: dict[str, str]


class DeliveryOut(Schema):
    model_config = with_example(_DELIVERY)

    delivery_id: str
    event_id: str = Field(description="The event's id: the webhook-id of every attempt.")
    event_type: str
    status: Literal["pending", "delivered", "failed"]
    attempts: int = Field(description="Attempts since it was created or last replayed.")
    next_attempt_at: str | None
    created_at: str
    finished_at: str | None
    last_status_code: int | None
    last_error: str | None
    replays: int


class DeliveryDetailOut(DeliveryOut):
    model_config = with_example({**_DELIVERY, "payload": {"id": "evt_…"}, "attempt_list": [_ATTEMPT]})

    payload: dict[str, Any] = Field(description="The body every attempt sends: the event's envelope.")
    attempt_list: list[AttemptOut] = Field(description="Its attempts, oldest first (the last 30).")


class DeliveryListOut(Schema):
    model_config = with_example({"total": 1, "deliveries": [_DELIVERY]})

    total: int
    deliveries: list[DeliveryOut]


class ReplayedOut(Schema):
    model_config = with_example({"replayed": 3})

    replayed: int = Field(description="Deliveries made pending again, due now.")


class EventLogOut(Schema):
    model_config = with_example(
        {
            "events": [
                {
                    "id": "evt_019cd2a8a1e0aa11bb22cc33dd44",
                    "type": "webhook.test",
                    "version": 1,
                    "created_at": "2026-11-26T12:00:00.000Z",
                    "data": {
                        "game": "tetris",
                        "endpoint_id": "ep_3kTq9XbN0vLw9RtYc3ZpEg",
                        "requested_at": "2026-11-26T12:00:00.000Z",
                    },
                }
            ],
            "next_after": None,
        }
    )

    events: list[dict[str, Any]] = Field(description="Event envelopes, oldest first, as webhooks send them.")
    next_after: str | None = Field(description="Pass as `after` for the next page; null on the last.")
