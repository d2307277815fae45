"""Typed wrappers of the board scripts (games/lua/): submit_score, board_window, players_rank
and set_player_hidden. Each builds its script's KEYS and ARGV from named arguments through
the layouts bound to the script's header (core/lua.py), and parses its reply into a typed
result; nothing else reads these replies.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from redis.asyncio import Redis

from core import keys
from core.lua import Call, ScriptReplyError, load

ENTRIES = ("entries",)
SUBMIT_SCORE = load(__file__, "submit_score", prelude=(*ENTRIES, "cohorts"))
BOARD_WINDOW = load(__file__, "board_window", prelude=ENTRIES)
PLAYERS_RANK = load(__file__, "players_rank", prelude=ENTRIES)
SET_PLAYER_HIDDEN = load(__file__, "set_player_hidden", prelude=ENTRIES)


# --------------------------------------------------------------------------- submit_score


class WriteKeys(NamedTuple):
    """The fixed KEYS of the scripts that write scores (submit_score.lua, score_correct.lua)."""

    hidden: str
    boards_index: str
    dirty: str
    close_jobs: str
    ledger: str
    tie_clock: str


class _SubmitKeys(NamedTuple):
    hidden: str
    boards_index: str
    dirty: str
    close_jobs: str
    ledger: str
    tie_clock: str
    entrants: str
    tries: str
    extra: str
    cohorts: str
    sizes: str
    state: str
    tiers: str


class _SubmitWindowKeys(NamedTuple):
    board: str
    meta: str
    members: str


class _SubmitItemKeys(NamedTuple):
    spam: str
    idem: str
    idem_index: str


class _SubmitArgs(NamedTuple):
    mode: str
    now_ms: int
    spam_limit: int
    spam_window: int
    idem_ttl: int
    windows: int
    grace: int
    ledger_cap: int
    ties: str
    competing: int
    entry: str
    max_entrants: int
    closes_ms: int | str
    max_attempts: int
    cohort_size: int
    fill: str
    formed_ms: int | str
    tier_slugs: str
    start_tier: str


class _SubmitWindowArgs(NamedTuple):
    name: str
    period_id: str
    ends_ms: int | str


class _SubmitItemArgs(NamedTuple):
    player: str
    value: int
    sub: int
    spam_member: str
    fingerprint: str
    score: int
    subscore: int | str
    name: str
    metadata: str


SUBMIT_SCORE.bind(
    keys=_SubmitKeys,
    args=_SubmitArgs,
    key_groups=(_SubmitWindowKeys, _SubmitItemKeys),
    arg_groups=(_SubmitWindowArgs, _SubmitItemArgs),
)


@dataclass(frozen=True)
class BoardRules:
    """What a board script needs to know of its board, and how its replies read: sort bases
    and subscores are oriented (ascending is better), ``sign`` and ``sub_sign`` turn them back."""

    ref: str
    mode: str
    ties: str
    sign: int = 1  # -1 when a higher score is better
    sub_sign: int = 1  # -1 when a higher subscore is better


@dataclass(frozen=True)
class CohortGate:
    """Where a competing period's new entrants go (core/lua/prelude/cohorts.lua)."""

    size: int
    first_come: bool
    formed_ms: int | None  # balanced: when the split is due; None for first come
    tier_slugs: tuple[str, ...] = ()  # a league's tiers, bottom first, when cohorts are by tier
    start_tier: str = ""

    @property
    def args(self) -> tuple[int, str, int | str, str, str]:
        """(cohort_size, fill, formed_ms, tier_slugs, start_tier) as the scripts take them."""
        formed: int | str = "" if self.formed_ms is None else self.formed_ms
        fill = "first_come" if self.first_come else "balanced"
        return self.size, fill, formed, " ".join(self.tier_slugs), self.start_tier


NO_COHORTS_ARGS = (0, "first_come", "", "", "")


@dataclass(frozen=True)
class EntryGate:
    """A competing board's entry rules for its competing window's current period (issue 22)."""

    window: str
    entry: str  # 'open' | 'join'
    max_entrants: int | None
    closes_ms: int | None  # when entry closes; None while the period lasts
    max_attempts: int | None
    cohorts: CohortGate | None = None


@dataclass(frozen=True)
class WindowPeriod:
    """One window's current period, as the write scripts take it."""

    kind: str
    id: str
    ends_ms: int | None


class SubmitItem(NamedTuple):
    """One item of a submit_score call. ``value`` and ``sub`` are oriented (negated when
    higher is better); ``score`` and ``subscore`` are as submitted, for the ledger."""

    player_id: str
    value: int
    sub: int
    spam_member: str
    score: int
    subscore: int | None
    display_name: str
    metadata: str
    # (API key prefix, Idempotency-Key, item index or None, fingerprint), or None
    idempotency: tuple[str, str, int | None, str] | None = None


