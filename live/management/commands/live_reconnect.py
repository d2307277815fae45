"""``manage.py live_reconnect GAME [--board B] [--period P]``: ask the open pages watching a
game's boards to reconnect (close 1012). They come back within seconds with fresh
snapshots, spread out by their backoff: use it after changing a board's windows or
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
    help = "Ask every open page watching GAME's boards (or one --board, one --period) to reconnect."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("game", help="game slug")
        parser.add_argument("--board", help="only the watchers of this leaderboard")
        parser.add_argument("--period", help="only the watchers of this window")

    def handle(self, *args: Any, game: str, board: str | None, period: str | None, **options: Any) -> None:
        found = Game.objects.filter(slug=game).first()
        if found is None:
            raise CommandError(f"No game {game!r}.")
        boards = list(GameConfig.from_model(found, "0").boards)
        if board is not None:
            boards = [b for b in boards if b.slug == board]
            if not boards:
                raise CommandError(f"{found.name} has no leaderboard {board!r}.")
        views = [(b, w) for b in boards for w in b.windows if period is None or w == period]
        if period is not None and not views:
            raise CommandError(f"No leaderboard of {found.name} keeps a {period!r} window.")
        for leaderboard, window in views:
            run_sync(lambda ref=leaderboard.ref, window=window: events.send_reconnect(ref, window))
        shown = ", ".join(f"{b.slug} {w}" for b, w in views)
        self.stdout.write(f"Asked the watchers of {found.slug} ({shown}) to reconnect.")
