"""Reads of account links."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from core.models import Game, Player

from .models import PlayerLink


async def linked_player_id(*, user: Any, game_id: int) -> str | None:
    """The player a signed-in user is linked to in a game, or None (also for anonymous users)."""
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    return (
        await PlayerLink.objects.filter(user_id=user.pk, game_id=game_id).values_list("player_id", flat=True).afirst()
    )


@dataclass(frozen=True)
class LinkedPlayer:
    link_id: int
    game_slug: str
    game_name: str
    player_id: str
    display_name: str
    linked_at: dt.datetime


def links_of(*, user: Any, game_id: int | None = None) -> list[LinkedPlayer]:
    """A user's linked players (in one game, if given), by game name, with the names they play under."""
    query = PlayerLink.objects.filter(user_id=user.pk)
    if game_id is not None:
        query = query.filter(game_id=game_id)
    links = list(query.select_related("game").order_by("game__name", "game_id"))
    names: dict[tuple[int, str], str] = {}
    if links:
        wanted = Player.objects.filter(
            game_id__in={link.game_id for link in links}, player_id__in={link.player_id for link in links}
        )
        names = {(p.game_id, p.player_id): p.display_name for p in wanted.only("game_id", "player_id", "display_name")}
    return [
        LinkedPlayer(
            link_id=link.pk,
            game_slug=link.game.slug,
            game_name=link.game.name,
            player_id=link.player_id,
            display_name=names.get((link.game_id, link.player_id)) or link.player_id,
            linked_at=link.linked_at,
        )
        for link in links
    ]


def link_of(*, user: Any, game_id: int) -> LinkedPlayer | None:
    """The user's link in one game, if any."""
    return next(iter(links_of(user=user, game_id=game_id)), None)


def game_by_slug(*, slug: str) -> Game | None:
    """The game a link page is about (active or not: linking does not post scores)."""
    if len(slug) > 50:
        return None
    return Game.objects.filter(slug=slug).first()


def linkable_games() -> list[Game]:
    """Games a user may link a player in, for the account page."""
    return list(Game.objects.filter(active=True).order_by("name"))
