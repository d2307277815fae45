"""The delivery queue as a whole, on the pinned clock: events that came due while no run was up
go out when one is, in order per endpoint; an endpoint at its concurrency limit waits without
holding up the others; Redis losing the queue loses nothing (the database has it, the sweep
puts it back); a deleted endpoint leaves nothing behind."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from core import keys
from core.redis import close_redis, get_redis, run_sync
from tests.conftest import game_with_board
from webhooks.models import Delivery
from webhooks.services import endpoints
from webhooks.services.delivery import webhooks_run

from .helpers import endpoint_for, erased, run_once, swept
from .receiver import Receiver, Reply

pytestmark = pytest.mark.django_db(transaction=True)

EVENTS = 12


@pytest.fixture
def receiver() -> Any:
    with Receiver().running() as running:
        yield running


def test_it_catches_up_in_order_per_endpoint_after_no_run_was_up(receiver: Receiver, settings: Any) -> None:
    settings.WEBHOOK_ENDPOINT_CONCURRENCY = 1  # one request at a time: arrival order is send order
    game = game_with_board("tetris")
    endpoint_for(game, receiver)
    for i in range(EVENTS):
        erased(game, f"p{i:02d}")
    from core import outbox

    outbox.outbox_deliver()  # deliveries written and queued; no delivery run for an hour
    clock_advance(3600)
    result = asyncio.run(_run(budget_secs=5))
    assert result.delivered == EVENTS
    assert [e["data"]["player_id"] for e in receiver.events()] == [f"p{i:02d}" for i in range(EVENTS)]
    assert _queue_sizes() == (0, 0, 0)


def test_it_keeps_an_endpoint_at_its_limit_waiting_without_holding_up_the_others(
    receiver: Receiver, settings: Any
) -> None:
    settings.WEBHOOK_ENDPOINT_CONCURRENCY = 2
    settings.WEBHOOK_TIMEOUT_SECS = 0.3
    game = game_with_board("tetris")
    slow = endpoint_for(game, receiver)
    receiver.replies.extend([Reply(hang_secs=2)] * EVENTS)
    healthy_receiver = Receiver()
    with healthy_receiver.running():
        healthy = endpoint_for(game, healthy_receiver)
        for i in range(EVENTS):
            erased(game, f"p{i:02d}")
        result = run_once(budget_secs=5)
    assert result.delivered == EVENTS and result.retried == EVENTS
    # Two at a time: sent in order, arriving in about that order.
    assert sorted(e["data"]["player_id"] for e in healthy_receiver.events()) == [f"p{i:02d}" for i in range(EVENTS)]
    assert Delivery.objects.filter(endpoint=healthy, status="delivered").count() == EVENTS
    # The slow one had at most two requests at once, every one timed out, and all wait to retry.
    assert Delivery.objects.filter(endpoint=slow, status="pending", attempts=1).count() == EVENTS
    assert _queue_sizes() == (EVENTS, 0, 0)  # due again later; none claimed, none parked


def test_it_loses_nothing_when_redis_loses_the_queue(receiver: Receiver) -> None:
    game = game_with_board("tetris")
    endpoint_for(game, receiver)
    for i in range(3):
        erased(game, f"p{i}")
    from core import outbox

    outbox.outbox_deliver()
    run_sync(lambda: get_redis().flushdb())  # a Redis restarted without its data
    assert run_once().delivered == 0
    assert swept() == 3
    assert run_once().delivered == 3
    assert swept() == 0  # nothing pending: the sweep has nothing to add


def test_it_leaves_nothing_of_a_deleted_endpoint_in_the_queue(receiver: Receiver, settings: Any) -> None:
    settings.WEBHOOK_ENDPOINT_CONCURRENCY = 1
    game = game_with_board("tetris")
    endpoint = endpoint_for(game, receiver)
    receiver.replies.append(Reply(503))
    for i in range(3):
        erased(game, f"p{i}")
    run_once()  # p0 fails and waits to retry; p1 and p2 went out after it
    endpoints.endpoint_delete(endpoint=endpoint)
    clock_advance(3600)
    assert run_once().delivered == 0
    assert _queue_sizes() == (0, 0, 0)
    assert not Delivery.objects.exists()


def _queue_sizes() -> tuple[int, int, int]:
    """(due, claimed, parked) deliveries in Redis."""

    async def sizes() -> tuple[int, int, int]:
        client = get_redis()
        return (
            await client.zcard(keys.webhook_due()),
            await client.zcard(keys.webhook_claims()),
            await client.zcard(keys.webhook_parked()),
        )

    return run_sync(sizes)


async def _run(budget_secs: float) -> Any:
    try:
        return await webhooks_run(budget_secs=budget_secs)
    finally:
        await close_redis()


def clock_advance(secs: float) -> None:
    from tests.webhooks.test_delivery import clock_advance as advance

    advance(secs)
