"""``manage.py webhooks SUBCOMMAND``: a game's webhook endpoints from the command line, as the
API and admin have them (webhooks.services, webhooks.selectors): add (the secret printed once),
list, remove, rotate, test, replay the failures since a time, replay one delivery."""

from __future__ import annotations

import datetime as dt
from argparse import ArgumentParser
from collections.abc import Callable
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from core import clock
from core.audit import Actor
from core.errors import REDIS_ERRORS, ServiceError
from core.models import Game
from webhooks import selectors
from webhooks.models import Endpoint
from webhooks.services import endpoints as endpoint_services
from webhooks.services import replay as replay_services

ACTOR = Actor.command("webhooks")


def _instant(option: str, text: str) -> dt.datetime:
    try:
        value = dt.datetime.fromisoformat(text)
    except ValueError:
        raise CommandError(f"{option}: {text!r} is not an ISO 8601 time (e.g. 2026-11-25T00:00Z).") from None
    if value.tzinfo is None:
        raise CommandError(f"{option}: {text!r} has no offset; add Z or +01:00.")
    return value.astimezone(dt.UTC)


def health(endpoint: Endpoint) -> str:
    """An endpoint's health in a few words, as ``list`` prints it."""
    if not endpoint.enabled:
        return f"disabled: {endpoint.disabled_reason}" if endpoint.disabled_reason else "disabled"
    if endpoint.failing_since is not None:
        return (
            f"failing since {clock.iso(endpoint.failing_since)} ({endpoint.failure_streak} failed attempt(s); "
            f"last: {endpoint.last_error})"
        )
    if endpoint.last_success_at is not None:
        return f"ok, last success {clock.iso(endpoint.last_success_at)}"
    return "no attempt yet"


