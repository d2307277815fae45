"""Django admin of games, API keys and players: forms and actions that adapt to the
services (games, moderation); no business logic of its own. The live peek at a
game's boards is added on top by live/admin.py."""

from __future__ import annotations

from . import api_keys, boards, games, players

__all__ = ["api_keys", "boards", "games", "players"]
