"""``manage.py webhooks``: each subcommand does what the API does, through the same services,
as "manage.py webhooks" in the audit trail; what a delivery run then sends reaches a real
receiver; every refusal is a CommandError with the service's message, and changes nothing."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from core import clock
from core.models import AuditEntry, Event, Game
from tests.conftest import _pinned, game_with_board
from webhooks.models import Delivery, Endpoint
from webhooks.services import endpoints

from .helpers import endpoint_for, erased, only_delivery, run_once
from .receiver import Receiver, Reply

# Delivery runs read and write the database from their own thread: rows must be committed.
pytestmark = pytest.mark.django_db(transaction=True)

ACTOR = "manage.py webhooks"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver().running() as running:
        yield running


@pytest.fixture
def game() -> Game:
    return game_with_board("tetris", board=None)


def run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("webhooks", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def refused(*args: str) -> str:
    with pytest.raises(CommandError) as caught:
        run(*args)
    return str(caught.value)


def test_it_adds_an_endpoint_printing_its_id_and_secret_once(game, receiver):
    out, err = run(
        "add", "tetris", receiver.url, "--description", "Economy", "--event-type", "webhook.test",
        "--event-type", "player.erased",
    )  # fmt: skip

    endpoint = Endpoint.objects.get()
    assert out == f"endpoint_id {endpoint.endpoint_id}\nsecret {endpoint.secret}\n"
    assert "Store the secret now: it is not shown again." in err and endpoint.secret not in err
    assert (endpoint.description, endpoint.event_types, endpoint.enabled) == (
        "Economy",
        ["player.erased", "webhook.test"],
        True,
    )
    entry = AuditEntry.objects.get(action="webhook_create")
    assert (entry.actor_name, entry.game_slug) == (ACTOR, "tetris")
    receiver.secrets.append(out.split()[-1])
    run("test", "tetris", endpoint.endpoint_id)
    run_once()
    assert [e["type"] for e in receiver.events()] == ["webhook.test"]
    listed, _ = run("list", "tetris")
    assert endpoint.secret not in listed


def test_it_adds_a_disabled_endpoint(game):
    run("add", "tetris", "https://hooks.example.com/x", "--disabled")
    assert Endpoint.objects.get().enabled is False


def test_it_lists_endpoints_with_their_health(game, receiver):
    assert run("list", "tetris")[0] == "tetris has no webhook endpoints.\n"
    healthy = endpoint_for(game, receiver)
    broken = Receiver()
    with broken.running():
        failing = endpoint_for(game, broken)
        broken.replies.append(Reply(503))
        erased(game)
        run_once()
    disabled = endpoint_for(game, receiver)
    endpoints.endpoint_update(endpoint=disabled, changes={"enabled": False}, now=clock.now())
    fresh = endpoint_for(game, receiver)

    out, _ = run("list", "tetris")

    assert out.splitlines() == [
        f"{healthy.endpoint_id}  enabled   {receiver.url}  ok, last success 2026-03-04T12:00:00.000Z",
        f"{failing.endpoint_id}  enabled   {broken.url}  "
        "failing since 2026-03-04T12:00:00.000Z (1 failed attempt(s); last: Answered 503.)",
        f"{disabled.endpoint_id}  disabled  {receiver.url}  disabled: Disabled by the studio.",
        f"{fresh.endpoint_id}  enabled   {receiver.url}  no attempt yet",
    ]


def test_it_removes_an_endpoint_with_its_deliveries(game, receiver):
    endpoint = endpoint_for(game, receiver)
    erased(game)
    run_once()

    out, _ = run("remove", "tetris", endpoint.endpoint_id)

    assert out == f"Removed {endpoint.endpoint_id} of tetris ({receiver.url}) and its deliveries.\n"
    assert not Endpoint.objects.exists() and not Delivery.objects.exists()
    assert AuditEntry.objects.get(action="webhook_delete").actor_name == ACTOR


def test_it_rotates_the_secret_with_a_grace_and_prints_the_new_one(game, receiver):
    endpoint = endpoint_for(game, receiver)
    old = endpoint.secret

    out, err = run("rotate", "tetris", endpoint.endpoint_id, "--grace-secs", "3600")

    endpoint.refresh_from_db()
    assert out == f"secret {endpoint.secret}\n" and endpoint.secret != old and endpoint.previous_secret == old
    until = clock.now() + dt.timedelta(hours=1)
    assert endpoint.previous_secret_until == until
    assert f"the previous one also signs until {clock.iso(until)}" in err
    assert AuditEntry.objects.get(action="webhook_rotate").detail["grace_secs"] == 3600
    receiver.secrets = [endpoint.secret]
    erased(game)
    run_once()
    assert len(receiver.received) == 1

    run("rotate", "tetris", endpoint.endpoint_id)  # the default grace: a day
    endpoint.refresh_from_db()
    assert endpoint.previous_secret_until == clock.now() + dt.timedelta(days=1)
    assert "From 0 to 604800 seconds." in refused("rotate", "tetris", endpoint.endpoint_id, "--grace-secs", "-1")


def test_it_sends_a_test_event(game, receiver):
    endpoint = endpoint_for(game, receiver)

    out, _ = run("test", "tetris", endpoint.endpoint_id)
    run_once()

    (event,) = Event.objects.filter(type="webhook.test")
    assert out == f"Sent a webhook.test event to {endpoint.endpoint_id}: its webhook-id is {event.event_id}.\n"
    assert receiver.ids() == [event.event_id]


def test_it_replays_the_failed_deliveries_since_a_time(game, receiver):
    endpoint = endpoint_for(game, receiver)
    receiver.replies.extend([Reply(400)] * 3)
    for player in ("ada", "bob"):
        erased(game, player)
    run_once()
    _pinned[-1].set(clock.now() + dt.timedelta(hours=2))
    erased(game, "cy")
    run_once()

    out, _ = run(
        "replay", "tetris", endpoint.endpoint_id, "--since", "2026-03-04T11:00Z", "--until", "2026-03-04T13:00+00:00"
    )
    run_once()

    assert out == (
        f"Replayed 2 failed deliveries of {endpoint.endpoint_id} "
        "(events from 2026-03-04T11:00:00.000Z to 2026-03-04T13:00:00.000Z): pending again, due now.\n"
    )
    # ada and bob again, not cy (after --until); sorted, since one endpoint's requests go out
    # several at once (WEBHOOK_ENDPOINT_CONCURRENCY) and may arrive in any order.
    assert sorted(e["data"]["player_id"] for e in receiver.events()) == ["ada", "ada", "bob", "bob", "cy"]
    assert "is not an ISO 8601 time" in refused("replay", "tetris", endpoint.endpoint_id, "--since", "yesterday")
    assert "has no offset" in refused("replay", "tetris", endpoint.endpoint_id, "--since", "2026-03-04T11:00")
    assert "--since" in refused("replay", "tetris", endpoint.endpoint_id)


def test_it_replays_one_delivery(game, receiver):
    endpoint = endpoint_for(game, receiver)
    receiver.replies.append(Reply(400))
    erased(game)
    run_once()
    delivery = only_delivery(endpoint)

    out, _ = run("replay-delivery", "tetris", endpoint.endpoint_id, delivery.delivery_id)
    run_once()

    assert out == (
        f"Delivery {delivery.delivery_id} (player.erased {delivery.event_id}) to {endpoint.endpoint_id} "
        "is pending again, due now.\n"
    )
    assert receiver.ids() == [delivery.event_id, delivery.event_id]
    assert (only_delivery(endpoint).status, only_delivery(endpoint).replays) == ("delivered", 1)


def test_it_refuses_with_the_services_message_and_changes_nothing(game, receiver, monkeypatch):
    endpoint = endpoint_for(game, receiver)
    rival = endpoint_for(game_with_board("rival", board=None), receiver)
    endpoints.endpoint_update(endpoint=endpoint, changes={"enabled": False}, now=clock.now())

    assert refused("list", "nope") == "There is no game 'nope'."
    assert refused("remove", "tetris", rival.endpoint_id) == f"This game has no webhook endpoint {rival.endpoint_id!r}."
    assert "no webhook delivery 'dlv_nope' of this endpoint" in refused(
        "replay-delivery", "tetris", endpoint.endpoint_id, "dlv_nope"
    )
    assert refused("test", "tetris", endpoint.endpoint_id).startswith(
        "The endpoint is disabled (Disabled by the studio.)"
    )
    assert "The endpoint is disabled" in refused(
        "replay", "tetris", endpoint.endpoint_id, "--since", "2026-03-04T00:00Z"
    )
    assert "Must be an http(s):// URL." in refused("add", "tetris", "ftp://hooks.example.com/x")
    assert "No such event types: period.nope" in refused("add", "tetris", receiver.url, "--event-type", "period.nope")
    monkeypatch.setattr(endpoints, "WEBHOOK_ENDPOINTS_PER_GAME", 1)
    assert "This game has 1 webhook endpoints, its limit" in refused("add", "tetris", receiver.url)
    assert "SUBCOMMAND" in refused()

    assert Endpoint.objects.count() == 2 and not Event.objects.filter(type="webhook.test").exists()
    assert not AuditEntry.objects.filter(actor_name=ACTOR).exists()
