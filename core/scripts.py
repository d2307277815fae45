"""The Lua scripts of the ground floor (core/lua/)."""

from __future__ import annotations

from .lua import load

RATE_LIMIT = load(__file__, "rate_limit")
SLIDING_WINDOW = load(__file__, "sliding_window")
