"""What the webhook tests share: an endpoint pointed at a receiver, an event of a game, and
the delivery path run as beat and the outbox run it (in this process, on the pinned clock)."""

from __future__ import annotations

import asyncio
from typing import Any

from asgiref.sync import sync_to_async
from django.db import connections, transaction

from core import clock, outbox
from core.models import Event, Game
from core.redis import close_redis
from webhooks.models import Delivery, Endpoint
from webhooks.services import delivery, endpoints, sweep
from webhooks.services.delivery import RunResult

from .receiver import Receiver


def endpoint_for(game: Game, receiver: Receiver, **fields: Any) -> Endpoint:
    """An endpoint of ``game`` at ``receiver``, whose secret the receiver verifies with."""
    endpoint = endpoints.endpoint_create(game=game, url=receiver.url, now=clock.now(), **fields)
    receiver.secrets.append(endpoint.secret)
    return endpoint


def erased(game: Game, player_id: str = "ada") -> Event:
    """A player.erased event of ``game``, written as its fact's transaction would."""
    with transaction.atomic():
        return outbox.event_emit(
            outbox.PlayerErased(game=game.slug, player_id=player_id, erased_at=clock.iso(clock.now()))
        )


def run_once(budget_secs: float = 1.0) -> RunResult:
    """The outbox hands new events to the webhooks (their deliveries), then one delivery run."""
    outbox.outbox_deliver()

    async def run() -> RunResult:
        try:
            return await delivery.webhooks_run(budget_secs=budget_secs)
        finally:
            await close_redis()
            await sync_to_async(connections.close_all)()

    try:
        return asyncio.run(run())
    finally:
        connections.close_all()  # this thread's too (a test may run this in a thread of its own)


def swept() -> int:
    return sweep.deliveries_sweep(now=clock.now())


def only_delivery(endpoint: Endpoint) -> Delivery:
    (found,) = Delivery.objects.filter(endpoint=endpoint)
    return found
