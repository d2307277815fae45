"""The Lua scripts of the live layer (live/lua/)."""

from __future__ import annotations

from core.lua import load

PERIOD_STARTED = load(__file__, "period_started")
RECENT_SNAPSHOT = load(__file__, "recent_snapshot")
SOCKET_ADMIT = load(__file__, "socket_admit")
