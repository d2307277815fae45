"""What a delivery run writes to the database: each attempt with its answer, the delivery's
state after it, and its endpoint's health (which disables an endpoint answering 410, or
failing every attempt for WEBHOOK_DISABLE_AFTER_SECS)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.db.models.functions import Coalesce

from core import clock

from ..models import REASON_MAX_CHARS, Attempt, Delivery, Endpoint
from .sending import Answer

# Attempts kept per delivery (the newest): ten a schedule, and a few replays' worth.
WEBHOOK_ATTEMPTS_KEPT = 30


@dataclass(frozen=True)
class Verdict:
    outcome: str  # an Attempt.Outcome
    again_at: dt.datetime | None = None  # RETRY: when
    reason: str = ""  # FAILED: why it is given up
    disable: str = ""  # the endpoint is to be disabled, for this reason


def delivery_load(delivery_pk: int) -> Delivery | None:
    return Delivery.objects.select_related("endpoint").filter(pk=delivery_pk).first()


def signing_secrets(endpoint: Endpoint, now: dt.datetime) -> list[str]:
    """The secrets that sign now: the current one, and the previous one during its grace."""
    signing = [endpoint.secret]
    if endpoint.previous_secret and endpoint.previous_secret_until and endpoint.previous_secret_until > now:
        signing.append(endpoint.previous_secret)
    return signing


def delivery_abandon(delivery: Delivery, *, reason: str, now: dt.datetime) -> None:
    """Give up a pending delivery unsent (its endpoint disabled); a replay can send it later."""
    Delivery.objects.filter(pk=delivery.pk, status=Delivery.Status.PENDING).update(
        status=Delivery.Status.FAILED, finished_at=now, next_attempt_at=None, last_error=reason[:REASON_MAX_CHARS]
    )


def attempt_record(delivery: Delivery, answer: Answer, verdict: Verdict, *, now: dt.datetime) -> None:
    number = delivery.attempts + 1
    error = answer.error or verdict.reason
    with transaction.atomic():
        Attempt.objects.create(
            delivery=delivery,
            number=number,
            started_at=now,
            duration_ms=answer.duration_ms,
            url=delivery.endpoint.url,
            address=answer.address,
            request_headers=answer.headers,
            status_code=answer.status_code,
            response_body=answer.body,
            error=error[:REASON_MAX_CHARS],
            outcome=verdict.outcome,
        )
        _delivery_update(delivery, answer, verdict, number=number, error=error, now=now)
        _health_update(delivery.endpoint, verdict, error=error, status_code=answer.status_code, now=now)
        old = (
            Attempt.objects.filter(delivery=delivery)
            .order_by("-id")
            .values_list("pk", flat=True)[WEBHOOK_ATTEMPTS_KEPT:]
        )
        stale = list(old[:100])
        if stale:
            Attempt.objects.filter(pk__in=stale).delete()


def _delivery_update(
    delivery: Delivery, answer: Answer, verdict: Verdict, *, number: int, error: str, now: dt.datetime
) -> None:
    pending = verdict.outcome == Attempt.Outcome.RETRY
    status = {
        Attempt.Outcome.DELIVERED: Delivery.Status.DELIVERED,
        Attempt.Outcome.RETRY: Delivery.Status.PENDING,
        Attempt.Outcome.FAILED: Delivery.Status.FAILED,
    }[Attempt.Outcome(verdict.outcome)]
    Delivery.objects.filter(pk=delivery.pk, status=Delivery.Status.PENDING).update(
        status=status,
        attempts=number,
        next_attempt_at=verdict.again_at if pending else None,
        finished_at=None if pending else now,
        last_status_code=answer.status_code,
        last_error="" if status == Delivery.Status.DELIVERED else error[:REASON_MAX_CHARS],
    )


def _health_update(
    endpoint: Endpoint, verdict: Verdict, *, error: str, status_code: int | None, now: dt.datetime
) -> None:
    rows = Endpoint.objects.filter(pk=endpoint.pk)
    if verdict.outcome == Attempt.Outcome.DELIVERED:
        rows.update(last_success_at=now, failure_streak=0, failing_since=None, last_error="")
        return
    what = f"{status_code}: {error}" if status_code is not None and error else (error or f"Answered {status_code}.")
    rows.update(
        last_failure_at=now,
        failure_streak=F("failure_streak") + 1,
        failing_since=Coalesce(F("failing_since"), now),
        last_error=what[:REASON_MAX_CHARS],
    )
    if verdict.disable:
        endpoint_disable(endpoint, reason=verdict.disable, now=now)
        return
    cutoff = now - dt.timedelta(seconds=settings.WEBHOOK_DISABLE_AFTER_SECS)
    failing = rows.filter(enabled=True, failing_since__lte=cutoff).values_list("failing_since", flat=True).first()
    if failing is not None:
        endpoint_disable(endpoint, reason=f"Every attempt failed since {clock.iso(failing)}; last: {what}", now=now)


def endpoint_disable(endpoint: Endpoint, *, reason: str, now: dt.datetime) -> None:
    Endpoint.objects.filter(pk=endpoint.pk, enabled=True).update(
        enabled=False, disabled_reason=reason[:REASON_MAX_CHARS], disabled_at=now, updated_at=now
    )
