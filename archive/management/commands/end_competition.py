"""``manage.py end_competition GAME BOARD``: end a competing season board's competition now, as
``POST …/leaderboards/{board}/end`` and admin's "End this season's competition now" do it
(archive.services.competition_end, which records it in the audit trail)."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from archive import services
from core import clock
from core.audit import Actor
from core.errors import REDIS_ERRORS, ServiceError
from core.models import Game, Leaderboard


class Command(BaseCommand):
    help = (
        "End a competing season board's competition now: its season ends at this instant, it takes no more "
        "scores or joins, and it settles like at any end (after its settle_delay_secs). Example: "
        "end_competition tetris spring-cup"
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("game", metavar="GAME", help="the game's slug")
        parser.add_argument("board", metavar="BOARD", help="the leaderboard's slug")

    def handle(self, *args: Any, **options: Any) -> None:
        game = Game.objects.filter(slug=options["game"]).first()
        if game is None:
            raise CommandError(f"There is no game {options['game']!r}.")
        board = Leaderboard.objects.select_related("game").filter(game=game, slug=options["board"]).first()
        if board is None:
            raise CommandError(f"{game.slug} has no leaderboard {options['board']!r}.")
        was = board.ends_at
        try:
            jobs = services.competition_end(board=board, by=Actor.command("end_competition"))
        except ServiceError as error:
            raise CommandError(f"Nothing was ended: {error.message}") from None
        except REDIS_ERRORS as error:
            # The season's end commits before its close jobs are made due: say so, nothing to undo
            # (the background's sweep gives a period without a close job one, archive/services/catch_up.py).
            raise CommandError(
                f"The season's end moved to now, but Redis is unavailable ({error}): its close job is made "
                "by the background's sweep once Redis is back."
            ) from None
        board.refresh_from_db()
        assert board.ends_at is not None and was is not None
        self.stdout.write(
            f"Ended the competition of {game.slug}/{board.slug}: its season ended at {clock.iso(board.ends_at)} "
            f"(was {clock.iso(was)}); {jobs} close job(s) due, which settle it."
        )
