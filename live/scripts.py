"""The Lua scripts of the live layer (live/lua/)."""

from __future__ import annotations

from core.lua import load

PERIOD_STARTED = load(__file__, "period_started")
