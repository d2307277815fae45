"""The Lua scripts of the archive and the ledger (archive/lua/)."""

from __future__ import annotations

from core.lua import load

CLOSE_CLAIM = load(__file__, "close_claim")
CLOSE_ACK = load(__file__, "close_ack")
CLOSE_EXTEND = load(__file__, "close_extend")
CLOSE_FAIL = load(__file__, "close_fail")
CLOSE_REAP = load(__file__, "close_reap")
CLOSE_RETRY = load(__file__, "close_retry")
CLOSE_SCHEDULE = load(__file__, "close_schedule")
CLOSE_RETAIN = load(__file__, "close_retain")
CLOSE_LOCK = load(__file__, "close_lock")
CLOSE_SWEEP = load(__file__, "close_sweep")
LEDGER_TRIM = load(__file__, "ledger_trim")
LEDGER_CONSUMERS_PRUNE = load(__file__, "ledger_consumers_prune")
