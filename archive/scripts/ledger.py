"""Typed wrappers of the drain's scripts on a board's ledger stream (archive/ledger/drain.py):
ledger_trim (what the database holds leaves the stream) and ledger_consumers_prune (idle,
empty consumers leave the group). Each builds its key from core/keys.py and its ARGV from
named arguments through the layouts bound to the script's header (core/lua.py); a reply of
another shape raises ScriptReplyError.
"""

from __future__ import annotations

from typing import NamedTuple

from redis.asyncio import Redis

from core import keys
from core.lua import load

from ._reply import count

LEDGER_TRIM = load(__file__, "ledger_trim")
LEDGER_CONSUMERS_PRUNE = load(__file__, "ledger_consumers_prune")


class _LedgerKeys(NamedTuple):
    ledger: str


class _TrimArgs(NamedTuple):
    group: str


LEDGER_TRIM.bind(keys=_LedgerKeys, args=_TrimArgs)


async def ledger_trim(client: Redis, *, ref: str, group: str) -> int:
    """Drop the board's ledger entries ``group`` has read and acknowledged; returns how many
    (0 when the stream or the group is missing)."""
    call = LEDGER_TRIM.flatten(_LedgerKeys(keys.ledger(ref)), _TrimArgs(group))
    raw = await LEDGER_TRIM(client, *call)
    return count(raw, raw, "ledger_trim")


class _PruneArgs(NamedTuple):
    group: str
    idle_ms: int
    consumer: str


LEDGER_CONSUMERS_PRUNE.bind(keys=_LedgerKeys, args=_PruneArgs)


async def ledger_consumers_prune(client: Redis, *, ref: str, group: str, idle_ms: int, consumer: str) -> int:
    """Drop ``group``'s consumers idle ``idle_ms`` or more with nothing pending, never
    ``consumer`` (the caller); returns how many were dropped."""
    call = LEDGER_CONSUMERS_PRUNE.flatten(_LedgerKeys(keys.ledger(ref)), _PruneArgs(group, idle_ms, consumer))
    raw = await LEDGER_CONSUMERS_PRUNE(client, *call)
    return count(raw, raw, "ledger_consumers_prune")
