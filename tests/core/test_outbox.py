"""Domain events (core/outbox/): written with their fact or not at all, delivered to every
subscribed handler, once per handler that succeeded, retried with a backoff for one that
failed without holding up the others, let go by a run that died, and pruned once delivered.

(tests/core/test_outbox_crash.py kills a real delivery run with kill -9.)"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db import transaction

from core import clock, outbox
from core.models import AuditEntry, Event, EventDelivery
from core.outbox import registry
from core.outbox.delivery import OUTBOX_RETRY_BASE_SECS, OUTBOX_RETRY_CAP_SECS, _claim
from tests.conftest import clock_at

pytestmark = pytest.mark.django_db


def erased(player_id: str = "ada") -> outbox.PlayerErased:
    return outbox.PlayerErased(game="tetris", player_id=player_id, erased_at=clock.iso(clock.now()))


def emit(data: outbox.EventData) -> Event:
    with transaction.atomic():
        return outbox.event_emit(data)


@pytest.fixture
def subscribed() -> Iterator[Callable[..., list[outbox.EventEnvelope]]]:
    """subscribe(name, types=..., fail=n): a handler that records what it gets (and raises its first n calls).
    The product's own handlers (the webhooks') step aside meanwhile: these tests count calls."""
    names: list[str] = []
    product = dict(registry._SUBSCRIPTIONS)
    registry._SUBSCRIPTIONS.clear()

    def subscribe(name: str, *, types: list[str] | None = None, fail: int = 0) -> list[outbox.EventEnvelope]:
        received: list[outbox.EventEnvelope] = []
        calls = [0]

        def handler(envelope: outbox.EventEnvelope) -> None:
            calls[0] += 1
            outbox.envelope_check(envelope)
            if calls[0] <= fail:
                raise RuntimeError(f"{name} is down")
            received.append(envelope)

        outbox.subscribe(name, handler, types=types)
        names.append(name)
        return received

    try:
        yield subscribe
    finally:
        for name in names:
            outbox.unsubscribe(name)
        registry._SUBSCRIPTIONS.update(product)


def test_it_writes_an_event_with_its_fact_and_none_when_the_fact_rolls_back() -> None:
    with pytest.raises(RuntimeError), transaction.atomic():
        outbox.event_emit(erased("gone"))
        raise RuntimeError("the fact failed")
    assert not Event.objects.exists()
    event = emit(erased("ada"))
    assert (event.type, event.version, event.game_slug) == ("player.erased", 1, "tetris")
    outbox.envelope_check(outbox.envelope_of(event))


@pytest.mark.django_db(transaction=True)
def test_it_refuses_to_write_an_event_outside_a_transaction() -> None:
    with pytest.raises(RuntimeError, match="inside the transaction"):
        outbox.event_emit(erased())


def test_it_writes_many_events_of_one_transaction_at_once_each_as_one_would_be(subscribed: Any) -> None:
    received = subscribed("test.many", types=["player.erased"])
    with pytest.raises(RuntimeError), transaction.atomic():
        outbox.events_emit([erased("gone-1"), erased("gone-2")])
        raise RuntimeError("the fact failed")
    assert not Event.objects.exists()

    with transaction.atomic():
        assert outbox.events_emit([erased(f"p{i}") for i in range(1200)]) == 1200
        assert outbox.events_emit([]) == 0
    outbox.outbox_deliver()

    events = list(Event.objects.order_by("id"))
    assert [e.data["player_id"] for e in events] == [f"p{i}" for i in range(1200)]
    assert len({e.event_id for e in events}) == 1200
    assert {(e.type, e.version, e.game_slug) for e in events} == {("player.erased", 1, "tetris")}
    assert sorted(envelope["data"]["player_id"] for envelope in received) == sorted(f"p{i}" for i in range(1200))


@pytest.mark.django_db(transaction=True)
def test_it_refuses_to_write_many_events_outside_a_transaction() -> None:
    with pytest.raises(RuntimeError, match="inside the transaction"):
        outbox.events_emit([erased()])
    assert not Event.objects.exists()


def test_it_writes_a_fact_named_once_only_once() -> None:
    first = emit(outbox.GameDeleted(game="tetris", deleted_at=clock.iso(clock.now())))
    with transaction.atomic():
        again = outbox.event_emit(outbox.GameDeleted(game="tetris", deleted_at=clock.iso(clock.now())), once="k")
        same = outbox.event_emit(outbox.GameDeleted(game="tetris", deleted_at=clock.iso(clock.now())), once="k")
    assert same.pk == again.pk != first.pk
    assert Event.objects.count() == 2


def test_it_refuses_data_its_type_does_not_declare() -> None:
    with pytest.raises(ValueError):
        outbox.PlayerErased(game="tetris", player_id="ada", erased_at="yesterday")
    with pytest.raises(ValueError):
        outbox.PlayerErased(game="tetris", player_id="ada", erased_at=clock.iso(clock.now()), extra=1)  # type: ignore[call-arg]
    with pytest.raises(AssertionError, match="undeclared"):
        outbox.envelope_check({**outbox.envelope_of(emit(erased())), "type": "player.renamed"})


def test_it_delivers_each_event_to_every_handler_subscribed_to_its_type_once(subscribed: Any) -> None:
    everything = subscribed("test.all")
    erasures = subscribed("test.erasures", types=["player.erased"])
    deletions = subscribed("test.deletions", types=["game.deleted"])
    ada, bob = emit(erased("ada")), emit(erased("bob"))
    run = outbox.outbox_deliver()
    assert (run.events, run.delivered, run.failed) == (2, 4, 0)
    assert [e["id"] for e in everything] == [e["id"] for e in erasures] == [ada.event_id, bob.event_id]
    assert deletions == []
    assert outbox.outbox_deliver().events == 0  # nothing due: every handler has them
    assert [e["data"]["player_id"] for e in everything] == ["ada", "bob"]
    assert Event.objects.filter(delivered_at__isnull=True).count() == 0
    assert EventDelivery.objects.filter(status=EventDelivery.Status.DELIVERED).count() == 4


def test_it_marks_an_event_no_handler_wants_delivered() -> None:
    emit(erased())
    assert outbox.outbox_deliver().events == 1
    assert Event.objects.get().delivered_at == clock.now()


def test_it_retries_a_failing_handler_with_a_backoff_without_holding_up_the_others(subscribed: Any) -> None:
    steady = subscribed("test.steady")
    flaky = subscribed("test.flaky", fail=3)
    event = emit(erased())
    assert outbox.outbox_deliver().failed == 1
    assert len(steady) == 1 and flaky == []
    record = EventDelivery.objects.get(handler="test.flaky")
    assert (record.status, record.attempts) == (EventDelivery.Status.FAILED, 1)
    assert "test.flaky is down" in record.last_error
    first_retry = clock.now() + dt.timedelta(seconds=OUTBOX_RETRY_BASE_SECS)
    assert record.next_attempt_at == Event.objects.get().next_attempt_at == first_retry
    other = emit(erased("bob"))  # a later event is not held up behind the failed one
    assert outbox.outbox_deliver().events == 1
    assert [e["id"] for e in steady] == [event.event_id, other.event_id]
    with clock_at(first_retry):
        run = outbox.outbox_deliver()  # both flaky deliveries are due: the first fails again
    assert (run.events, run.delivered, run.failed) == (2, 1, 1)
    second_retry = first_retry + dt.timedelta(seconds=2 * OUTBOX_RETRY_BASE_SECS)
    assert EventDelivery.objects.get(handler="test.flaky", event=event).next_attempt_at == second_retry
    with clock_at(second_retry - dt.timedelta(milliseconds=1)):
        assert outbox.outbox_deliver().events == 0
    with clock_at(second_retry):
        assert outbox.outbox_deliver().delivered == 1
    assert sorted(e["id"] for e in flaky) == sorted([event.event_id, other.event_id])
    assert len(steady) == 2  # never called again
    assert not Event.objects.filter(delivered_at__isnull=True).exists()


def test_it_backs_off_exponentially_up_to_an_hour() -> None:
    delays = [outbox.retry_delay_secs(n) for n in range(1, 12)]
    assert delays[:4] == [10, 20, 40, 80]
    assert delays[-1] == OUTBOX_RETRY_CAP_SECS
    assert delays == sorted(delays)


def test_it_rolls_back_what_a_failing_handler_wrote_and_keeps_what_a_successful_one_wrote() -> None:
    def writer(fail: bool) -> Callable[[outbox.EventEnvelope], None]:
        def handler(envelope: outbox.EventEnvelope) -> None:
            AuditEntry.objects.create(
                at=clock.now(), actor_name="test", action="erase", game_slug="tetris", reason=envelope["id"]
            )
            if fail:
                raise RuntimeError("after writing")

        return handler

    outbox.subscribe("test.writes", writer(fail=False))
    outbox.subscribe("test.writes-then-fails", writer(fail=True))
    try:
        event = emit(erased())
        outbox.outbox_deliver()
    finally:
        outbox.unsubscribe("test.writes")
        outbox.unsubscribe("test.writes-then-fails")
    assert AuditEntry.objects.filter(reason=event.event_id).count() == 1


def test_it_lets_the_events_of_a_run_that_died_go_when_its_claim_runs_out(subscribed: Any) -> None:
    received = subscribed("test.after-crash")
    emit(erased())
    assert len(_claim("dead-run", 300, 100)) == 1  # a run that claimed it, then was killed
    assert outbox.outbox_deliver().events == 0  # held by the dead run
    with clock_at(clock.now() + dt.timedelta(seconds=301)):
        assert outbox.outbox_deliver().events == 1
    assert len(received) == 1


def test_it_prunes_delivered_events_past_their_retention_and_keeps_the_others(settings: Any, subscribed: Any) -> None:
    settings.EVENT_RETENTION_SECS = 3600
    subscribed("test.always-down", types=["game.deleted"], fail=10**6)
    stuck = emit(outbox.GameDeleted(game="tetris", deleted_at=clock.iso(clock.now())))
    delivered = emit(erased())
    outbox.outbox_deliver()
    with clock_at(clock.now() + dt.timedelta(seconds=3600)):
        assert outbox.outbox_prune() == 0  # not past the retention yet
    with clock_at(clock.now() + dt.timedelta(seconds=3601)):
        assert outbox.outbox_prune() == 1
    assert list(Event.objects.values_list("pk", flat=True)) == [stuck.pk]  # undelivered: still work to do
    assert EventDelivery.objects.filter(event_id=stuck.pk).exists()
    assert not EventDelivery.objects.filter(event_id=delivered.pk).exists()


def test_it_refuses_a_handler_of_an_unknown_type_or_a_name_taken_by_another() -> None:
    with pytest.raises(ValueError, match="no such event types"):
        outbox.subscribe("test.typo", lambda envelope: None, types=["period.archive"])
    outbox.subscribe("test.taken", lambda envelope: None)
    try:
        with pytest.raises(ValueError, match="already subscribed"):
            outbox.subscribe("test.taken", lambda envelope: None)
    finally:
        outbox.unsubscribe("test.taken")


def test_it_gives_event_ids_that_sort_by_creation() -> None:
    first = emit(erased("a"))
    with clock_at(clock.now() + dt.timedelta(milliseconds=1)):
        second = emit(erased("b"))
    assert first.event_id < second.event_id
    assert outbox.envelope_of(first)["created_at"] == clock.iso(clock.now())


def test_it_counts_handler_calls_by_result(subscribed: Any) -> None:
    from prometheus_client import REGISTRY

    def count(result: str) -> float:
        return REGISTRY.get_sample_value("leaderboard_event_deliveries_total", {"result": result}) or 0.0

    before = count("delivered"), count("failed")
    subscribed("test.counted")
    subscribed("test.counted-down", fail=1)
    emit(erased())
    outbox.outbox_deliver()
    assert (count("delivered") - before[0], count("failed") - before[1]) == (1, 1)
