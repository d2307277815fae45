from __future__ import annotations

from django.conf import settings
from django.db import models

from core.models import PLAYER_ID_MAX_CHARS, Game, validate_player_id


class PlayerLink(models.Model):
    """A site user who proved, with a one-time code shown in the game, that they are this player."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="player_links")
    game = models.ForeignKey(Game, on_delete=models.CASCADE, related_name="player_links")
    player_id = models.CharField(max_length=PLAYER_ID_MAX_CHARS, validators=[validate_player_id])
    linked_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["game", "player_id"]
        constraints = [
            # One user per player, and one player per user in each game.
            models.UniqueConstraint(fields=["game", "player_id"], name="one_user_per_player"),
            models.UniqueConstraint(fields=["game", "user"], name="one_player_per_user_and_game"),
        ]

    def __str__(self) -> str:
        return f"{self.user} is {self.player_id} in {self.game.slug}"
