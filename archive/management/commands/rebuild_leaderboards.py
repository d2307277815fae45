"""``manage.py rebuild_leaderboards [--game SLUG]``: replay the ledger into Redis.

The recovery path when Redis lost its data (or to check that the boards agree with
the ledger): a thin adapter to archive.ledger.leaderboards_rebuild, one game after
another. Each game's boards are swapped in at once; see docs/ledger.md.
"""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from archive import ledger
from archive.management.progress import ProgressBar
from core.errors import REDIS_FAILURES, ServiceError
from core.models import Game


class Command(BaseCommand):
    help = "Rebuild the leaderboards in Redis from the score ledger (every game, or one)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--game", metavar="SLUG", help="rebuild only this game")

    def handle(self, *args: Any, **options: Any) -> None:
        slug = options["game"]
        games = Game.objects.order_by("slug")
        if slug is not None:
            games = games.filter(slug=slug)
            if not games.exists():
                raise CommandError(f"No game {slug!r}.")
        for game in games:
            bar = ProgressBar(self.stderr, f"{game.slug} events")

            def progress(done: int, total: int, bar: ProgressBar = bar) -> None:
                if total:  # a game with no events needs no bar
                    bar.update(done, total)

            try:
                report = ledger.leaderboards_rebuild(game=game, progress=progress)
            except ServiceError as error:
                raise CommandError(f"{game.slug}: {error.message} Nothing was swapped; run it again.") from None
            except REDIS_FAILURES as error:
                raise CommandError(f"Redis is unavailable ({error}); {game.slug} was not swapped. Try again.") from None
            finally:
                bar.close()
            line = (
                f"{game.slug}: {report.boards} board{'' if report.boards == 1 else 's'} rebuilt "
                f"from {report.events} event{'' if report.events == 1 else 's'}"
            )
            if report.stashed:
                line += f", {report.stashed} hidden entr{'y' if report.stashed == 1 else 'ies'} stashed"
            if report.names_restored:
                line += f", {report.names_restored} name{'' if report.names_restored == 1 else 's'} restored"
            self.stdout.write(line + ".")
            if report.kept:
                self.stdout.write(f"  left as they were (no events to rebuild them from): {', '.join(report.kept)}")
