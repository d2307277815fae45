"""Reads of account links."""

from __future__ import annotations

from typing import Any

from .models import PlayerLink


async def linked_player_id(*, user: Any, game_id: int) -> str | None:
    """The player a signed-in user is linked to in a game, or None (also for anonymous users)."""
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    return (
        await PlayerLink.objects.filter(user_id=user.pk, game_id=game_id).values_list("player_id", flat=True).afirst()
    )
