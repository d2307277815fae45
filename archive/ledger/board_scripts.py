"""Typed wrappers of the archive's scripts that write board entries (archive/lua/):
score_correct (an admin's correction) and board_swap (the rebuild's swap). Both key and rank
entries with the entries prelude, like the submit script."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from redis.asyncio import Redis

from core import keys
from core.lua import ScriptReplyError, load
from games.scripts import board as board_scripts

SCORE_CORRECT = load(__file__, "score_correct", prelude=board_scripts.ENTRIES)
BOARD_SWAP = load(__file__, "board_swap", prelude=board_scripts.ENTRIES)


# --------------------------------------------------------------------------- score_correct


class _CorrectWindowKeys(NamedTuple):
    board: str
    members: str


class _CorrectArgs(NamedTuple):
    rule: str
    now_ms: int
    windows: int
    grace: int
    ties: str
    player: str
    value: int
    sub: int | str
    mode: str
    score: int
    subscore: int | str
    reason: str


class _CorrectWindowArgs(NamedTuple):
    name: str
    period_id: str
    ends_ms: int | str


SCORE_CORRECT.bind(
    keys=board_scripts.WriteKeys, args=_CorrectArgs, key_groups=(_CorrectWindowKeys,), arg_groups=(_CorrectWindowArgs,)
)


@dataclass(frozen=True)
class Correction:
    player_id: str
    value: int  # oriented: the sort-base delta (increment) or the sort base
    sub: int | None  # oriented subscore delta or value; None keeps the stored one
    score: int  # as given, for the ledger
    subscore: int | None  # as given, for the ledger
    reason: str


async def score_correct(
    client: Redis,
    *,
    board: board_scripts.BoardRules,
    now_ms: int,
    grace_ms: int,
    periods: Sequence[board_scripts.WindowPeriod],
    correction: Correction,
) -> board_scripts.Applied | board_scripts.Refused:
    """Apply a correction to the board's current periods and its ledger, atomically."""
    rule = "increment" if board.mode == "increment" else "latest"
    call = SCORE_CORRECT.flatten(
        board_scripts.write_keys(board.ref),
        _CorrectArgs(
            rule,
            now_ms,
            len(periods),
            grace_ms,
            board.ties,
            correction.player_id,
            correction.value,
            "" if correction.sub is None else correction.sub,
            board.mode,
            correction.score,
            "" if correction.subscore is None else correction.subscore,
            correction.reason,
        ),
        key_groups=([_CorrectWindowKeys(*board_scripts.window_keys(board.ref, p)[::2]) for p in periods],),
        arg_groups=([_CorrectWindowArgs(p.kind, p.id, "" if p.ends_ms is None else p.ends_ms) for p in periods],),
    )
    raw = await SCORE_CORRECT(client, *call)
    if raw[0] == "err":
        return board_scripts.refused(raw)
    (applied,) = board_scripts.submit_replies(board, [["ok", 0, *raw[1:]]])
    if not isinstance(applied, board_scripts.Applied):
        raise ScriptReplyError(f"score_correct replied {raw!r}")
    return applied


# --------------------------------------------------------------------------- board_swap


class _SwapKeys(NamedTuple):
    hidden: str
    boards_index: str
    dirty: str
    close_jobs: str
    close_claims: str
    close_dead: str
    ledger: str
    tie_clock: str


class _SwapBoardKeys(NamedTuple):
    board: str
    rebuilt: str
    members: str
    rebuilt_members: str
    stash: str


class _SwapArgs(NamedTuple):
    now_ms: int
    cursor_ms: int
    cursor_seq: int
    clock: str
    hidden_count: int


class _SwapHidden(NamedTuple):
    player_id: str


class _SwapBoardArgs(NamedTuple):
    job: str
    due_ms: int | str


BOARD_SWAP.bind(keys=_SwapKeys, args=_SwapArgs, key_groups=(_SwapBoardKeys,), arg_groups=(_SwapHidden, _SwapBoardArgs))


@dataclass(frozen=True)
class SwapBoard:
    board_key: str
    rebuilt_key: str
    job: str  # its close job ('<period>:<period id>'), '' for one that never ends
    due_ms: int | None


@dataclass(frozen=True)
class Swapped:
    boards: int
    stashed: int


@dataclass(frozen=True)
class SwapRefused:
    retry: bool  # the ledger moved: replay its new entries first
    missing: str  # a board whose temporary key is gone ('' unless so)


async def board_swap(
    client: Redis,
    *,
    ref: str,
    now_ms: int,
    cursor: tuple[int, int],
    clock: str,
    hidden: Sequence[str],
    boards: Sequence[SwapBoard],
) -> Swapped | SwapRefused:
    """Put rebuilt boards in place of the live ones, all at once (refused while the ledger
    holds an entry past ``cursor``, or a temporary key is gone)."""
    call = BOARD_SWAP.flatten(
        _SwapKeys(
            keys.board_hidden(ref),
            keys.boards_index(ref),
            keys.dirty(ref),
            keys.close_jobs(ref),
            keys.close_claims(ref),
            keys.close_dead(ref),
            keys.ledger(ref),
            keys.tie_clock(ref),
        ),
        _SwapArgs(now_ms, cursor[0], cursor[1], clock, len(hidden)),
        key_groups=(
            [
                _SwapBoardKeys(
                    b.board_key,
                    b.rebuilt_key,
                    keys.entry_members(b.board_key),
                    keys.entry_members(b.rebuilt_key),
                    keys.hidden_stash(b.board_key),
                )
                for b in boards
            ],
        ),
        arg_groups=(
            [_SwapHidden(p) for p in hidden],
            [_SwapBoardArgs(b.job, "" if b.due_ms is None else b.due_ms) for b in boards],
        ),
    )
    raw: list[Any] = await BOARD_SWAP(client, *call)
    if raw[0] == "ok":
        return Swapped(int(raw[1]), int(raw[2]))
    if raw[0] == "retry":
        return SwapRefused(True, "")
    if raw[0] == "missing":
        return SwapRefused(False, str(raw[1]))
    raise ScriptReplyError(f"board_swap replied {raw!r}")