class Command(BaseCommand):
    help = "A game's webhook endpoints: add, list, remove, rotate, test, replay, replay-delivery (docs/webhooks.md)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        commands = parser.add_subparsers(dest="subcommand", metavar="SUBCOMMAND", required=True)

        def command(name: str, what: str, *, endpoint: bool = True) -> ArgumentParser:
            sub = commands.add_parser(name, help=what, description=what)
            sub.add_argument("game", metavar="GAME", help="the game's slug")
            if endpoint:
                sub.add_argument("endpoint_id", metavar="ENDPOINT_ID", help="ep_…, as add or list print it")
            return sub

        add = command("add", "Register an endpoint; prints its id and its secret, shown this once.", endpoint=False)
        add.add_argument("url", metavar="URL", help="https://… (where each event is POSTed, signed)")
        add.add_argument("--description", default="", help="what it is, for whoever reads the list")
        add.add_argument(
            "--event-type",
            dest="event_types",
            action="append",
            default=[],
            metavar="TYPE",
            help="an event type it receives (repeat it for more; none: every type)",
        )
        add.add_argument("--disabled", action="store_true", help="registered disabled: nothing is sent until enabled")
        command("list", "The game's endpoints: id, URL, enabled, health.", endpoint=False)
        command("remove", "Delete an endpoint with its deliveries.")
        rotate = command("rotate", "A new secret, printed; the previous one also signs during the grace.")
        rotate.add_argument(
            "--grace-secs",
            type=int,
            default=endpoint_services.ROTATE_GRACE_DEFAULT_SECS,
            help=f"how long the previous secret also signs (default {endpoint_services.ROTATE_GRACE_DEFAULT_SECS}; "
            "0: it stops now)",
        )
        command("test", "Send a webhook.test event to this endpoint only.")
        replay = command("replay", "Send again every failed delivery of events from --since (to --until).")
        replay.add_argument("--since", required=True, help="ISO 8601 with its offset, e.g. 2026-11-25T00:00Z")
        replay.add_argument("--until", default=None, help="ISO 8601 with its offset (default: now)")
        one = command("replay-delivery", "Send one delivery again, now, with the same webhook-id and body.")
        one.add_argument("delivery_id", metavar="DELIVERY_ID", help="dlv_…")

    def handle(self, *args: Any, **options: Any) -> None:
        game = Game.objects.filter(slug=options["game"]).first()
        if game is None:
            raise CommandError(f"There is no game {options['game']!r}.")
        run: dict[str, Callable[[Game, dict[str, Any]], None]] = {
            "add": self._add,
            "list": self._list,
            "remove": self._remove,
            "rotate": self._rotate,
            "test": self._test,
            "replay": self._replay,
            "replay-delivery": self._replay_delivery,
        }
        try:
            run[options["subcommand"]](game, options)
        except ServiceError as error:
            raise CommandError(error.message) from None
        except REDIS_ERRORS as error:
            raise CommandError(f"Redis is unavailable ({error}). Try again in a moment.") from None

    def _endpoint(self, game: Game, options: dict[str, Any]) -> Endpoint:
        return selectors.endpoint_get(game_id=game.pk, endpoint_id=options["endpoint_id"])

    def _add(self, game: Game, options: dict[str, Any]) -> None:
        endpoint = endpoint_services.endpoint_create(
            game=game,
            url=options["url"],
            description=options["description"],
            event_types=options["event_types"],
            enabled=not options["disabled"],
            now=clock.now(),
            by=ACTOR,
        )
        # Alone on stdout, so that a script can read them; the rest goes to stderr.
        self.stdout.write(f"endpoint_id {endpoint.endpoint_id}")
        self.stdout.write(f"secret {endpoint.secret}")
        types = ", ".join(endpoint.event_types) or "every event type"
        state = "enabled" if endpoint.enabled else "disabled"
        self.stderr.write(
            f"Endpoint {endpoint.endpoint_id} of {game.slug} at {endpoint.url} ({state}; {types}). "
            "Store the secret now: it is not shown again."
        )

    def _list(self, game: Game, options: dict[str, Any]) -> None:
        found = selectors.endpoints_of(game_id=game.pk)
        if not found:
            self.stdout.write(f"{game.slug} has no webhook endpoints.")
            return
        for endpoint in found:
            state = "enabled" if endpoint.enabled else "disabled"
            self.stdout.write(f"{endpoint.endpoint_id}  {state:8}  {endpoint.url}  {health(endpoint)}")

    def _remove(self, game: Game, options: dict[str, Any]) -> None:
        endpoint = self._endpoint(game, options)
        endpoint_services.endpoint_delete(endpoint=endpoint, by=ACTOR)
        self.stdout.write(f"Removed {endpoint.endpoint_id} of {game.slug} ({endpoint.url}) and its deliveries.")

    def _rotate(self, game: Game, options: dict[str, Any]) -> None:
        endpoint = endpoint_services.secret_rotate(
            endpoint=self._endpoint(game, options), grace_secs=options["grace_secs"], now=clock.now(), by=ACTOR
        )
        self.stdout.write(f"secret {endpoint.secret}")
        until = endpoint.previous_secret_until
        grace = f"the previous one also signs until {clock.iso(until)}" if until else "the previous one signs no more"
        self.stderr.write(f"New secret of {endpoint.endpoint_id} ({grace}). Store it now: it is not shown again.")

    def _test(self, game: Game, options: dict[str, Any]) -> None:
        endpoint = self._endpoint(game, options)
        event = endpoint_services.endpoint_test(endpoint=endpoint, now=clock.now(), by=ACTOR)
        self.stdout.write(f"Sent a {event.type} event to {endpoint.endpoint_id}: its webhook-id is {event.event_id}.")

    def _replay(self, game: Game, options: dict[str, Any]) -> None:
        endpoint = self._endpoint(game, options)
        since = _instant("--since", options["since"])
        until = _instant("--until", options["until"]) if options["until"] is not None else None
        count = replay_services.failed_replay(endpoint=endpoint, since=since, until=until, now=clock.now(), by=ACTOR)
        span = f"from {clock.iso(since)}" + (f" to {clock.iso(until)}" if until is not None else "")
        what = f"{count} failed deliver{'y' if count == 1 else 'ies'}"
        self.stdout.write(f"Replayed {what} of {endpoint.endpoint_id} (events {span}): pending again, due now.")
        if count >= replay_services.WEBHOOK_REPLAY_MAX:
            self.stderr.write(f"That is the most one replay takes ({count}); run it again for the rest.")

    def _replay_delivery(self, game: Game, options: dict[str, Any]) -> None:
        endpoint = self._endpoint(game, options)
        delivery = selectors.delivery_get(endpoint=endpoint, delivery_id=options["delivery_id"])
        delivery = replay_services.delivery_replay(delivery=delivery, now=clock.now(), by=ACTOR)
        self.stdout.write(
            f"Delivery {delivery.delivery_id} ({delivery.event_type} {delivery.event_id}) to {endpoint.endpoint_id} "
            "is pending again, due now."
        )
