"""``manage.py archive_period GAME PERIOD PERIOD_ID [--force]``: archive a finished period now.

A thin adapter to archive.services.period_archive, idempotent like the close job:
an archive already complete is left as it is. ``--force`` snapshots a period still
open; its close job archives the final standings over the snapshot later.
"""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from archive import services
from archive.management.progress import ProgressBar
from archive.models import ArchivedPeriod
from core.errors import REDIS_FAILURES, ServiceError
from core.models import Game, Leaderboard


class Command(BaseCommand):
    help = (
        "Archive a finished period now instead of waiting for its close job. "
        "Example: archive_period tetris daily 2026-11-21"
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("game", help="the game's slug")
        parser.add_argument("period", help=f"one of {', '.join(services.ARCHIVED_PERIODS)}")
        parser.add_argument("period_id", help="e.g. 2026-11-21 (daily), 2026-W47 (weekly), 2026-11 (monthly)")
        parser.add_argument(
            "--force",
            action="store_true",
            help="snapshot a period that is still open (its close job archives the final state later)",
        )
        parser.add_argument(
            "--chunk-size",
            type=int,
            default=services.ARCHIVE_CHUNK_SIZE,
            help=f"standings per step (default {services.ARCHIVE_CHUNK_SIZE})",
        )
        parser.add_argument("--board", default="", help="the leaderboard's slug (default: the game's first)")

    def handle(self, *args: Any, **options: Any) -> None:
        game = Game.objects.filter(slug=options["game"]).first()
        if game is None:
            raise CommandError(f"No game {options['game']!r}.")
        boards = Leaderboard.objects.filter(game=game).select_related("game")
        board = boards.filter(slug=options["board"]).first() if options["board"] else boards.first()
        if board is None:
            raise CommandError(f"{game.slug} has no leaderboard {options['board'] or ''!r}.")
        period, period_id = options["period"], options["period_id"]
        chunk_size = options["chunk_size"]
        was_complete = ArchivedPeriod.objects.filter(
            leaderboard=board, period=period, period_id=period_id, status=ArchivedPeriod.Status.COMPLETE
        ).exists()
        bar = ProgressBar(self.stderr, f"{game.slug}/{board.slug} {period} {period_id}")

        def progress(done: int, total: int) -> None:
            # Only a board of more than one chunk is worth a bar.
            if total > chunk_size:
                bar.update(done, total)

        try:
            archived = services.period_archive(
                board=board,
                period=period,
                period_id=period_id,
                force=options["force"],
                chunk_size=chunk_size,
                progress=progress,
            )
        except ServiceError as error:
            raise CommandError(error.message) from None
        except REDIS_FAILURES as error:
            raise CommandError(f"Redis is unavailable ({error}); nothing was completed. Try again.") from None
        finally:
            bar.close()
        what = f"{game.slug}/{board.slug} {period} {period_id}"
        plural = "" if archived.total == 1 else "s"
        if was_complete:
            self.stdout.write(f"{what} was already archived ({archived.total} standing{plural}); nothing to do.")
        elif archived.status == ArchivedPeriod.Status.SNAPSHOT:
            self.stdout.write(
                f"Snapshot of {what}: {archived.total} standing{plural}; the period is still open, "
                "so its close job archives the final standings later."
            )
        else:
            self.stdout.write(f"Archived {what}: {archived.total} standing{plural}.")
