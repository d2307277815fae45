"""Delivering events to their handlers, at least once each, and pruning delivered ones.

A delivery run claims due events (a lease on each row, so two runs never work on the same
event and a run killed mid-way lets go when its lease runs out), then calls each event's
handlers that do not have it yet. Each call runs in a transaction with its delivery record
(``EventDelivery``): a handler that succeeded is never called again for that event; one that
raised is retried after a backoff, without holding up the other handlers or events. An event
is delivered once every handler subscribed to its type has it. See docs/events.md.
"""

from __future__ import annotations

import datetime as dt
import logging
import uuid
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Q

from .. import clock, metrics
from ..errors import DATABASE_ERRORS
from ..models import Event, EventDelivery
from .events import EventEnvelope
from .registry import Subscription, subscriptions_for

logger = logging.getLogger("core.outbox")

# A run holds the events it claimed this long; one killed mid-way (kill -9, a lost worker)
# lets them go then. Far longer than a batch of quick handlers takes.
OUTBOX_CLAIM_SECS = 300
# Events claimed at a time, and batches per run (a run ends; the next run or the sweep goes on).
OUTBOX_CLAIM_BATCH = 100
OUTBOX_BATCHES_PER_RUN = 50
# A failed handler is called again after 10 s, 20 s, 40 s... at most an hour apart, for as long
# as it fails: a bug fixed by a deploy then catches up on everything it missed.
OUTBOX_RETRY_BASE_SECS = 10
OUTBOX_RETRY_CAP_SECS = 3600
# From this many failures of one delivery on, each one is logged as an error (someone must look).
OUTBOX_ALERT_ATTEMPTS = 8
# The prune deletes this many delivered events per statement.
OUTBOX_PRUNE_BATCH = 1000
# What a delivery record keeps of a handler's last error.
LAST_ERROR_MAX_CHARS = 2000


@dataclass(frozen=True)
class DeliveryRun:
    events: int  # events the run took up
    delivered: int  # handler calls that succeeded
    failed: int  # handler calls that raised (each due again after its backoff)


def envelope_of(event: Event) -> EventEnvelope:
    return {
        "id": event.event_id,
        "type": event.type,
        "version": event.version,
        "created_at": clock.iso(event.created_at),
        "data": event.data,
    }


def retry_delay_secs(attempts: int) -> int:
    """How long after its ``attempts``-th failure a delivery is due again."""
    return int(min(OUTBOX_RETRY_CAP_SECS, OUTBOX_RETRY_BASE_SECS * 2 ** min(attempts - 1, 30)))


def outbox_deliver(
    *, claim_secs: int = OUTBOX_CLAIM_SECS, batch: int = OUTBOX_CLAIM_BATCH, batches: int = OUTBOX_BATCHES_PER_RUN
) -> DeliveryRun:
    """Deliver the events that are due (new ones, and those with a failed handler due again)."""
    token = uuid.uuid4().hex
    events = delivered = failed = 0
    for _ in range(batches):
        claimed = _claim(token, claim_secs, batch)
        if not claimed:
            break
        for event in claimed:
            ok, bad = _deliver(event, token)
            events, delivered, failed = events + 1, delivered + ok, failed + bad
    return DeliveryRun(events, delivered, failed)


def _claim(token: str, claim_secs: int, batch: int) -> list[Event]:
    """Take up to ``batch`` due events nobody holds (one UPDATE: two runs never share one)."""
    now = clock.now()
    free = Q(claimed_until__isnull=True) | Q(claimed_until__lt=now)
    due = Event.objects.filter(free, delivered_at__isnull=True, next_attempt_at__lte=now)
    ids = list(due.order_by("next_attempt_at", "id").values_list("pk", flat=True)[:batch])
    if not ids:
        return []
    until = now + dt.timedelta(seconds=claim_secs)
    Event.objects.filter(free, pk__in=ids).update(claimed_until=until, claim=token)
    return list(Event.objects.filter(pk__in=ids, claim=token).order_by("id").prefetch_related("deliveries"))