@dataclass(frozen=True)
class SubmitLimits:
    now_ms: int
    spam_limit: int
    spam_window_ms: int
    idem_ttl_ms: int
    grace_ms: int
    ledger_cap: int


def write_keys(ref: str) -> WriteKeys:
    """The board's :class:`WriteKeys`."""
    return WriteKeys(
        keys.board_hidden(ref),
        keys.boards_index(ref),
        keys.dirty(ref),
        keys.close_jobs(ref),
        keys.ledger(ref),
        keys.tie_clock(ref),
    )


def window_keys(ref: str, period: WindowPeriod) -> tuple[str, str, str]:
    """(board, meta, members) of one window's period."""
    board_key = keys.board(ref, period.kind, period.id)
    return board_key, keys.entry_meta(board_key), keys.entry_members(board_key)


def entry_keys(ref: str, board_key: str) -> list[str]:
    """A competing period's entry keys, as the write scripts take them: entrants, tries, extra,
    cohorts, sizes, state, and the board's league tiers."""
    return [
        keys.entry_entrants(board_key),
        keys.entry_tries(board_key),
        keys.entry_extra(board_key),
        keys.entry_cohorts(board_key),
        keys.entry_cohort_sizes(board_key),
        keys.entry_cohort_state(board_key),
        keys.league_tiers(ref),
    ]


def _gate_parts(ref: str, gate: EntryGate | None, periods: Sequence[WindowPeriod]) -> tuple[list[str], list[Any]]:
    """The entry KEYS (entrants .. tiers) and ARGV (competing .. start_tier) of a call."""
    competing = next((i for i, p in enumerate(periods, 1) if gate is not None and p.kind == gate.window), 0)
    board_key = keys.board(ref, periods[max(competing, 1) - 1].kind, periods[max(competing, 1) - 1].id)
    if gate is None or not competing:
        return entry_keys(ref, board_key), [0, "open", 0, "", 0, *NO_COHORTS_ARGS]
    closes: int | str = "" if gate.closes_ms is None else gate.closes_ms
    cohorts = gate.cohorts.args if gate.cohorts else NO_COHORTS_ARGS
    return entry_keys(ref, board_key), [
        competing,
        gate.entry,
        gate.max_entrants or 0,
        closes,
        gate.max_attempts or 0,
        *cohorts,
    ]


def submit_score_call(
    *,
    board: BoardRules,
    limits: SubmitLimits,
    periods: Sequence[WindowPeriod],
    items: Sequence[SubmitItem],
    gate: EntryGate | None = None,
) -> Call:
    """KEYS and ARGV of one submit_score.lua call (one board, one chunk of items)."""
    ref = board.ref
    placeholder = keys.idempotency(ref, "-", "-")
    item_keys = []
    item_args = []
    for item in items:
        idem = item.idempotency
        item_keys.append(
            _SubmitItemKeys(
                keys.player_spam(ref, item.player_id),
                keys.idempotency(ref, idem[0], idem[1], idem[2]) if idem else placeholder,
                keys.player_idempotency(ref, item.player_id),
            )
        )
        item_args.append(
            _SubmitItemArgs(
                item.player_id,
                item.value,
                item.sub,
                item.spam_member,
                idem[3] if idem else "",
                item.score,
                "" if item.subscore is None else item.subscore,
                item.display_name,
                item.metadata,
            )
        )
    entry_keys, entry_args = _gate_parts(ref, gate, periods)
    fixed_args = _SubmitArgs(
        board.mode,
        limits.now_ms,
        limits.spam_limit,
        limits.spam_window_ms,
        limits.idem_ttl_ms,
        len(periods),
        limits.grace_ms,
        limits.ledger_cap,
        board.ties,
        *entry_args,
    )
    return Call(
        *SUBMIT_SCORE.flatten(
            _SubmitKeys(*write_keys(ref), *entry_keys),
            fixed_args,
            key_groups=([_SubmitWindowKeys(*window_keys(ref, p)) for p in periods], item_keys),
            arg_groups=(
                [_SubmitWindowArgs(p.kind, p.id, "" if p.ends_ms is None else p.ends_ms) for p in periods],
                item_args,
            ),
        )
    )


class Refusal(enum.StrEnum):
    """Why a board script refused an item; anything else in a reply is a bug (ScriptReplyError)."""

    HIDDEN = "hidden"
    PLAYER_RATE_LIMITED = "player_rate_limited"
    OVERFLOW = "overflow"
    IDEMPOTENCY_MISMATCH = "idempotency_mismatch"
    LEDGER_FULL = "ledger_full"
    # A competing board's entry (issue 22); the detail holds the numbers, then the period id.
    NOT_ENTERED = "not_entered"
    ENTRY_CLOSED = "entry_closed"
    BOARD_FULL = "board_full"
    ATTEMPTS_EXHAUSTED = "attempts_exhausted"


