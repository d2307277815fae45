"""``manage.py seed_demo``: a demo game with full boards, so a fresh ``make run`` shows something.

Idempotent (``make run`` calls it on every start): if the demo game exists it
does nothing. Names and scores come from a fixed seed, so every machine shows
the same demo.
"""

from __future__ import annotations

import datetime as dt
import random
import re
from argparse import ArgumentParser
from collections.abc import Sequence
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from core import clock
from core import services as core_services
from core.config import GameConfig
from core.errors import REDIS_FAILURES, ServiceError
from core.models import Game, Leaderboard
from core.redis import get_redis, run_sync
from games import periods, services

DEMO_SLUG = "demo"
DEMO_NAME = "Demo Arena"
DEMO_BOARD = "main"
DEMO_DESCRIPTION = "Demo data made up by manage.py seed_demo: every player and score here is fictional."
DEFAULT_PLAYERS = 300
MAX_PLAYERS = 100_000
RANDOM_SEED = 42
# One pipeline of submissions per this many players.
SUBMIT_BATCH_SIZE = 500
# Earlier days get scores too, so weekly, monthly and all-time boards differ from
# today's, and last week's daily boards (kept PERIOD_RETENTION_SECS) can be browsed.
HISTORY_DAYS = 40
# Share of the players who play on each earlier day.
HISTORY_DAILY_SHARE = 0.12
# Every this-many-th player ties with the one before, so the boards show shared ranks.
TIE_EVERY = 17
# Scores are multiples of this, as arcade scores tend to be (which makes ties likely too).
SCORE_STEP = 10
MIN_SKILL, MAX_SKILL = 500, 60_000
# The anti-spam limit the demo game ends up with; the seed itself runs without one.
DEMO_MAX_SUBMISSIONS_PER_MINUTE = 60

_PREFIXES = (
    "Shadow", "Pixel", "Turbo", "Neon", "Frost", "Iron", "Crimson", "Silent", "Lucky", "Cosmic",
    "Rapid", "Mystic", "Atomic", "Savage", "Hyper", "Lunar", "Solar", "Storm", "Blaze", "Ghost",
    "Quantum", "Rogue", "Velvet", "Thunder", "Arcane", "Glitch", "Retro", "Omega", "Sly", "Wild",
)  # fmt: skip
_SUFFIXES = (
    "Fox", "Wolf", "Ninja", "Knight", "Raven", "Tiger", "Viper", "Falcon", "Dragon", "Hawk",
    "Rider", "Sniper", "Wizard", "Panda", "Golem", "Bandit", "Comet", "Samurai", "Phoenix", "Otter",
    "Byte", "Drifter", "Mage", "Pilot", "Specter", "Yeti", "Kraken", "Lynx", "Badger", "Jester",
)  # fmt: skip


def gamer_names(rng: random.Random, count: int) -> list[tuple[str, str]]:
    """``count`` distinct (player_id, display name) pairs such as ("neonfox42", "NeonFox42")."""
    names: list[tuple[str, str]] = []
    seen: set[str] = set()
    while len(names) < count:
        prefix, suffix = rng.choice(_PREFIXES), rng.choice(_SUFFIXES)
        name = prefix + suffix
        style = rng.random()
        if style < 0.5:
            name += str(rng.randint(1, 999))
        elif style < 0.6:
            name = f"xX_{name}_Xx"
        elif style < 0.7:
            name = f"{prefix} {suffix}"
        player_id = re.sub(r"[^a-z0-9_]", "", name.lower())
        if player_id in seen:
            player_id = f"{player_id}_{len(names)}"
            name = f"{name}{len(names)}"
        seen.add(player_id)
        names.append((player_id, name))
    return names


def _score(skill: int, rng: random.Random, low: float, high: float) -> int:
    return max(SCORE_STEP, round(skill * rng.uniform(low, high) / SCORE_STEP) * SCORE_STEP)


def _submit(game: GameConfig, items: Sequence[services.Submission], now: dt.datetime) -> int:
    board = game.board_named(DEMO_BOARD)
    assert board is not None  # made by the seed before any score
    results = run_sync(lambda: services.score_import(game=game, board=board, items=items, at=now))
    errors = [r for r in results if isinstance(r, ServiceError)]
    if errors:
        raise CommandError(f"The demo seed was refused: {errors[0].message}")
    return len(results)


