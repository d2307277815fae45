"""``manage.py erase_player GAME PLAYER_ID --reason WHY``: a GDPR erasure from the
command line, as the admin's "Erase" action does it (moderation.services.player_erase)."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from core.audit import Actor
from core.errors import REDIS_ERRORS, ServiceError
from core.models import Game
from moderation import services


class Command(BaseCommand):
    help = "Erase a player from a game everywhere: boards, names, presence, links, ledger (see docs/moderation.md)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("game", metavar="GAME", help="the game's slug")
        parser.add_argument("player_id", metavar="PLAYER_ID")
        parser.add_argument("--reason", required=True, help="why (kept in the audit trail), e.g. a request number")

    def handle(self, *args: Any, **options: Any) -> None:
        game = Game.objects.filter(slug=options["game"]).first()
        if game is None:
            raise CommandError(f"There is no game {options['game']!r}.")
        player_id = options["player_id"]
        try:
            erased = services.player_erase(
                game=game, player_id=player_id, reason=options["reason"], by=Actor.command("erase_player")
            )
        except ServiceError as error:
            raise CommandError(f"Nothing was erased: {error.message}") from None
        except REDIS_ERRORS as error:
            raise CommandError(f"Redis is unavailable ({error}); nothing was erased. Try again.") from None
        self.stdout.write(
            f"Erased {player_id} from {game.slug}: {erased.boards} board(s), {erased.score_events} score event(s), "
            f"{erased.standings_anonymised} archived standing(s) now 'deleted player', {erased.links} account link(s)."
        )
