"""Typed wrappers of the competition scripts (competitions/lua/): entry_join and attempts_add.
Each builds its script's KEYS and ARGV from named arguments through the layouts bound to the
script's header (core/lua.py) and parses its reply; nothing else reads these replies."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from redis.asyncio import Redis

from core import keys
from core.lua import ScriptReplyError, load

ENTRY_JOIN = load(__file__, "entry_join")
ATTEMPTS_ADD = load(__file__, "attempts_add")


@dataclass(frozen=True)
class PeriodSpot:
    """The competing window's current period of one board, as the scripts name it."""

    ref: str
    window: str
    period_id: str
    ends_ms: int | None

    @property
    def board_key(self) -> str:
        return keys.board(self.ref, self.window, self.period_id)


def _ends(spot: PeriodSpot) -> int | str:
    return "" if spot.ends_ms is None else spot.ends_ms


def _number(raw: Any, script: str) -> int:
    try:
        return int(raw)
    except (TypeError, ValueError):
        raise ScriptReplyError(f"{script} replied {raw!r} for a number") from None


# --------------------------------------------------------------------------- entry_join


class _JoinKeys(NamedTuple):
    entrants: str
    hidden: str
    ledger: str
    boards_index: str
    close_jobs: str
    board: str


class _JoinArgs(NamedTuple):
    player: str
    now_ms: int
    max_entrants: int
    closes_ms: int | str
    ledger_cap: int
    window: str
    period_id: str
    ends_ms: int | str
    grace: int


ENTRY_JOIN.bind(keys=_JoinKeys, args=_JoinArgs)


@dataclass(frozen=True)
class Joined:
    created: bool  # False: the player had entered already (the same entry)
    entered_ms: int
    entrants: int


@dataclass(frozen=True)
class JoinRefused:
    reason: str  # 'hidden' | 'entry_closed' | 'board_full' | 'ledger_full'
    value: int | None  # when entry closed (ms), or the field's size


async def entry_join(
    client: Redis,
    *,
    spot: PeriodSpot,
    player_id: str,
    now_ms: int,
    max_entrants: int | None,
    closes_ms: int | None,
    ledger_cap: int,
    grace_ms: int,
) -> Joined | JoinRefused:
    call = ENTRY_JOIN.flatten(
        _JoinKeys(
            keys.entry_entrants(spot.board_key),
            keys.board_hidden(spot.ref),
            keys.ledger(spot.ref),
            keys.boards_index(spot.ref),
            keys.close_jobs(spot.ref),
            spot.board_key,
        ),
        _JoinArgs(
            player_id,
            now_ms,
            max_entrants or 0,
            "" if closes_ms is None else closes_ms,
            ledger_cap,
            spot.window,
            spot.period_id,
            _ends(spot),
            grace_ms,
        ),
    )
    reply = await ENTRY_JOIN(client, *call)
    if not isinstance(reply, list) or len(reply) not in (3, 4):
        raise ScriptReplyError(f"entry_join replied {reply!r}")
    if reply[0] == "ok" and len(reply) == 4:
        return Joined(
            created=reply[1] == 1,
            entered_ms=_number(reply[2], "entry_join"),
            entrants=_number(reply[3], "entry_join"),
        )
    if reply[0] == "err" and reply[1] in ("hidden", "entry_closed", "board_full", "ledger_full"):
        return JoinRefused(reply[1], _number(reply[2], "entry_join") if reply[2] != "" else None)
    raise ScriptReplyError(f"entry_join replied {reply!r}")


# --------------------------------------------------------------------------- attempts_add


class _AttemptKeys(NamedTuple):
    extra: str
    tries: str
    boards_index: str
    close_jobs: str
    board: str
    ledger: str


class _AttemptArgs(NamedTuple):
    player: str
    add: int
    extra_max: int
    window: str
    period_id: str
    ends_ms: int | str
    grace: int
    now_ms: int
    ledger_cap: int


ATTEMPTS_ADD.bind(keys=_AttemptKeys, args=_AttemptArgs)


@dataclass(frozen=True)
class Attempts:
    extra: int  # granted beyond max_attempts this period, in all
    used: int  # scores accepted this period


@dataclass(frozen=True)
class AttemptsRefused:
    reason: str  # 'too_many' | 'ledger_full'
    granted: int  # what the player had been granted already (too_many)


async def attempts_add(
    client: Redis,
    *,
    spot: PeriodSpot,
    player_id: str,
    add: int,
    extra_max: int,
    grace_ms: int,
    now_ms: int,
    ledger_cap: int,
) -> Attempts | AttemptsRefused:
    call = ATTEMPTS_ADD.flatten(
        _AttemptKeys(
            keys.entry_extra(spot.board_key),
            keys.entry_tries(spot.board_key),
            keys.boards_index(spot.ref),
            keys.close_jobs(spot.ref),
            spot.board_key,
            keys.ledger(spot.ref),
        ),
        _AttemptArgs(player_id, add, extra_max, spot.window, spot.period_id, _ends(spot), grace_ms, now_ms, ledger_cap),
    )
    reply = await ATTEMPTS_ADD(client, *call)
    if isinstance(reply, list) and len(reply) == 3 and reply[0] == "ok":
        return Attempts(extra=_number(reply[1], "attempts_add"), used=_number(reply[2], "attempts_add"))
    if isinstance(reply, list) and len(reply) == 3 and reply[0] == "err" and reply[1] == "too_many":
        return AttemptsRefused("too_many", granted=_number(reply[2], "attempts_add"))
    if isinstance(reply, list) and len(reply) == 3 and reply[0] == "err" and reply[1] == "ledger_full":
        return AttemptsRefused("ledger_full", granted=0)
    raise ScriptReplyError(f"attempts_add replied {reply!r}")