def _deliver(event: Event, token: str) -> tuple[int, int]:
    """Call each of the event's handlers that does not have it and is due; then let the event go,
    delivered or due again when its first failed handler is. Returns (succeeded, failed) calls."""
    now = clock.now()
    records = {record.handler: record for record in event.deliveries.all()}
    envelope = envelope_of(event)
    retry_at: list[dt.datetime] = []
    ok = bad = 0
    for subscription in subscriptions_for(event.type):
        record = records.get(subscription.name)
        if record is not None and record.status == EventDelivery.Status.DELIVERED:
            continue
        if record is not None and record.next_attempt_at is not None and record.next_attempt_at > now:
            retry_at.append(record.next_attempt_at)
            continue
        again = _call(event, envelope, subscription, record, now)
        metrics.EVENT_DELIVERIES.labels(result="delivered" if again is None else "failed").inc()
        if again is None:
            ok += 1
        else:
            bad += 1
            retry_at.append(again)
    done = not retry_at
    Event.objects.filter(pk=event.pk, claim=token).update(
        claimed_until=None,
        claim="",
        attempts=F("attempts") + 1,
        delivered_at=now if done else None,
        next_attempt_at=None if done else min(retry_at),
    )
    return ok, bad


class _DeliveredMeanwhile(Exception):
    """Another run recorded this delivery while this one called the handler (its lease ran out)."""


def _call(
    event: Event, envelope: EventEnvelope, subscription: Subscription, record: EventDelivery | None, now: dt.datetime
) -> dt.datetime | None:
    """One handler call and its record, in one transaction. Returns None when the handler has
    the event, else when it is due again."""
    try:
        with transaction.atomic():
            subscription.handler(envelope)
            _record_delivered(event, subscription.name, record, now)
        return None
    except _DeliveredMeanwhile:
        # What it did rolled back with its record; the record another run wrote says what is next.
        current = EventDelivery.objects.filter(event=event, handler=subscription.name).first()
        if current is not None and current.status == EventDelivery.Status.DELIVERED:
            return None
        return current.next_attempt_at or now if current is not None else now
    except DATABASE_ERRORS:
        raise  # the database is down: nothing can be recorded; the lease lets the event go
    except Exception as error:
        return _record_failed(event, subscription.name, record, now, error)


def _record_delivered(event: Event, handler: str, record: EventDelivery | None, now: dt.datetime) -> None:
    if record is None:
        # The unique (event, handler) refuses a second record: a concurrent run's call rolls back.
        try:
            EventDelivery.objects.create(
                event=event, handler=handler, status=EventDelivery.Status.DELIVERED, attempts=1, delivered_at=now
            )
        except IntegrityError:
            raise _DeliveredMeanwhile from None
        return
    updated = EventDelivery.objects.filter(pk=record.pk, attempts=record.attempts).update(
        status=EventDelivery.Status.DELIVERED, attempts=F("attempts") + 1, delivered_at=now, next_attempt_at=None
    )
    if not updated:
        raise _DeliveredMeanwhile


def _record_failed(
    event: Event, handler: str, record: EventDelivery | None, now: dt.datetime, error: Exception
) -> dt.datetime:
    attempts = (record.attempts if record is not None else 0) + 1
    again = now + dt.timedelta(seconds=retry_delay_secs(attempts))
    text = f"{type(error).__name__}: {error}"[:LAST_ERROR_MAX_CHARS]
    level = logging.ERROR if attempts >= OUTBOX_ALERT_ATTEMPTS else logging.WARNING
    logger.log(
        level,
        "event %s to %s failed (attempt %d); again at %s",
        event.event_id,
        handler,
        attempts,
        clock.iso(again),
        exc_info=error,
    )
    failed = EventDelivery.Status.FAILED
    with transaction.atomic():
        if record is not None:
            EventDelivery.objects.filter(pk=record.pk).exclude(status=EventDelivery.Status.DELIVERED).update(
                status=failed, attempts=attempts, next_attempt_at=again, last_error=text
            )
        else:
            try:
                with transaction.atomic():
                    EventDelivery.objects.create(
                        event=event,
                        handler=handler,
                        status=failed,
                        attempts=attempts,
                        next_attempt_at=again,
                        last_error=text,
                    )
            except IntegrityError:
                pass  # another run recorded it meanwhile: its record stands
    return again


def outbox_prune() -> int:
    """Delete events delivered more than EVENT_RETENTION_SECS ago, with their records; returns
    how many. Undelivered events stay, however old: they are work still to do."""
    cutoff = clock.now() - dt.timedelta(seconds=settings.EVENT_RETENTION_SECS)
    pruned = 0
    while True:
        ids = list(Event.objects.filter(delivered_at__lt=cutoff).values_list("pk", flat=True)[:OUTBOX_PRUNE_BATCH])
        if not ids:
            return pruned
        with transaction.atomic():
            EventDelivery.objects.filter(event_id__in=ids).delete()
            Event.objects.filter(pk__in=ids).delete()
        pruned += len(ids)