class Refused(NamedTuple):
    code: Refusal
    # Retry-after ms (player_rate_limited), the window (overflow); for entry, space-separated:
    # the period id (not_entered), closes ms (entry_closed), max (board_full), used and allowed
    # (attempts_exhausted), each then the period id; else ''.
    detail: str


class PeriodStanding(NamedTuple):
    """An entry's standing in one window's current period, as a write left it."""

    period: str
    period_id: str
    score: int
    rank: int
    subscore: int | None = None  # only on boards with ties 'subscore'


class Applied(NamedTuple):
    replayed: bool
    periods: dict[str, PeriodStanding]  # by window


def refused(raw: Sequence[Any]) -> Refused:
    """An ``{'err', code, detail}`` reply."""
    try:
        return Refused(Refusal(raw[1]), str(raw[2]))
    except (ValueError, IndexError):
        raise ScriptReplyError(f"unknown refusal {list(raw)!r}") from None


def _standings(board: BoardRules, reply: Sequence[Any]) -> dict[str, PeriodStanding]:
    """The (window, period id, sort base, rank, oriented subscore) groups of a reply."""
    sign = board.sign
    if board.ties != "subscore":  # the common case, without a subscore to turn back
        return {
            reply[i]: PeriodStanding(reply[i], reply[i + 1], sign * int(reply[i + 2]), int(reply[i + 3]))
            for i in range(2, len(reply), 5)
        }
    sub_sign = board.sub_sign
    return {
        reply[i]: PeriodStanding(
            reply[i], reply[i + 1], sign * int(reply[i + 2]), int(reply[i + 3]), sub_sign * int(reply[i + 4])
        )
        for i in range(2, len(reply), 5)
    }


def submit_replies(board: BoardRules, raw: Sequence[Any]) -> list[Applied | Refused]:
    """The per-item replies of one submit_score.lua call (or score_correct.lua's one)."""
    replies: list[Applied | Refused] = []
    for reply in raw:
        if reply[0] == "ok" and (len(reply) - 2) % 5 == 0:
            replies.append(Applied(bool(reply[1]), _standings(board, reply)))
        elif reply[0] == "err":
            replies.append(refused(reply))
        else:
            raise ScriptReplyError(f"submit_score replied {list(reply)!r}")
    return replies


# --------------------------------------------------------------------------- board_window


class _WindowKeys(NamedTuple):
    board: str
    meta: str
    members: str
    version: str | None = None


class _WindowArgs(NamedTuple):
    ties: str
    view: str
    at: int | str
    size: int
    version: str


BOARD_WINDOW.bind(keys=_WindowKeys, args=_WindowArgs)


@dataclass(frozen=True)
class WindowRead:
    """A window of a board, by column (one list per field, row i at index i in each): a read
    of thousands of rows builds no object per row here."""

    total: int
    offset: int
    found: bool
    version: int
    player_ids: list[str]
    bases: list[int]  # sort bases (oriented)
    ranks: list[int]
    metadata: list[str]  # JSON text, '' for none
    subs: list[int] | None  # oriented subscores (ties 'subscore'), else None


async def board_window(
    client: Redis,
    *,
    board_key: str,
    ties: str,
    view: Literal["page", "around"],
    at: int | str,
    size: int,
    version: Literal["next", "current"] | None = None,
) -> WindowRead:
    """A page (``at`` = offset, ``size`` = limit) or the window around a player (``at`` =
    player_id, ``size`` = radius) of one period board, with ranks and metadata; with
    ``version``, the board's live version counter too ('next' takes a new one)."""
    call = BOARD_WINDOW.flatten(
        _WindowKeys(
            board_key,
            keys.entry_meta(board_key),
            keys.entry_members(board_key),
            keys.board_version(board_key) if version else None,
        ),
        _WindowArgs(ties, view, at, size, version or ""),
    )
    raw = await BOARD_WINDOW(client, *call)
    return _window_read(raw, subscores=ties == "subscore")


