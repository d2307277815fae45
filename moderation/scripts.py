"""The Lua scripts of moderation (moderation/lua/)."""

from __future__ import annotations

from core.lua import load

PLAYER_ERASE = load(__file__, "player_erase")
PLAYER_ERASE_BOARD = load(__file__, "player_erase_board")
