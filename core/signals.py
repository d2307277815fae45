"""Any change to a game, its leaderboards or its API keys invalidates every process's config cache."""

from __future__ import annotations

import logging

from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from . import config, services
from .errors import REDIS_FAILURES
from .models import ApiKey, Game, Leaderboard

logger = logging.getLogger(__name__)


def _announce(slug: str, board: str = "") -> None:
    config.invalidate()

    def bump() -> None:
        try:
            services.config_changed(slug=slug, board=board)
        except REDIS_FAILURES:
            # Other processes then notice within GAME_CONFIG_CACHE_SECS instead of at once.
            logger.warning("could not reach Redis to announce a config change of %s", slug)

    transaction.on_commit(bump)


@receiver([post_save, post_delete], sender=Game)
def _game_changed(sender: type, instance: Game, **kwargs: object) -> None:
    _announce(instance.slug)


@receiver([post_save, post_delete], sender=Leaderboard)
def _board_changed(sender: type, instance: Leaderboard, **kwargs: object) -> None:
    _announce(instance.game.slug, instance.slug)
    if kwargs.get("created"):
        game_slug, board_slug = instance.game.slug, instance.slug

        def copy_hidden() -> None:
            try:
                services.board_hidden_copy(game_slug=game_slug, board_slug=board_slug)
            except REDIS_FAILURES:
                logger.error("could not copy the hidden players of %s to its new board %s", game_slug, board_slug)

        transaction.on_commit(copy_hidden)


@receiver([post_save, post_delete], sender=ApiKey)
def _key_changed(sender: type, instance: ApiKey, **kwargs: object) -> None:
    _announce(instance.game.slug)
