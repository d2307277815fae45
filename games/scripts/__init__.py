"""The Lua scripts of the boards (games/lua/), each with its one typed wrapper: board.py
(submissions, reads, hiding) and game.py (names, the player sync's queue)."""

from __future__ import annotations

from .board import BOARD_UPGRADE, BOARD_WINDOW, PLAYERS_RANK, SET_PLAYER_HIDDEN, SUBMIT_SCORE
from .game import HIDDEN_RESTORE, NAMES_WRITE, PENDING_PLAYERS_ACK, PENDING_PLAYERS_READ, PLAYERS_NAMED, SUBMIT_GAME

__all__ = [
    "BOARD_UPGRADE",
    "BOARD_WINDOW",
    "HIDDEN_RESTORE",
    "NAMES_WRITE",
    "PENDING_PLAYERS_ACK",
    "PENDING_PLAYERS_READ",
    "PLAYERS_NAMED",
    "PLAYERS_RANK",
    "SET_PLAYER_HIDDEN",
    "SUBMIT_GAME",
    "SUBMIT_SCORE",
]
