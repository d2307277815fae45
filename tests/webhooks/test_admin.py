"""Webhooks in admin, driven through the Django test client as a superuser: endpoints listed with
their health, created through the service with the secret shown once, tested, replayed, rotated,
enabled and disabled; deliveries read with their attempts and replayed. Each act reaches a real
receiver through a delivery run; a refusal is a message on the page, never a 500."""

from __future__ import annotations

import datetime as dt
import html
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from core import clock
from core.models import AuditEntry, Event, Game
from tests.conftest import _pinned, forget_redis_clients, free_port, game_with_board
from webhooks import admin as webhooks_admin
from webhooks.models import Attempt, Delivery, Endpoint
from webhooks.services import endpoints

from .helpers import endpoint_for, erased, only_delivery, run_once, swept
from .receiver import Receiver, Reply

# Delivery runs read and write the database from their own thread: rows must be committed.
pytestmark = pytest.mark.django_db(transaction=True)

SECRET_RE = re.compile(r"whsec_[A-Za-z0-9+/=]+")


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver().running() as running:
        yield running


@pytest.fixture
def game() -> Game:
    return game_with_board("tetris", board=None)


def page_text(content: bytes) -> str:
    """The page's text with tags dropped and whitespace collapsed, for phrase checks."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", content.decode())).split())


def endpoints_list() -> str:
    return reverse("admin:webhooks_endpoint_changelist")


def deliveries_list() -> str:
    return reverse("admin:webhooks_delivery_changelist")


def change_url(endpoint: Endpoint) -> str:
    return reverse("admin:webhooks_endpoint_change", args=[endpoint.pk])


def act(admin_client: Client, action: str, *chosen: Endpoint | Delivery) -> str:
    """A list action on the chosen rows, as the browser runs it; the page it lands on, as text."""
    url = deliveries_list() if chosen and isinstance(chosen[0], Delivery) else endpoints_list()
    response = admin_client.post(url, {"action": action, "_selected_action": [c.pk for c in chosen]}, follow=True)
    assert response.status_code == 200
    return page_text(response.content)


def failing(game: Game, receiver: Receiver, *players: str, status: int = 500) -> Endpoint:
    """An endpoint at ``receiver`` whose deliveries of one event per player all failed once."""
    endpoint = endpoint_for(game, receiver)
    receiver.replies.extend([Reply(status)] * len(players))
    for player in players:
        erased(game, player)
    run_once()
    endpoint.refresh_from_db()
    return endpoint


# --------------------------------------------------------------------------- endpoints


def test_it_lists_endpoints_with_their_health_filters_and_search(admin_client, game, receiver):
    broken = failing(game, receiver, "ada")
    other = endpoint_for(game_with_board("chess", board=None), receiver, description="chess")
    endpoints.endpoint_update(endpoint=other, changes={"enabled": False}, now=clock.now())

    listing = admin_client.get(endpoints_list())
    disabled = admin_client.get(endpoints_list(), {"enabled__exact": "0"})
    of_tetris = admin_client.get(endpoints_list(), {"game__id__exact": game.pk})
    searched = admin_client.get(endpoints_list(), {"q": broken.endpoint_id})

    assert listing.status_code == 200
    shown = listing.content.decode()
    assert broken.endpoint_id in shown and other.endpoint_id in shown
    assert '<td class="field-failure_streak">1</td>' in shown
    assert "Disabled by the studio." in page_text(listing.content)
    assert broken.endpoint_id not in disabled.content.decode() and other.endpoint_id in disabled.content.decode()
    assert other.endpoint_id not in of_tetris.content.decode() and broken.endpoint_id in of_tetris.content.decode()
    assert other.endpoint_id not in searched.content.decode() and broken.endpoint_id in searched.content.decode()


def test_it_shows_an_endpoints_health_and_newest_deliveries_but_never_its_secret(
    admin_client, game, receiver, monkeypatch
):
    endpoint = failing(game, receiver, "ada", "bob", "cy")
    newest_first = list(Delivery.objects.filter(endpoint=endpoint).order_by("-id"))

    response = admin_client.get(change_url(endpoint))
    monkeypatch.setattr(webhooks_admin, "RECENT_DELIVERIES_N", 2)
    peek = page_text(admin_client.get(change_url(endpoint)).content)

    assert response.status_code == 200
    shown, words = response.content.decode(), page_text(response.content)
    assert endpoint.secret not in shown and "whsec_" not in shown
    assert "Failure streak: 3" in words and "Last success at: -" in words
    assert "Failing since: 2026-03-04 12:00 UTC" in words and "Last error: Answered 500." in words
    positions = [shown.index(d.event_id) for d in newest_first]
    assert positions == sorted(positions)
    assert "The newest 3 of 3." in words
    assert f"{deliveries_list()}?endpoint__id__exact={endpoint.pk}" in shown
    assert "The newest 2 of 3." in peek and newest_first[2].event_id not in peek


def test_it_registers_an_endpoint_through_the_service_and_shows_its_secret_once(admin_client, game, receiver):
    response = admin_client.post(
        reverse("admin:webhooks_endpoint_add"),
        {"game": game.pk, "url": receiver.url, "description": "Economy", "event_types": ["webhook.test"]},
        follow=True,
    )

    assert response.status_code == 200
    [secret] = SECRET_RE.findall(response.content.decode())
    assert "copy it now, it will not be shown again" in page_text(response.content)
    endpoint = Endpoint.objects.get()
    assert (endpoint.secret, endpoint.url, endpoint.event_types) == (secret, receiver.url, ["webhook.test"])
    assert endpoint.endpoint_id.startswith("ep_") and not endpoint.enabled  # the box was left unchecked
    entry = AuditEntry.objects.get(action="webhook_create")
    assert (entry.actor_name, entry.detail["endpoint_id"]) == ("admin", endpoint.endpoint_id)
    for page in (change_url(endpoint), endpoints_list()):
        assert secret not in admin_client.get(page).content.decode()

    act(admin_client, "enable", endpoint)
    receiver.secrets.append(secret)
    act(admin_client, "send_test", endpoint)
    run_once()
    assert [e["type"] for e in receiver.events()] == ["webhook.test"]


def test_it_refuses_a_bad_endpoint_in_the_form_and_one_past_the_limit_with_a_message(
    admin_client, game, receiver, monkeypatch
):
    add = reverse("admin:webhooks_endpoint_add")
    bad = admin_client.post(add, {"game": game.pk, "url": "ftp://hooks.example.com/x", "enabled": "on"})
    assert bad.status_code == 200 and "Must be an http(s):// URL." in page_text(bad.content)
    monkeypatch.setattr(endpoints, "WEBHOOK_ENDPOINTS_PER_GAME", 1)
    endpoint_for(game, receiver)

    past = admin_client.post(add, {"game": game.pk, "url": receiver.url, "enabled": "on"}, follow=True)

    assert past.status_code == 200
    assert "This game has 1 webhook endpoints, its limit: delete one first." in page_text(past.content)
    assert Endpoint.objects.count() == 1 and not AuditEntry.objects.filter(actor_name="admin").exists()


def test_it_changes_an_endpoint_through_the_service(admin_client, game, receiver):
    endpoint = endpoint_for(game, receiver)
    form = {"url": receiver.url + "/v2", "description": "Economy", "event_types": ["player.erased"], "enabled": "on"}

    refused = admin_client.post(change_url(endpoint), {**form, "description": "two\nlines"})
    changed = admin_client.post(change_url(endpoint), form, follow=True)

    assert refused.status_code == 200 and "One line of at most 200 characters." in page_text(refused.content)
    assert changed.status_code == 200
    endpoint.refresh_from_db()
    assert (endpoint.url, endpoint.description, endpoint.event_types) == (form["url"], "Economy", ["player.erased"])
    entry = AuditEntry.objects.get(action="webhook_update")
    assert entry.actor_name == "admin" and entry.detail["description"] == "Economy"


def test_it_sends_a_test_event_to_the_chosen_endpoint_only(admin_client, game, receiver):
    chosen = endpoint_for(game, receiver)
    bystander = Receiver()
    with bystander.running():
        endpoint_for(game, bystander)
        said = act(admin_client, "send_test", chosen)
        run_once()

    (event,) = Event.objects.filter(type="webhook.test")
    assert f"Endpoint {chosen.endpoint_id}: a webhook.test event is on its way" in said
    assert f"(its webhook-id: {event.event_id})." in said
    assert receiver.ids() == [event.event_id] and bystander.received == []


def test_it_refuses_a_test_or_replay_of_a_disabled_endpoint_with_a_message(admin_client, game, receiver):
    endpoint = failing(game, receiver, "ada", status=400)
    endpoints.endpoint_update(endpoint=endpoint, changes={"enabled": False}, now=clock.now())

    tested = act(admin_client, "send_test", endpoint)
    replayed = act(admin_client, "replay_failed", endpoint)
    delivery = act(admin_client, "replay_deliveries", only_delivery(endpoint))

    for said in (tested, replayed, delivery):
        assert "The endpoint is disabled (Disabled by the studio.): enable it first" in said
    assert endpoint.endpoint_id in tested and only_delivery(endpoint).delivery_id in delivery
    assert not Event.objects.filter(type="webhook.test").exists()
    assert only_delivery(endpoint).status == "failed"


def test_it_replays_the_failed_deliveries_of_the_last_day(admin_client, game, receiver):
    endpoint = endpoint_for(game, receiver)
    receiver.replies.extend([Reply(400)] * 2)
    erased(game, "old")
    run_once()
    clock_advance(dt.timedelta(hours=25))
    erased(game, "new")
    run_once()
    assert Delivery.objects.filter(endpoint=endpoint, status="failed").count() == 2

    said = act(admin_client, "replay_failed", endpoint)
    run_once()

    assert f"Endpoint {endpoint.endpoint_id}: 1 failed delivery of the last 24 hours pending again, due now." in said
    assert [e["data"]["player_id"] for e in receiver.events()] == ["old", "new", "new"]
    assert Delivery.objects.get(endpoint=endpoint, status="delivered").replays == 1


def test_it_rotates_the_secret_showing_the_new_one_once(admin_client, game, receiver):
    endpoint = endpoint_for(game, receiver)
    old = endpoint.secret

    response = admin_client.post(
        endpoints_list(), {"action": "rotate_secret", "_selected_action": [endpoint.pk]}, follow=True
    )

    [new] = SECRET_RE.findall(response.content.decode())
    endpoint.refresh_from_db()
    assert (endpoint.secret, endpoint.previous_secret) == (new, old) and new != old
    assert endpoint.previous_secret_until == clock.now() + dt.timedelta(seconds=endpoints.ROTATE_GRACE_DEFAULT_SECS)
    said = page_text(response.content)
    assert f"The previous secret also signs until {clock.shown(endpoint.previous_secret_until)}." in said
    assert AuditEntry.objects.get(action="webhook_rotate").actor_name == "admin"
    page = admin_client.get(change_url(endpoint))
    assert new not in page.content.decode() and "The previous secret also signs until" in page_text(page.content)
    receiver.secrets = [new]  # a receiver that deployed the new secret only
    erased(game)
    run_once()
    assert len(receiver.received) == 1 and receiver.refused == []


def test_it_disables_and_enables_endpoints(admin_client, game, receiver):
    endpoint = failing(game, receiver, "ada")

    disabled = act(admin_client, "disable", endpoint)
    endpoint.refresh_from_db()
    assert f"Endpoint {endpoint.endpoint_id}: disabled." in disabled
    assert (endpoint.enabled, endpoint.disabled_reason) == (False, "Disabled by the studio.")
    erased(game, "bob")  # a disabled endpoint gets no new deliveries
    run_once()
    assert Delivery.objects.filter(endpoint=endpoint).count() == 1

    enabled = act(admin_client, "enable", endpoint)
    endpoint.refresh_from_db()
    assert f"Endpoint {endpoint.endpoint_id}: enabled." in enabled
    assert (endpoint.enabled, endpoint.disabled_reason, endpoint.failure_streak) == (True, "", 0)
    trail = AuditEntry.objects.filter(action="webhook_update").order_by("id").values_list("actor_name", "detail")
    assert [(who, detail["enabled"]) for who, detail in trail] == [("admin", False), ("admin", True)]


def test_it_runs_an_act_from_the_endpoints_page(admin_client, game, receiver):
    endpoint = endpoint_for(game, receiver)
    page = admin_client.get(change_url(endpoint)).content.decode()
    test_url = reverse("admin:webhooks_endpoint_act", args=[endpoint.pk, "test"])
    # Its own form, before the change form: Enter in a field still saves.
    assert page.index(f'<form method="post" action="{test_url}">') < page.index('id="endpoint_form"')

    assert admin_client.get(test_url).status_code == 405
    assert admin_client.post(reverse("admin:webhooks_endpoint_act", args=[endpoint.pk, "nope"])).status_code == 404
    response = admin_client.post(test_url, follow=True)
    run_once()

    assert response.redirect_chain[-1][0] == change_url(endpoint)
    assert "a webhook.test event is on its way" in page_text(response.content)
    assert [e["type"] for e in receiver.events()] == ["webhook.test"]


def test_it_deletes_an_endpoint_with_its_deliveries_through_the_service(admin_client, game, receiver):
    endpoint = failing(game, receiver, "ada", "bob")
    url = reverse("admin:webhooks_endpoint_delete", args=[endpoint.pk])

    confirm = admin_client.get(url)
    response = admin_client.post(url, {"post": "yes"}, follow=True)

    assert confirm.status_code == 200 and "Deliveries, with their attempts: 2" in page_text(confirm.content)
    assert response.status_code == 200
    assert not Endpoint.objects.exists() and not Delivery.objects.exists() and not Attempt.objects.exists()
    entry = AuditEntry.objects.get(action="webhook_delete")
    assert (entry.actor_name, entry.detail["endpoint_id"]) == ("admin", endpoint.endpoint_id)


# --------------------------------------------------------------------------- deliveries


def test_it_lists_deliveries_with_filters_and_adds_none(admin_client, game, receiver):
    endpoint = failing(game, receiver, "ada", status=400)
    failed_event = only_delivery(endpoint).event_id
    endpoint_test = endpoints.endpoint_test(endpoint=endpoint, now=clock.now())
    run_once()

    listing = admin_client.get(deliveries_list())
    failed = admin_client.get(deliveries_list(), {"status__exact": "failed"})
    tests = admin_client.get(deliveries_list(), {"event_type": "webhook.test"})

    assert listing.status_code == 200
    words = page_text(listing.content)
    assert "player.erased" in words and "webhook.test" in words and endpoint.endpoint_id in words
    assert endpoint_test.event_id in tests.content.decode() and failed_event not in tests.content.decode()
    assert endpoint_test.event_id not in failed.content.decode() and failed_event in failed.content.decode()
    assert admin_client.get(reverse("admin:webhooks_delivery_add")).status_code == 403
    assert 'value="delete_selected"' not in listing.content.decode()


def test_it_shows_a_deliverys_attempts_and_payload_read_only(admin_client, game, receiver):
    endpoint = failing(game, receiver, "ada", status=503)
    delivery = only_delivery(endpoint)
    attempt = Attempt.objects.get(delivery=delivery)

    response = admin_client.get(reverse("admin:webhooks_delivery_change", args=[delivery.pk]))

    assert response.status_code == 200
    shown, words = response.content.decode(), page_text(response.content)
    assert 'name="_save"' not in shown
    assert html.escape(json.dumps(json.loads(delivery.payload), indent=2)) in shown
    assert f"webhook-id: {delivery.event_id}" in words and "webhook-signature: v1," in words
    assert f"{attempt.duration_ms} ms" in words and attempt.address == "127.0.0.1" and "127.0.0.1" in words
    assert "503" in words and "ok" in words  # the receiver's answer: its status and its body
    assert endpoint.secret not in shown


def test_it_replays_chosen_deliveries_to_the_receiver(admin_client, game, receiver):
    endpoint = failing(game, receiver, "ada", "bob", status=400)
    chosen = list(Delivery.objects.filter(endpoint=endpoint))

    said = act(admin_client, "replay_deliveries", *chosen)
    run_once()

    assert "Replayed 2 deliveries: pending again, due now." in said
    assert sorted(e["data"]["player_id"] for e in receiver.events()) == ["ada", "ada", "bob", "bob"]
    assert set(Delivery.objects.values_list("status", "replays")) == {("delivered", 1)}


def test_it_replays_a_delivery_from_its_page(admin_client, game, receiver):
    endpoint = failing(game, receiver, "ada", status=400)
    delivery = only_delivery(endpoint)
    url = reverse("admin:webhooks_delivery_replay", args=[delivery.pk])
    assert (
        f'<form method="post" action="{url}">'
        in admin_client.get(reverse("admin:webhooks_delivery_change", args=[delivery.pk])).content.decode()
    )

    response = admin_client.post(url, follow=True)
    run_once()

    assert "Replayed 1 delivery: pending again, due now." in page_text(response.content)
    assert receiver.ids() == [delivery.event_id, delivery.event_id]


def test_it_replays_while_redis_is_down_and_delivers_once_it_is_back(admin_client, game, receiver, settings):
    endpoint = failing(game, receiver, "ada", status=400)
    delivery = only_delivery(endpoint)
    with redis_down(settings):
        said = act(admin_client, "replay_deliveries", delivery)
        page = admin_client.get(change_url(endpoint))

    # The database is the delivery's truth: the replay stands, and the sweep queues it.
    assert "Replayed 1 delivery" in said and page.status_code == 200
    assert only_delivery(endpoint).status == "pending"
    assert swept() == 1
    run_once()
    assert only_delivery(endpoint).status == "delivered"


@contextmanager
def redis_down(settings: Any) -> Iterator[None]:
    """The product's Redis at an address where nothing listens, for the block."""
    original = settings.REDIS_URL
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"
    forget_redis_clients()
    try:
        yield
    finally:
        settings.REDIS_URL = original
        forget_redis_clients()


def test_it_offers_no_act_to_a_user_who_may_only_look(client, django_user_model, game, receiver):
    endpoint = failing(game, receiver, "ada", status=400)
    delivery = only_delivery(endpoint)
    viewer = django_user_model.objects.create_user("viewer", password="pw-long-enough-1", is_staff=True)
    viewer.user_permissions.set(
        Permission.objects.filter(codename__in=["view_endpoint", "view_delivery"], content_type__app_label="webhooks")
    )
    client.force_login(viewer)
    act_url = reverse("admin:webhooks_endpoint_act", args=[endpoint.pk, "rotate"])

    page = client.get(change_url(endpoint)).content.decode()
    listing = client.get(endpoints_list()).content.decode()

    assert act_url not in page and 'value="rotate_secret"' not in listing and endpoint.secret not in page
    assert client.post(act_url).status_code == 403
    assert client.post(reverse("admin:webhooks_delivery_replay", args=[delivery.pk])).status_code == 403
    endpoint.refresh_from_db()
    assert endpoint.previous_secret == "" and only_delivery(endpoint).replays == 0


def clock_advance(by: dt.timedelta) -> None:
    _pinned[-1].set(clock.now() + by)
