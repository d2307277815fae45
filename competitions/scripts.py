"""Typed wrappers of the competition scripts (competitions/lua/): entry_join and attempts_add.
Each builds its script's KEYS and ARGV from named arguments through the layouts bound to the
script's header (core/lua.py) and parses its reply; nothing else reads these replies."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from redis.asyncio import Redis

from core import keys
from core.lua import ScriptReplyError, load
from games.scripts.board import NO_COHORTS_ARGS, CohortGate, entry_keys

ENTRY_JOIN = load(__file__, "entry_join", prelude=("cohorts",))
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
    cohorts: str
    sizes: str
    state: str
    ratings: str
    tiers: str
    tries: str
    extra: str


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
    rating: int | str
    cohort_size: int
    fill: str
    formed_ms: int | str
    tier_slugs: str
    start_tier: str
    needs_rating: str


ENTRY_JOIN.bind(keys=_JoinKeys, args=_JoinArgs)


@dataclass(frozen=True)
class Joined:
    created: bool  # False: the player had entered already (the same entry)
    entered_ms: int
    entrants: int
    cohort: int | None  # its index; None without cohorts, or until a balanced split
    attempts_used: int
    attempts_extra: int  # granted beyond the board's max_attempts this period


@dataclass(frozen=True)
class JoinRefused:
    reason: str  # 'hidden' | 'rating_required' | 'entry_closed' | 'board_full' | 'ledger_full'
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
    rating: int | None = None,
    needs_rating: bool = False,
    cohorts: CohortGate | None = None,
) -> Joined | JoinRefused:
    """``needs_rating``: the board's cohorts are bands of rating (a new entrant must give one)."""
    entrants, tries, extra, cohorts_key, sizes, state, tiers = entry_keys(spot.ref, spot.board_key)
    call = ENTRY_JOIN.flatten(
        _JoinKeys(
            entrants,
            keys.board_hidden(spot.ref),
            keys.ledger(spot.ref),
            keys.boards_index(spot.ref),
            keys.close_jobs(spot.ref),
            spot.board_key,
            cohorts_key,
            sizes,
            state,
            keys.entry_ratings(spot.board_key),
            tiers,
            tries,
            extra,
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
            "" if rating is None else rating,
            *(cohorts.args if cohorts else NO_COHORTS_ARGS),
            "1" if needs_rating else "",
        ),
    )
    reply = await ENTRY_JOIN(client, *call)
    if not isinstance(reply, list) or len(reply) not in (3, 7):
        raise ScriptReplyError(f"entry_join replied {reply!r}")
    if reply[0] == "ok" and len(reply) == 7:
        return Joined(
            created=reply[1] == 1,
            entered_ms=_number(reply[2], "entry_join"),
            entrants=_number(reply[3], "entry_join"),
            cohort=None if reply[4] == "" else _number(reply[4], "entry_join"),
            attempts_used=_number(reply[5], "entry_join"),
            attempts_extra=_number(reply[6], "entry_join"),
        )
    if reply[0] == "err" and reply[1] in ("hidden", "rating_required", "entry_closed", "board_full", "ledger_full"):
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


# --------------------------------------------------------------------------- cohorts_split

COHORTS_SPLIT = load(__file__, "cohorts_split", prelude=("cohorts",))


class _SplitKeys(NamedTuple):
    entrants: str
    cohorts: str
    sizes: str
    state: str
    ledger: str
    tiers: str


class _SplitArgs(NamedTuple):
    now_ms: int
    ledger_cap: int
    cohort_size: int
    tier_slugs: str
    start_tier: str


class _SplitEntrant(NamedTuple):
    player: str
    cohort: int


COHORTS_SPLIT.bind(keys=_SplitKeys, args=_SplitArgs, arg_groups=(_SplitEntrant,))


@dataclass(frozen=True)
class Split:
    done_before: bool  # True: the period's split had run (nothing changed now)
    placed: int  # entrants placed as the split gave them
    late: int  # entrants who came after the split was computed, placed as late comers
    ledger_full: bool = False  # refused: the ledger is too far behind, try again later


