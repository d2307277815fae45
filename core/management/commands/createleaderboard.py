"""``manage.py createleaderboard``: a thin adapter to services.leaderboard_create."""

from __future__ import annotations

import datetime as dt
from argparse import ArgumentParser
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import IntegrityError

from core import board_rules, services
from core.audit import Actor
from core.management.commands.creategame import validation_problems
from core.models import Game, Leaderboard


def _instant(option: str, text: str | None) -> dt.datetime | None:
    if text is None:
        return None
    try:
        value = dt.datetime.fromisoformat(text)
    except ValueError:
        raise CommandError(f"{option}: {text!r} is not an ISO 8601 time (e.g. 2026-12-01T18:00Z).") from None
    if value.tzinfo is None:
        raise CommandError(f"{option}: {text!r} has no offset; add Z or +01:00.")
    return value


class Command(BaseCommand):
    help = (
        "Create a leaderboard in a game. Example: createleaderboard racer track-1 --mode best --order asc "
        "--windows weekly,custom --cron '0 18 * * FRI' --ties earliest --format time_ms "
        "--min-score 1 --max-score 3600000"
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("game", help="the game's slug")
        parser.add_argument("slug", help="the board's URL name, unique in its game")
        parser.add_argument("--name", default="", help="shown on pages (default: from the slug)")
        parser.add_argument("--description", default="")
        parser.add_argument("--mode", choices=Leaderboard.Mode.values, default=Leaderboard.Mode.BEST)
        parser.add_argument("--order", choices=Leaderboard.Order.values, default=Leaderboard.Order.DESC)
        parser.add_argument(
            "--windows",
            default="daily,weekly,monthly,all-time",
            help=f"comma-separated, from {','.join(board_rules.WINDOWS)} (default: the first four)",
        )
        parser.add_argument("--cron", default="", help="when the custom window resets, e.g. '0 18 * * FRI'")
        parser.add_argument("--timezone", default="", help="IANA name (default: the game's)")
        parser.add_argument("--starts-at", default=None, help="season start, ISO 8601 with offset")
        parser.add_argument("--ends-at", default=None, help="season end, ISO 8601 with offset")
        parser.add_argument("--ties", choices=Leaderboard.Ties.values, default=Leaderboard.Ties.SHARED)
        parser.add_argument(
            "--subscore-order",
            choices=Leaderboard.Order.values,
            default=Leaderboard.Order.DESC,
            help="with --ties subscore: desc (a higher subscore ranks first) or asc",
        )
        parser.add_argument("--format", default=board_rules.INTEGER, help=board_rules.FORMAT_HELP)
        parser.add_argument("--min-score", type=int, default=None)
        parser.add_argument("--max-score", type=int, default=None)

    def handle(self, *args: Any, **options: Any) -> None:
        game = Game.objects.filter(slug=options["game"]).first()
        if game is None:
            raise CommandError(f"No game {options['game']!r}; create it with `manage.py creategame` first.")
        slug = options["slug"]
        if game.leaderboards.filter(slug=slug).exists():
            raise CommandError(f"{game.slug} already has a leaderboard {slug!r}.")
        try:
            board = services.leaderboard_create(
                game=game,
                slug=slug,
                name=options["name"],
                description=options["description"],
                mode=options["mode"],
                order=options["order"],
                windows=[w.strip() for w in options["windows"].split(",") if w.strip()],
                cron=options["cron"],
                timezone_name=options["timezone"],
                starts_at=_instant("--starts-at", options["starts_at"]),
                ends_at=_instant("--ends-at", options["ends_at"]),
                ties=options["ties"],
                subscore_order=options["subscore_order"],
                by=Actor.command("createleaderboard"),
                score_format=options["format"],
                min_score=options["min_score"],
                max_score=options["max_score"],
            )
        except ValidationError as error:
            raise CommandError(validation_problems(error)) from None
        except IntegrityError:
            raise CommandError(f"{game.slug} already has a leaderboard {slug!r}.") from None
        self.stdout.write(f"Created leaderboard {game.slug}/{board.slug} ({', '.join(board.windows)})")
