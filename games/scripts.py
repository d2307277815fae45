"""The Lua scripts, registered once and called by SHA.

Each script's source (games/lua/*.lua) opens with its KEYS / ARGV / returns
contract. ``Script.__call__`` runs EVALSHA and, when Redis has forgotten the
script (a restart, SCRIPT FLUSH), loads it and runs it again; pipelines call
:func:`ensure_loaded` first so a batch never meets NOSCRIPT half-way.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from redis.asyncio import Redis
from redis.asyncio.client import Pipeline
from redis.exceptions import NoScriptError

LUA_DIR = Path(__file__).resolve().parent / "lua"

KeyOrArg = str | int | float


@dataclass(frozen=True)
class Script:
    name: str
    source: str = field(repr=False)
    sha: str = field(repr=False)

    async def __call__(self, client: Redis, keys: Sequence[str], args: Sequence[KeyOrArg]) -> Any:
        try:
            return await client.evalsha(self.sha, len(keys), *keys, *args)
        except NoScriptError:
            await client.script_load(self.source)
            return await client.evalsha(self.sha, len(keys), *keys, *args)

    def queue(self, pipe: Pipeline, keys: Sequence[str], args: Sequence[KeyOrArg]) -> None:
        """Add a call to a pipeline (after :func:`ensure_loaded`)."""
        pipe.evalsha(self.sha, len(keys), *keys, *args)


def _load(name: str) -> Script:
    source = (LUA_DIR / f"{name}.lua").read_text()
    return Script(name, source, hashlib.sha1(source.encode()).hexdigest())


SUBMIT_SCORE = _load("submit_score")
RATE_LIMIT = _load("rate_limit")
BOARD_WINDOW = _load("board_window")
PLAYERS_RANK = _load("players_rank")
SET_PLAYER_HIDDEN = _load("set_player_hidden")
PENDING_PLAYERS_READ = _load("pending_players_read")
PENDING_PLAYERS_ACK = _load("pending_players_ack")
PERIOD_STARTED = _load("period_started")
PRESENCE_UPDATE = _load("presence_update")
PRESENCE_PRUNE = _load("presence_prune")
PRESENCE_ANNOUNCE = _load("presence_announce")
PRESENCE_READ = _load("presence_read")
LEDGER_TRIM = _load("ledger_trim")
LINK_CODE_ISSUE = _load("link_code_issue")
LINK_CODE_REDEEM = _load("link_code_redeem")
LOGIN_FAILURES = _load("login_failures")
SCORE_CORRECT = _load("score_correct")
BOARD_SWAP = _load("board_swap")
NAMES_RESTORE = _load("names_restore")
LEDGER_CONSUMERS_PRUNE = _load("ledger_consumers_prune")
CLOSE_CLAIM = _load("close_claim")
CLOSE_ACK = _load("close_ack")
CLOSE_EXTEND = _load("close_extend")
CLOSE_FAIL = _load("close_fail")
CLOSE_REAP = _load("close_reap")
CLOSE_RETRY = _load("close_retry")
CLOSE_SCHEDULE = _load("close_schedule")
CLOSE_RETAIN = _load("close_retain")
CLOSE_LOCK = _load("close_lock")

ALL: tuple[Script, ...] = (
    SUBMIT_SCORE,
    RATE_LIMIT,
    BOARD_WINDOW,
    PLAYERS_RANK,
    SET_PLAYER_HIDDEN,
    PENDING_PLAYERS_READ,
    PENDING_PLAYERS_ACK,
    PERIOD_STARTED,
    PRESENCE_UPDATE,
    PRESENCE_PRUNE,
    PRESENCE_ANNOUNCE,
    PRESENCE_READ,
    LEDGER_TRIM,
    LINK_CODE_ISSUE,
    LINK_CODE_REDEEM,
    LOGIN_FAILURES,
    SCORE_CORRECT,
    BOARD_SWAP,
    NAMES_RESTORE,
    LEDGER_CONSUMERS_PRUNE,
    CLOSE_CLAIM,
    CLOSE_ACK,
    CLOSE_EXTEND,
    CLOSE_FAIL,
    CLOSE_REAP,
    CLOSE_RETRY,
    CLOSE_SCHEDULE,
    CLOSE_RETAIN,
    CLOSE_LOCK,
)


async def ensure_loaded(client: Redis, *scripts: Script) -> None:
    present = await client.script_exists(*(s.sha for s in scripts))
    for script, exists in zip(scripts, present, strict=True):
        if not exists:
            await client.script_load(script.source)
