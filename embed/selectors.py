"""Reads of the embed app."""

from __future__ import annotations

from core.models import Game


async def logo_of(*, game_slug: str) -> tuple[bytes, str, str] | None:
    """The game's logo: its bytes, media type and version; None when it has none (or no game)."""
    found = (
        await Game.objects.filter(slug=game_slug)
        .exclude(logo_version="")
        .values_list("logo", "logo_type", "logo_version")
        .afirst()
    )
    if found is None or found[0] is None:
        return None
    return bytes(found[0]), found[1], found[2]