def _window_read(raw: Any, *, subscores: bool) -> WindowRead:
    if not isinstance(raw, list) or len(raw) != 9 or not all(isinstance(part, list) for part in raw[5:]):
        raise ScriptReplyError(f"board_window replied {raw!r}")
    total, offset, found, version, n, pairs, rank_fixes, subs, metadata_pairs = raw
    offset, n = int(offset), int(n)
    if len(pairs) != 2 * n or len(rank_fixes) % 2 or len(metadata_pairs) % 2 or len(subs) != (n if subscores else 0):
        raise ScriptReplyError(f"board_window replied {len(pairs)} / {len(subs)} values for {n} rows")
    ranks = list(range(offset + 1, offset + n + 1))
    for i in range(0, len(rank_fixes), 2):
        ranks[int(rank_fixes[i]) - 1] = int(rank_fixes[i + 1])
    metadata = [""] * n
    for i in range(0, len(metadata_pairs), 2):
        metadata[int(metadata_pairs[i]) - 1] = metadata_pairs[i + 1]
    return WindowRead(
        total=int(total),
        offset=offset,
        found=bool(found),
        version=int(version),
        player_ids=pairs[0::2],
        bases=[int(b) for b in pairs[1::2]],
        ranks=ranks,
        metadata=metadata,
        subs=[int(s) for s in subs] if subscores else None,
    )


# --------------------------------------------------------------------------- players_rank


class _RankKeys(NamedTuple):
    board: str
    meta: str
    members: str


class _RankArgs(NamedTuple):
    ties: str


class _RankPlayer(NamedTuple):
    player_id: str


PLAYERS_RANK.bind(keys=_RankKeys, args=_RankArgs, arg_groups=(_RankPlayer,))


@dataclass(frozen=True)
class Ranked:
    player_id: str
    base: int
    rank: int
    equal: int  # entries sharing this rank (1 unless ties 'shared')
    metadata: str
    sub: int


async def players_rank(
    client: Redis, *, board_key: str, ties: str, player_ids: Sequence[str]
) -> tuple[int, list[Ranked]]:
    """The board's size, and the standings of those of ``player_ids`` who are on it, in the
    order asked."""
    call = PLAYERS_RANK.flatten(
        _RankKeys(board_key, keys.entry_meta(board_key), keys.entry_members(board_key)),
        _RankArgs(ties),
        arg_groups=([_RankPlayer(p) for p in player_ids],),
    )
    raw = await PLAYERS_RANK(client, *call)
    if (len(raw) - 1) % 6:
        raise ScriptReplyError(f"players_rank replied {len(raw)} values")
    found = [
        Ranked(str(raw[i]), int(raw[i + 1]), int(raw[i + 2]), int(raw[i + 3]), str(raw[i + 4]), int(raw[i + 5]))
        for i in range(1, len(raw), 6)
        if raw[i + 1] != ""
    ]
    return int(raw[0]), found


# --------------------------------------------------------------------------- set_player_hidden


class _HiddenKeys(NamedTuple):
    hidden: str
    boards_index: str
    dirty: str


class _HiddenBoardKeys(NamedTuple):
    board: str
    stash: str
    members: str


class _HiddenArgs(NamedTuple):
    player: str
    action: str
    now_ms: int


SET_PLAYER_HIDDEN.bind(keys=_HiddenKeys, args=_HiddenArgs, key_groups=(_HiddenBoardKeys,))


async def set_player_hidden(
    client: Redis, *, ref: str, board_keys: Sequence[str], player_id: str, hide: bool, now_ms: int
) -> int | None:
    """Move the player's entries of ``board_keys`` (every live board of the index) to their
    stashes (or back); how many boards changed, or None when the index lists a board not
    passed (a period began meanwhile: read the index and call again)."""
    call = SET_PLAYER_HIDDEN.flatten(
        _HiddenKeys(keys.board_hidden(ref), keys.boards_index(ref), keys.dirty(ref)),
        _HiddenArgs(player_id, "hide" if hide else "unhide", now_ms),
        key_groups=([_HiddenBoardKeys(b, keys.hidden_stash(b), keys.entry_members(b)) for b in board_keys],),
    )
    status, changed = await SET_PLAYER_HIDDEN(client, *call)
    if status == "retry":
        return None
    if status != "ok":
        raise ScriptReplyError(f"set_player_hidden replied {status!r}")
    return int(changed)


# --------------------------------------------------------------------------- board_upgrade


BOARD_UPGRADE = load(__file__, "board_upgrade", prelude=ENTRIES)


class _UpgradeKeys(NamedTuple):
    board: str
    stash: str
    members: str
    tie_clock: str


class _UpgradeArgs(NamedTuple):
    bits: int
    start_ms: int


BOARD_UPGRADE.bind(keys=_UpgradeKeys, args=_UpgradeArgs)


async def board_upgrade(client: Redis, *, ref: str, board_key: str, bits: int, start_ms: int) -> int:
    """Convert one 'earliest' period board from the retired key format; how many entries."""
    call = BOARD_UPGRADE.flatten(
        _UpgradeKeys(board_key, keys.hidden_stash(board_key), keys.entry_members(board_key), keys.tie_clock(ref)),
        _UpgradeArgs(bits, start_ms),
    )
    return int(await BOARD_UPGRADE(client, *call))