def _in_batches(game: GameConfig, items: Sequence[services.Submission], now: dt.datetime) -> int:
    return sum(_submit(game, items[i : i + SUBMIT_BATCH_SIZE], now) for i in range(0, len(items), SUBMIT_BATCH_SIZE))


class Command(BaseCommand):
    help = f"Create the '{DEMO_SLUG}' game with fictional players and scores, unless it already exists."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--players", type=int, default=DEFAULT_PLAYERS, help=f"default {DEFAULT_PLAYERS}")

    def handle(self, *args: Any, **options: Any) -> None:
        count = options["players"]
        if not 1 <= count <= MAX_PLAYERS:
            raise CommandError(f"--players: must be between 1 and {MAX_PLAYERS}.")
        if Game.objects.filter(slug=DEMO_SLUG).exists():
            self.stdout.write("Demo game already present")
            return
        try:
            run_sync(lambda: get_redis().ping())
        except REDIS_FAILURES as error:
            raise CommandError(f"Cannot reach Redis (REDIS_URL), so no demo was seeded: {error}") from None
        try:
            # If Redis fails half-way the game row goes too, so the next start seeds again.
            with transaction.atomic():
                submitted = self._seed(count)
        except REDIS_FAILURES as error:
            raise CommandError(f"Redis failed while seeding the demo: {error}") from None
        self.stdout.write(f"Seeded game {DEMO_SLUG} with {count} players ({submitted} scores)")

    def _seed(self, count: int) -> int:
        game = core_services.game_create(
            slug=DEMO_SLUG,
            name=DEMO_NAME,
            description=DEMO_DESCRIPTION,
            # A player scores many times within a second here; the limit is set after.
            max_submissions_per_minute=0,
        )
        core_services.leaderboard_create(
            game=game,
            slug=DEMO_BOARD,
            name="Points",
            mode=Leaderboard.Mode.BEST,
            order=Leaderboard.Order.DESC,
            windows=periods.PERIODS,
        )
        config = GameConfig.from_model(game, "0")
        rng = random.Random(RANDOM_SEED)
        players = gamer_names(rng, count)
        skills = [rng.randint(MIN_SKILL, MAX_SKILL) for _ in players]
        now = clock.now()
        today = periods.current(periods.DAILY, config.timezone, now)
        assert today.starts_at is not None

        submitted = 0
        # Oldest first, so the recent-submissions list ends with today's scores on top.
        for days_ago in range(HISTORY_DAYS, 0, -1):
            day_start = today.starts_at - dt.timedelta(days=days_ago)
            at = day_start + dt.timedelta(seconds=rng.randint(0, 24 * 3600 - 1))
            sample = rng.sample(range(count), max(1, round(count * HISTORY_DAILY_SHARE)))
            items = [
                services.Submission(players[i][0], _score(skills[i], rng, 0.6, 1.1), players[i][1]) for i in sample
            ]
            submitted += _in_batches(config, items, at)

        today_scores = [_score(skill, rng, 0.5, 1.0) for skill in skills]
        for i in range(TIE_EVERY, count, TIE_EVERY):
            today_scores[i] = today_scores[i - 1]
        items = [
            services.Submission(player_id, score, name)
            for (player_id, name), score in zip(players, today_scores, strict=True)
        ]
        # Today's scores carry times from the day's start up to now, in order.
        elapsed = now - today.starts_at
        step = elapsed / (len(items) // SUBMIT_BATCH_SIZE + 1)
        for n, i in enumerate(range(0, count, SUBMIT_BATCH_SIZE)):
            at = min(now, today.starts_at + step * (n + 1))
            submitted += _submit(config, items[i : i + SUBMIT_BATCH_SIZE], at)

        services.players_sync_pending()
        game.max_submissions_per_minute = DEMO_MAX_SUBMISSIONS_PER_MINUTE
        game.save(update_fields=["max_submissions_per_minute"])
        return submitted