async def cohorts_split(
    client: Redis, *, spot: PeriodSpot, placed: dict[str, int], cohorts: CohortGate, now_ms: int, ledger_cap: int
) -> Split:
    entrants, _, _, cohorts_key, sizes, state, tiers = entry_keys(spot.ref, spot.board_key)
    size, _, _, slugs, start = cohorts.args
    call = COHORTS_SPLIT.flatten(
        _SplitKeys(entrants, cohorts_key, sizes, state, keys.ledger(spot.ref), tiers),
        _SplitArgs(now_ms, ledger_cap, size, slugs, start),
        arg_groups=([_SplitEntrant(p, c) for p, c in placed.items()],),
    )
    reply = await COHORTS_SPLIT(client, *call)
    if not isinstance(reply, list) or len(reply) != 3:
        raise ScriptReplyError(f"cohorts_split replied {reply!r}")
    if reply[0] == "ok":
        return Split(False, _number(reply[1], "cohorts_split"), _number(reply[2], "cohorts_split"))
    if reply[0] == "done":
        return Split(True, 0, 0)
    if reply[0] == "err" and reply[1] == "ledger_full":
        return Split(False, 0, 0, ledger_full=True)
    raise ScriptReplyError(f"cohorts_split replied {reply!r}")


# --------------------------------------------------------------------------- cohort_read

COHORT_READ = load(__file__, "cohort_read")


class _CohortReadKeys(NamedTuple):
    cohorts: str
    board: str
    members: str
    meta: str
    version: str | None = None


class _CohortReadArgs(NamedTuple):
    ties: str
    by: str
    at: int | str
    version: str


COHORT_READ.bind(keys=_CohortReadKeys, args=_CohortReadArgs)


@dataclass(frozen=True)
class CohortEntry:
    player_id: str
    member: str  # the board's member (orders equal sort bases)
    base: int  # sort base (oriented: ascending is better)
    metadata: str  # JSON text, '' for none


@dataclass(frozen=True)
class CohortRead:
    index: int | None  # None: the player is in no cohort (yet)
    entrants: int
    entries: list[CohortEntry]  # those with an entry on the board, unordered
    version: int = 0  # the board's live version, when asked for


async def cohort_read(
    client: Redis,
    *,
    board_key: str,
    ties: str,
    index: int | None = None,
    player_id: str | None = None,
    version: Literal["next", "current"] | None = None,
) -> CohortRead:
    """The cohort ``index``, or ``player_id``'s, with its entrants' board entries; with
    ``version``, the board's live version counter too ('next' takes a new one: the broadcaster)."""
    by, at = ("cohort", index) if index is not None else ("player", player_id)
    assert at is not None
    call = COHORT_READ.flatten(
        _CohortReadKeys(
            keys.entry_cohorts(board_key),
            board_key,
            keys.entry_members(board_key),
            keys.entry_meta(board_key),
            keys.board_version(board_key) if version else None,
        ),
        _CohortReadArgs(ties, by, at, version or ""),
    )
    raw = await COHORT_READ(client, *call)
    if not isinstance(raw, list) or len(raw) < 3 or (len(raw) - 3) % 4:
        raise ScriptReplyError(f"cohort_read replied {raw!r}")
    taken = _number(raw[2], "cohort_read")
    if raw[0] == "":
        return CohortRead(None, 0, [], taken)
    entries = [
        CohortEntry(str(raw[i]), str(raw[i + 1]), _number(raw[i + 2], "cohort_read"), str(raw[i + 3]))
        for i in range(3, len(raw), 4)
    ]
    return CohortRead(_number(raw[0], "cohort_read"), _number(raw[1], "cohort_read"), entries, taken)


# --------------------------------------------------------------------------- cohorts_restore

COHORTS_RESTORE = load(__file__, "cohorts_restore", prelude=("cohorts",))


class _RestoreKeys(NamedTuple):
    cohorts: str
    sizes: str
    state: str


class _RestoreArgs(NamedTuple):
    balanced: int


COHORTS_RESTORE.bind(keys=_RestoreKeys, args=_RestoreArgs, arg_groups=(_SplitEntrant,))


async def cohorts_restore(client: Redis, *, board_key: str, placed: dict[str, int], balanced: bool) -> int:
    """Put back the ledger's placements where Redis lost them and count the cohorts again;
    returns how many entrants are in cohorts."""
    call = COHORTS_RESTORE.flatten(
        _RestoreKeys(
            keys.entry_cohorts(board_key), keys.entry_cohort_sizes(board_key), keys.entry_cohort_state(board_key)
        ),
        _RestoreArgs(1 if balanced else 0),
        arg_groups=([_SplitEntrant(p, c) for p, c in placed.items()],),
    )
    return _number(await COHORTS_RESTORE(client, *call), "cohorts_restore")
