"""``manage.py creategame``: a thin adapter to services.game_create."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import IntegrityError

from core import services
from core.models import DEFAULT_PRESENCE_TIMEOUT_SECS, Game

# Model field names that the command line spells differently.
_OPTION_NAMES = {
    "slug": "SLUG",
    "max_submissions_per_minute": "--max-per-minute",
    "presence_timeout_secs": "--presence-timeout",
    "game": "GAME",
    "format": "--format",
    "timezone": "--timezone",
}


def validation_problems(error: ValidationError) -> str:
    """One line per problem, named after the argument it concerns."""
    if not hasattr(error, "error_dict"):
        return "\n".join(error.messages)
    lines = []
    for field, messages in error.message_dict.items():
        option = _OPTION_NAMES.get(field, "--" + field.replace("_", "-"))
        lines += [message if field == "__all__" else f"{option}: {message}" for message in messages]
    return "\n".join(lines)


class Command(BaseCommand):
    help = (
        "Create a game, with no leaderboard yet (add them with createleaderboard). "
        "Example: creategame tetris --name Tetris --timezone Europe/Paris"
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("slug", help="URL name: lowercase letters, digits and inner hyphens")
        parser.add_argument("--name", required=True)
        parser.add_argument(
            "--timezone", default="UTC", help="IANA name, e.g. Europe/Paris: the boards' default (default: UTC)"
        )
        parser.add_argument("--description", default="")
        parser.add_argument(
            "--max-per-minute",
            type=int,
            default=60,
            help="submissions per player and board per minute; 0 for no limit (default: 60)",
        )
        parser.add_argument(
            "--presence-timeout",
            type=int,
            default=DEFAULT_PRESENCE_TIMEOUT_SECS,
            metavar="SECS",
            help=f"a player is online this long after last seen (default: {DEFAULT_PRESENCE_TIMEOUT_SECS})",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        slug = options["slug"]
        if Game.objects.filter(slug=slug).exists():
            raise CommandError(f"A game with slug {slug!r} already exists.")
        if options["max_per_minute"] < 0:
            raise CommandError("--max-per-minute: must be 0 (no limit) or more.")
        try:
            game = services.game_create(
                slug=slug,
                name=options["name"],
                timezone_name=options["timezone"],
                description=options["description"],
                max_submissions_per_minute=options["max_per_minute"],
                presence_timeout_secs=options["presence_timeout"],
            )
        except ValidationError as error:
            raise CommandError(validation_problems(error)) from None
        except IntegrityError:
            # Another process created it between the check and the insert.
            raise CommandError(f"A game with slug {slug!r} already exists.") from None
        self.stdout.write(f"Created game {game.slug}; add a board with: manage.py createleaderboard {game.slug} SLUG")
