"""The Lua scripts of the boards (games/lua/)."""

from __future__ import annotations

from core.lua import load

SUBMIT_SCORE = load(__file__, "submit_score")
SUBMIT_GAME = load(__file__, "submit_game")
BOARD_WINDOW = load(__file__, "board_window")
PLAYERS_RANK = load(__file__, "players_rank")
SET_PLAYER_HIDDEN = load(__file__, "set_player_hidden")
HIDDEN_RESTORE = load(__file__, "hidden_restore")
PENDING_PLAYERS_READ = load(__file__, "pending_players_read")
PENDING_PLAYERS_ACK = load(__file__, "pending_players_ack")
NAMES_WRITE = load(__file__, "names_write")
PLAYERS_NAMED = load(__file__, "players_named")
