"""A game's webhook endpoints: registered, changed, deleted, their secret rotated, a test event
sent. Each change goes in the audit trail."""

from __future__ import annotations

import datetime as dt
import secrets
from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.db import transaction

from core import clock, errors, outbox, text
from core.audit import SYSTEM, Actor, audit_record
from core.models import AuditEntry, Event, Game

from ..addresses import AddressRefused, url_check
from ..models import DESCRIPTION_MAX_CHARS, Endpoint
from ..signing import secret_new
from .queue import forget_on_commit

# Endpoints a game may have: each is a queue of its own to every event, so a tenant's count
# bounds its cost to the others.
WEBHOOK_ENDPOINTS_PER_GAME = 20
# A rotated-out secret signs beside the new one this long by default (the receiver's deploy of
# the new secret), and at most this long.
ROTATE_GRACE_DEFAULT_SECS = 24 * 3600
ROTATE_GRACE_MAX_SECS = 7 * 24 * 3600
DISABLED_BY_STUDIO = "Disabled by the studio."


def endpoint_id_new() -> str:
    return "ep_" + secrets.token_urlsafe(16)


def url_checked(url: str) -> str:
    try:
        url_check(url, allow_http=settings.WEBHOOK_ALLOW_HTTP, allow_private=settings.WEBHOOK_ALLOW_PRIVATE)
    except AddressRefused as refused:
        raise errors.invalid("url", str(refused)) from None
    return url


def event_types_checked(types: Sequence[str]) -> list[str]:
    unknown = sorted(set(types) - set(outbox.EVENTS))
    if unknown:
        raise errors.invalid("event_types", f"No such event types: {', '.join(unknown)} (docs/events.md lists them).")
    return sorted(set(types))


def description_checked(description: str) -> str:
    description = description.strip()
    if len(description) > DESCRIPTION_MAX_CHARS or text.has_control_characters(description):
        raise errors.invalid("description", f"One line of at most {DESCRIPTION_MAX_CHARS} characters.")
    return description


def endpoint_create(
    *,
    game: Game,
    url: str,
    description: str = "",
    event_types: Sequence[str] = (),
    enabled: bool = True,
    now: dt.datetime,
    by: Actor = SYSTEM,
) -> Endpoint:
    """A new endpoint with a new secret (shown to its creator once, as the API answers)."""
    fields = {
        "url": url_checked(url),
        "description": description_checked(description),
        "event_types": event_types_checked(event_types),
    }
    with transaction.atomic():
        # The game's row, locked: two creations at once cannot both pass the limit.
        Game.objects.select_for_update().filter(pk=game.pk).first()
        if Endpoint.objects.filter(game=game).count() >= WEBHOOK_ENDPOINTS_PER_GAME:
            raise errors.webhook_limit(limit=WEBHOOK_ENDPOINTS_PER_GAME)
        endpoint = Endpoint.objects.create(
            endpoint_id=endpoint_id_new(),
            game=game,
            enabled=enabled,
            disabled_reason="" if enabled else DISABLED_BY_STUDIO,
            disabled_at=None if enabled else now,
            secret=secret_new(),
            created_at=now,
            updated_at=now,
            **fields,
        )
        detail = {"url": endpoint.url, "event_types": endpoint.event_types}
        audit(AuditEntry.Action.WEBHOOK_CREATE, endpoint, by, detail)
    return endpoint


def endpoint_update(*, endpoint: Endpoint, changes: dict[str, Any], now: dt.datetime, by: Actor = SYSTEM) -> Endpoint:
    """Change ``url``, ``description``, ``event_types`` or ``enabled``. Enabling a disabled
    endpoint clears its reason and failure streak: its next failure starts a new count."""
    checks = {"url": url_checked, "description": description_checked, "event_types": event_types_checked}
    for name, value in changes.items():
        setattr(endpoint, name, checks[name](value) if name in checks else value)
    fields = {*changes, "updated_at"}
    if changes.get("enabled") is True:
        endpoint.disabled_reason, endpoint.disabled_at = "", None
        endpoint.failing_since, endpoint.failure_streak = None, 0
        fields |= {"disabled_reason", "disabled_at", "failing_since", "failure_streak"}
    elif changes.get("enabled") is False and not endpoint.disabled_at:
        endpoint.disabled_reason, endpoint.disabled_at = DISABLED_BY_STUDIO, now
        fields |= {"disabled_reason", "disabled_at"}
    endpoint.updated_at = now
    with transaction.atomic():
        # Only what changed: a delivery run may be writing the endpoint's health meanwhile.
        endpoint.save(update_fields=sorted(fields))
        audit(AuditEntry.Action.WEBHOOK_UPDATE, endpoint, by, {key: getattr(endpoint, key) for key in changes})
    return endpoint


def endpoint_delete(*, endpoint: Endpoint, by: Actor = SYSTEM) -> None:
    """Gone with its deliveries and attempts; those queued are dropped when a run claims them."""
    with transaction.atomic():
        audit(AuditEntry.Action.WEBHOOK_DELETE, endpoint, by, {"url": endpoint.url})
        forget_on_commit(endpoint.pk)
        endpoint.delete()


def secret_rotate(
    *, endpoint: Endpoint, grace_secs: int = ROTATE_GRACE_DEFAULT_SECS, now: dt.datetime, by: Actor = SYSTEM
) -> Endpoint:
    """A new secret signs from now on; the old one also signs for ``grace_secs`` (0: stops now)."""
    if not 0 <= grace_secs <= ROTATE_GRACE_MAX_SECS:
        raise errors.invalid("grace_secs", f"From 0 to {ROTATE_GRACE_MAX_SECS} seconds.")
    endpoint.previous_secret = endpoint.secret if grace_secs else ""
    endpoint.previous_secret_until = now + dt.timedelta(seconds=grace_secs) if grace_secs else None
    endpoint.secret = secret_new()
    endpoint.updated_at = now
    with transaction.atomic():
        endpoint.save(update_fields=["previous_secret", "previous_secret_until", "secret", "updated_at"])
        audit(AuditEntry.Action.WEBHOOK_ROTATE, endpoint, by, {"grace_secs": grace_secs})
    return endpoint


def endpoint_test(*, endpoint: Endpoint, now: dt.datetime, by: Actor = SYSTEM) -> Event:
    """Send a ``webhook.test`` event to this endpoint only (whatever types it wants); returns
    the event (its id is the delivery's ``webhook-id``)."""
    if not endpoint.enabled:
        raise errors.webhook_disabled(reason=endpoint.disabled_reason)
    data = outbox.WebhookTest(game=endpoint.game.slug, endpoint_id=endpoint.endpoint_id, requested_at=clock.iso(now))
    with transaction.atomic():
        event = outbox.event_emit(data)
        audit(AuditEntry.Action.WEBHOOK_TEST, endpoint, by, {"event_id": event.event_id})
    return event


def audit(action: str, endpoint: Endpoint, by: Actor, detail: dict[str, Any]) -> None:
    """An act on an endpoint in the audit trail (in the act's transaction)."""
    audit_record(
        action=action,
        game_slug=endpoint.game.slug,
        by=by,
        detail={"endpoint_id": endpoint.endpoint_id, **detail},
    )
