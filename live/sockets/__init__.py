"""The live websockets: a game's (/ws/games/{slug}/) and the home page's (/ws/home/)."""

from __future__ import annotations

from .game import GameSocket
from .guard import OutageGuard, RefuseSocket
from .home import HomeSocket
from .origins import GameOriginValidator

__all__ = ["GameOriginValidator", "GameSocket", "HomeSocket", "OutageGuard", "RefuseSocket"]
