"""A plain-Python reference of one leaderboard with its windows, its tie rule and entry
metadata: what the API must answer, computed the simplest way (tests/games/test_boards_model.py).

It models one current period per window (the model test keeps the clock inside it), so each
window's entries differ only by when they started; a window is a dict player -> entry.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Entry:
    score: int
    reached_ms: int  # when the entry got this score (ties 'earliest' order by it)
    metadata: dict[str, Any] | None


@dataclass
class ReferenceBoard:
    slug: str
    mode: str  # increment | best | latest
    order: str  # desc | asc
    ties: str  # shared | earliest
    windows: tuple[str, ...]
    entries: dict[str, dict[str, Entry]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for window in self.windows:
            self.entries.setdefault(window, {})

    def _better(self, a: int, b: int) -> bool:
        return a > b if self.order == "desc" else a < b

    def submit(self, player_id: str, score: int, metadata: dict[str, Any] | None, now_ms: int) -> None:
        for window in self.windows:
            board = self.entries[window]
            old = board.get(player_id)
            if old is None:
                board[player_id] = Entry(score, now_ms, metadata)
                continue
            if self.mode == "best":
                if self._better(score, old.score):
                    board[player_id] = Entry(score, now_ms, metadata)
                continue
            new = old.score + score if self.mode == "increment" else score
            # The same score again keeps the moment it was first reached; metadata is the latest.
            reached = old.reached_ms if new == old.score else now_ms
            board[player_id] = Entry(new, reached, metadata)

    def _key(self, entry: Entry) -> tuple[int, int]:
        base = -entry.score if self.order == "desc" else entry.score
        return (base, entry.reached_ms if self.ties == "earliest" else 0)

    def rank(self, window: str, player_id: str) -> int:
        board = self.entries[window]
        mine = self._key(board[player_id])
        return 1 + sum(1 for other in board.values() if self._key(other) < mine)

    def ranked(self, window: str) -> list[dict[str, Any]]:
        """The window's entries as the API lists them, best first (equal keys by player_id bytes)."""
        board = self.entries[window]
        ordered = sorted(board, key=lambda pid: (self._key(board[pid]), pid.encode()))
        return [
            {
                "rank": self.rank(window, pid),
                "player_id": pid,
                "display_name": pid,
                "score": board[pid].score,
                "metadata": board[pid].metadata,
            }
            for pid in ordered
        ]
