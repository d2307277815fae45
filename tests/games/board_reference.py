"""A plain-Python reference of one leaderboard with its windows, its tie rule and entry
metadata: what the API must answer, computed the simplest way (tests/games/test_boards_model.py).

It models one current period per window (the model test keeps the clock inside it), so each
window's entries differ only by when they started; a window is a dict player -> entry.

"When an entry reached its score" is modelled as the order in which submissions were applied
to the board (a counter): that is what the board's clock promises, to the millisecond and
within one (a batch).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MAX_EXACT = 2**53 - 1


@dataclass
class Entry:
    score: int
    subscore: int
    reached: int  # the board's application count when the entry got this (score, subscore)
    metadata: dict[str, Any] | None


class Refused(Exception):
    """The API must refuse this submission (score_overflow) and change nothing."""


@dataclass
class ReferenceBoard:
    slug: str
    mode: str  # increment | best | latest
    order: str  # desc | asc
    ties: str  # shared | earliest | subscore
    windows: tuple[str, ...]
    subscore_order: str = "desc"
    entries: dict[str, dict[str, Entry]] = field(default_factory=dict)
    applied: int = 0

    def __post_init__(self) -> None:
        for window in self.windows:
            self.entries.setdefault(window, {})

    def _pair(self, score: int, subscore: int) -> tuple[int, int]:
        """(score, subscore) oriented so that smaller is better."""
        base = -score if self.order == "desc" else score
        sub = -subscore if self.subscore_order == "desc" else subscore
        return base, sub if self.ties == "subscore" else 0

    def submit(self, player_id: str, score: int, subscore: int | None, metadata: dict[str, Any] | None) -> None:
        """Apply one submission to every window, or raise Refused (nothing changes)."""
        sub = subscore or 0
        if self.mode == "increment":
            for window in self.windows:
                old = self.entries[window].get(player_id)
                total, total_sub = (old.score, old.subscore) if old else (0, 0)
                if abs(total + score) > MAX_EXACT or abs(total_sub + sub) > MAX_EXACT:
                    raise Refused(window)
        self.applied += 1
        for window in self.windows:
            board = self.entries[window]
            old = board.get(player_id)
            if old is None:
                board[player_id] = Entry(score, sub, self.applied, metadata)
                continue
            if self.mode == "best":
                if self._pair(score, sub) < self._pair(old.score, old.subscore):
                    board[player_id] = Entry(score, sub, self.applied, metadata)
                continue
            if self.mode == "increment":
                new, new_sub = old.score + score, old.subscore + sub
            else:
                new, new_sub = score, sub
            # The same pair again keeps the moment it was first reached; metadata is the latest.
            same = self._pair(new, new_sub) == self._pair(old.score, old.subscore)
            board[player_id] = Entry(new, new_sub, old.reached if same else self.applied, metadata)

    def _key(self, entry: Entry) -> tuple[int, int, int]:
        base, sub = self._pair(entry.score, entry.subscore)
        return (base, sub, entry.reached if self.ties != "shared" else 0)

    def rank(self, window: str, player_id: str) -> int:
        board = self.entries[window]
        mine = self._key(board[player_id])
        return 1 + sum(1 for other in board.values() if self._key(other) < mine)

    def subscore_of(self, window: str, player_id: str) -> int | None:
        return self.entries[window][player_id].subscore if self.ties == "subscore" else None

    def ranked(self, window: str) -> list[dict[str, Any]]:
        """The window's entries as the API lists them, best first (equal keys by player_id bytes)."""
        board = self.entries[window]
        ordered = sorted(board, key=lambda pid: (self._key(board[pid]), pid.encode()))
        rows = []
        for pid in ordered:
            row: dict[str, Any] = {
                "rank": self.rank(window, pid),
                "player_id": pid,
                "display_name": pid,
                "score": board[pid].score,
            }
            if self.ties == "subscore":
                row["subscore"] = board[pid].subscore
            row["metadata"] = board[pid].metadata
            rows.append(row)
        return rows
