"""``manage.py live_reconnect GAME [--period P]``: ask the open pages watching a game's
boards to reconnect (close 1012). They come back within seconds with fresh
snapshots, spread out by their backoff: use it after changing a game's periods or
time zone, or before taking a web node out of rotation."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from core.config import GameConfig
from core.models import Game
from core.redis import run_sync
from live import events


class Command(BaseCommand):
    help = "Ask every open page watching GAME's boards (or one --period) to reconnect."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("game", help="game slug")
        parser.add_argument("--period", help="only the watchers of this period's board")

    def handle(self, *args: Any, game: str, period: str | None, **options: Any) -> None:
        found = Game.objects.filter(slug=game).first()
        if found is None:
            raise CommandError(f"No game {game!r}.")
        kinds = list(GameConfig.from_model(found, "0").periods)
        if period is not None:
            if period not in kinds:
                raise CommandError(f"{found.name} keeps no {period!r} board; it keeps {', '.join(kinds)}.")
            kinds = [period]
        for kind in kinds:
            run_sync(lambda kind=kind: events.send_reconnect(found.slug, kind))
        self.stdout.write(f"Asked the watchers of {found.slug} ({', '.join(kinds)}) to reconnect.")
