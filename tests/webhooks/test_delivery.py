"""Deliveries end to end in this process, on the pinned clock: an event of a game reaches each
endpoint that wants it, signed (verified by the ``standardwebhooks`` library), retried on
5xx, 429 (honouring Retry-After), timeouts and refused connections over the Standard Webhooks
schedule, given up on other 4xx, and a 410 disables its endpoint."""

from __future__ import annotations

import datetime as dt
import json
import socket
from typing import Any

import pytest

from core import clock, outbox
from core.errors import ServiceError
from core.outbox import envelope_of
from tests.conftest import game_with_board
from webhooks.models import Attempt, Delivery
from webhooks.services import endpoints
from webhooks.services.delivery import RETRY_JITTER, RETRY_SCHEDULE_SECS

from .helpers import endpoint_for, erased, only_delivery, run_once
from .receiver import Receiver, Reply

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def receiver() -> Any:
    with Receiver().running() as running:
        yield running


def test_it_delivers_an_event_signed_to_an_endpoint_of_its_game(receiver: Receiver) -> None:
    game = game_with_board("tetris")
    endpoint = endpoint_for(game, receiver)
    event = erased(game)

    result = run_once()

    assert (result.delivered, result.retried, result.failed) == (1, 0, 0)
    (got,) = receiver.received
    assert got.event == envelope_of(event)
    outbox.envelope_check(got.event)
    assert got.webhook_id == event.event_id
    assert got.headers["webhook-timestamp"] == str(int(clock.now().timestamp()))
    assert got.headers["content-type"] == "application/json"
    assert got.headers["webhook-signature"].startswith("v1,")
    delivered = only_delivery(endpoint)
    assert (delivered.status, delivered.attempts, delivered.last_status_code) == ("delivered", 1, 200)
    assert json.loads(delivered.payload) == got.event
    endpoint.refresh_from_db()
    assert endpoint.last_success_at == clock.now() and endpoint.failure_streak == 0


def test_it_sends_each_endpoint_only_the_types_it_wants_and_no_other_games_events(receiver: Receiver) -> None:
    tetris, chess = game_with_board("tetris"), game_with_board("chess")
    endpoint_for(tetris, receiver, event_types=["player.erased"])
    other = Receiver()
    with other.running():
        endpoint_for(tetris, other, event_types=["score.corrected"])
        erased(tetris, "ada")
        erased(chess, "bob")
        run_once()
    assert [e["data"]["player_id"] for e in receiver.events()] == ["ada"]
    assert other.received == []


def test_it_retries_5xx_and_429_on_the_schedule_honouring_retry_after_with_one_webhook_id(receiver: Receiver) -> None:
    game = game_with_board("tetris")
    endpoint = endpoint_for(game, receiver)
    receiver.replies.extend([Reply(503), Reply(429, headers={"Retry-After": "900"}), Reply(200)])
    erased(game)

    assert run_once().retried == 1
    first = only_delivery(endpoint)
    assert first.status == "pending"
    assert first.next_attempt_at is not None
    wait = (first.next_attempt_at - clock.now()).total_seconds()
    assert RETRY_SCHEDULE_SECS[0] <= wait <= RETRY_SCHEDULE_SECS[0] * (1 + RETRY_JITTER)

    assert run_once().retried == 0  # not due yet: nothing sent
    clock_advance(wait + 0.01)
    assert run_once().retried == 1  # 429, Retry-After 900 s: longer than the schedule's 5 min
    second = only_delivery(endpoint)
    assert second.next_attempt_at is not None
    assert (second.next_attempt_at - clock.now()).total_seconds() == pytest.approx(900, abs=1)

    clock_advance(RETRY_SCHEDULE_SECS[1] * (1 + RETRY_JITTER))  # past the schedule's wait, before Retry-After
    assert run_once().delivered == 0
    clock_advance(900)
    assert run_once().delivered == 1
    assert len(set(receiver.ids())) == 1 and len(receiver.received) == 3
    attempts = list(Attempt.objects.filter(delivery=first).order_by("number"))
    assert [(a.status_code, a.outcome) for a in attempts] == [(503, "retry"), (429, "retry"), (200, "delivered")]


def test_it_gives_up_on_another_4xx_at_once_and_a_410_disables_the_endpoint(receiver: Receiver) -> None:
    game = game_with_board("tetris")
    endpoint = endpoint_for(game, receiver)
    receiver.replies.extend([Reply(400, body=b"bad payload"), Reply(410)])
    erased(game, "ada")
    assert run_once().failed == 1
    (failed,) = Delivery.objects.filter(endpoint=endpoint)
    assert (failed.status, failed.last_status_code) == ("failed", 400)
    assert Attempt.objects.get(delivery=failed).response_body == "bad payload"

    erased(game, "bob")
    assert run_once().failed == 1
    endpoint.refresh_from_db()
    assert not endpoint.enabled and "410" in endpoint.disabled_reason
    erased(game, "cy")  # a disabled endpoint gets no new deliveries
    run_once()
    assert Delivery.objects.filter(endpoint=endpoint).count() == 2


