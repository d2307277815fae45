"""Writing an event: in the transaction of the fact it records, so that the two commit or
roll back together (a transactional outbox). After that transaction commits, a delivery run
is queued at once; beat's sweep catches any that queueing missed."""

from __future__ import annotations

import functools
import logging
import secrets
from collections import Counter
from collections.abc import Iterator, Sequence

from celery import current_app
from django.db import transaction

from .. import bulk, clock, metrics
from ..models import Event
from .events import EventData

logger = logging.getLogger("core.outbox")

# Rows per COPY (SQLite: INSERT) when many events are written at once (events_emit): a
# settlement's tens of thousands in a few statements, one chunk's rows held at a time.
EVENTS_INSERT_BATCH = 5000
_EVENT_COLUMNS = bulk.columns_of(
    Event, ["event_id", "type", "version", "game_slug", "data", "created_at", "next_attempt_at", "claim", "attempts"]
)
_EVENT_KEY = bulk.columns_of(Event, ["event_id"])


def event_id_new(now_ms: int) -> str:
    """'evt_' + the creation time in ms (12 hex digits: ids sort by time) + 16 random hex digits."""
    return f"evt_{now_ms:012x}{secrets.token_hex(8)}"


def event_emit(data: EventData, *, once: str | None = None) -> Event:
    """Record the event ``data`` (its type and version are its model's) in the current transaction.

    Call it inside the ``transaction.atomic()`` that writes the fact: an event is never
    delivered for a fact that rolled back, nor lost for one that committed. ``once`` names a
    fact that must be recorded once however often its writer runs: a second event with the same
    ``once`` is not written, and the first is returned (keep it unique within the retention).
    """
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("event_emit belongs inside the transaction that writes its fact")
    checked = type(data).model_validate(data.model_dump())  # a model built with model_construct too
    if once is not None:
        existing = Event.objects.filter(once_key=once).first()
        if existing is not None:
            return existing
    now = clock.now()
    event = Event.objects.create(
        event_id=event_id_new(clock.to_ms(now)),
        type=data.TYPE,
        version=data.VERSION,
        game_slug=data.game,
        data=checked.model_dump(mode="json"),
        created_at=now,
        once_key=once,
        next_attempt_at=now,
    )
    _queue_delivery_on_commit()
    transaction.on_commit(metrics.EVENTS_WRITTEN.labels(type=data.TYPE).inc)
    return event


def events_emit(datas: Sequence[EventData]) -> int:
    """Record many events in the current transaction at once (a settlement's grants: thousands),
    each as ``event_emit`` would, in a few COPYs (SQLite: INSERTs) rather than one per event.
    Each built by its model's constructor, which checked it (not ``model_construct``). Returns
    how many."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("events_emit belongs inside the transaction that writes their facts")
    if not datas:
        return 0
    now = clock.now()
    now_ms = clock.to_ms(now)
    for chunk in _chunks(datas, EVENTS_INSERT_BATCH):
        rows = [
            (
                event_id_new(now_ms),
                data.TYPE,
                data.VERSION,
                data.game,
                # Its constructor validated it (the models are strict and frozen): serialised
                # straight from the model, which costs a third of a check and a dict round trip.
                data.model_dump_json(),
                now,
                now,
                "",
                0,
            )
            for data in chunk
        ]
        # Plain rows, not model instances (which cost ten times the COPY); the ids are new, so a
        # plain COPY on PostgreSQL. Not once-keyed: once_key stays null.
        bulk.insert_rows(model=Event, columns=_EVENT_COLUMNS, rows=rows, conflict=_EVENT_KEY, fresh=True)
    _queue_delivery_on_commit()
    for type_, count in Counter(data.TYPE for data in datas).items():
        transaction.on_commit(functools.partial(metrics.EVENTS_WRITTEN.labels(type=type_).inc, count))
    return len(datas)


def _chunks(datas: Sequence[EventData], size: int) -> Iterator[Sequence[EventData]]:
    for start in range(0, len(datas), size):
        yield datas[start : start + size]


def _queue_delivery_on_commit() -> None:
    connection = transaction.get_connection()
    # One delivery run per transaction, however many events it wrote.
    if not any(callback is _queue_delivery for _, callback, *_ in connection.run_on_commit):
        transaction.on_commit(_queue_delivery, robust=True)


# core/tasks.py's task, by name (that module imports this package).
DELIVER_TASK = "core.tasks.deliver_events"


def _queue_delivery() -> None:
    try:
        current_app.send_task(DELIVER_TASK, retry=False)
    except Exception as error:  # the broker unreachable: the fact stands, the sweep delivers it
        logger.warning("could not queue an event delivery run (%s: %s); beat's sweep will", type(error).__name__, error)
