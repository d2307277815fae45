"""The Lua scripts of presence (presence/lua/)."""

from __future__ import annotations

from core.lua import load

PRESENCE_UPDATE = load(__file__, "presence_update")
PRESENCE_PRUNE = load(__file__, "presence_prune")
PRESENCE_ANNOUNCE = load(__file__, "presence_announce")
PRESENCE_READ = load(__file__, "presence_read")