def test_it_gives_up_after_the_tenth_attempt_about_three_days_on(receiver: Receiver) -> None:
    game = game_with_board("tetris")
    endpoint = endpoint_for(game, receiver)
    receiver.replies.extend([Reply(500)] * 10)
    erased(game)
    started = clock.now()
    for _ in range(10):
        run_once()
        pending = only_delivery(endpoint)
        if pending.next_attempt_at is not None:
            clock_to(pending.next_attempt_at)
    gave_up = only_delivery(endpoint)
    assert (gave_up.status, gave_up.attempts) == ("failed", 10)
    assert "Gave up after 10 attempts" in gave_up.last_error
    assert gave_up.finished_at is not None
    span = (gave_up.finished_at - started).total_seconds()
    assert sum(RETRY_SCHEDULE_SECS) <= span <= sum(RETRY_SCHEDULE_SECS) * (1 + RETRY_JITTER)
    assert 3 * 86400 < span < 3.6 * 86400  # a receiver down three days still gets it
    assert len(receiver.received) == 10


def test_it_disables_an_endpoint_that_failed_every_attempt_for_the_disable_time(
    receiver: Receiver, settings: Any
) -> None:
    settings.WEBHOOK_DISABLE_AFTER_SECS = 3600
    game = game_with_board("tetris")
    endpoint = endpoint_for(game, receiver)
    receiver.replies.extend([Reply(500)] * 20)
    erased(game)
    for _ in range(5):  # 5 s, 5 min, 30 min, 2 h: the fifth attempt is past an hour of failures
        run_once()
        clock_to(only_delivery(endpoint).next_attempt_at or clock.now())
    endpoint.refresh_from_db()
    assert not endpoint.enabled
    assert endpoint.disabled_reason.startswith("Every attempt failed since") and "500" in endpoint.disabled_reason
    assert endpoint.failure_streak == 5


def test_it_times_out_a_hanging_receiver_and_delivers_to_the_others_meanwhile(
    receiver: Receiver, settings: Any
) -> None:
    settings.WEBHOOK_TIMEOUT_SECS = 0.5
    game = game_with_board("tetris")
    hanging = endpoint_for(game, receiver)
    receiver.replies.append(Reply(hang_secs=3))
    healthy_receiver = Receiver()
    with healthy_receiver.running():
        healthy = endpoint_for(game, healthy_receiver)
        erased(game)
        result = run_once()
    assert (result.delivered, result.retried) == (1, 1)
    assert only_delivery(healthy).status == "delivered"
    slow = only_delivery(hanging)
    assert slow.status == "pending" and slow.last_status_code is None
    assert "No answer within 0.5 s" in slow.last_error


def test_it_signs_with_both_secrets_during_a_rotation_and_the_new_one_after(receiver: Receiver) -> None:
    from webhooks.services.endpoints import secret_rotate

    game = game_with_board("tetris")
    endpoint = endpoint_for(game, receiver)
    old = endpoint.secret
    endpoint = secret_rotate(endpoint=endpoint, grace_secs=3600, now=clock.now())
    receiver.secrets = [old]  # a receiver not yet deployed with the new secret
    erased(game, "ada")
    run_once()
    assert len(receiver.received) == 1 and len(receiver.received[0].headers["webhook-signature"].split(" ")) == 2
    receiver.secrets = [endpoint.secret]
    erased(game, "bob")
    run_once()
    assert len(receiver.received) == 2

    clock_advance(3601)
    receiver.secrets = [old]
    erased(game, "cy")
    run_once()
    assert len(receiver.received) == 2 and receiver.refused  # the old secret signs no more


def test_it_sends_a_test_event_to_its_endpoint_only_whatever_types_it_wants(receiver: Receiver) -> None:
    from webhooks.services.endpoints import endpoint_test

    game = game_with_board("tetris")
    target = endpoint_for(game, receiver, event_types=["period.settled"])
    bystander_receiver = Receiver()
    with bystander_receiver.running():
        endpoint_for(game, bystander_receiver)
        event = endpoint_test(endpoint=target, now=clock.now())
        run_once()
    (got,) = receiver.received
    assert got.event["type"] == "webhook.test" and got.webhook_id == event.event_id
    assert got.event["data"] == {
        "game": "tetris",
        "endpoint_id": target.endpoint_id,
        "requested_at": clock.iso(clock.now()),
    }
    assert bystander_receiver.received == []


def test_it_refuses_to_connect_to_a_private_address_a_public_name_resolves_to(
    receiver: Receiver, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DNS rebinding: a name that passed registration resolves to a loopback address at the
    attempt. (The name's DNS is the one thing stood in for: this machine has no such zone.)"""
    real = socket.getaddrinfo

    def rebound(host: Any, *args: Any, **kwargs: Any) -> Any:
        return real("127.0.0.1" if host == "hooks.studio.example" else host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebound)
    game = game_with_board("tetris")
    endpoint = endpoint_for(game, receiver)
    settings.WEBHOOK_ALLOW_PRIVATE = False
    with pytest.raises(ServiceError, match="loopback"):
        endpoints.endpoint_update(endpoint=endpoint, changes={"url": receiver.url}, now=clock.now())
    settings.WEBHOOK_ALLOW_HTTP = True
    public = receiver.url.replace("127.0.0.1", "hooks.studio.example")
    endpoint = endpoints.endpoint_update(endpoint=endpoint, changes={"url": public}, now=clock.now())
    erased(game)
    assert run_once().retried == 1
    assert receiver.received == []
    assert "hooks.studio.example resolves to a loopback address (127.0.0.1)" in only_delivery(endpoint).last_error
    settings.WEBHOOK_ALLOW_PRIVATE = True  # development: the same name is let through
    clock_advance(10)
    assert run_once().delivered == 1


def clock_advance(secs: float) -> None:
    clock_to(clock.now() + dt.timedelta(seconds=secs))


def clock_to(instant: dt.datetime) -> None:
    from tests.conftest import _pinned

    _pinned[-1].set(max(instant, clock.now()))
