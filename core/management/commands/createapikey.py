"""``manage.py createapikey``: prints a new key alone on stdout, so scripts can capture it."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from core import apikeys
from core.management.commands.creategame import validation_problems
from core.models import ApiKey, Game


class Command(BaseCommand):
    help = "Create an API key for a game and print it (only the key, on stdout; it is never shown again)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("game", help="the game's slug")
        parser.add_argument("--name", default="", help="what the key is for, e.g. 'eu-game-servers'")
        parser.add_argument(
            "--scope",
            choices=ApiKey.Scope.values,
            default=ApiKey.Scope.SUBMIT,
            help="submit: scores, presence, link codes (default); manage: leaderboards too",
        )
        parser.add_argument("--requests-per-minute", type=int, default=None, help="default 6000")
        parser.add_argument(
            "--items-per-minute",
            type=int,
            default=None,
            help="scores and presence ids, each of a batch counted (default 60000)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        game = Game.objects.filter(slug=options["game"]).first()
        if game is None:
            raise CommandError(f"No game {options['game']!r}; create it with `manage.py creategame` first.")
        try:
            api_key, raw_key = apikeys.api_key_create(
                game=game,
                name=options["name"],
                scope=options["scope"],
                requests_per_minute=options["requests_per_minute"],
                items_per_minute=options["items_per_minute"],
            )
        except ValidationError as error:
            raise CommandError(validation_problems(error)) from None
        self.stdout.write(raw_key)
        self.stderr.write(
            f"API key {api_key.prefix}… ({api_key.scope}) for {game.slug}: store it now, it will not be shown again."
        )
