"""A small, obviously-correct leaderboard to test the real one against.

It models what the API promises, not how Redis does it: plain dicts of
scores, a full sort on every read, and windows cut from that sorted list.
Only the documented semantics live here (see games/selectors.py and
games/lua/submit_score.lua):

- modes: increment adds, best keeps the better value, latest overwrites;
  order desc means higher is better, asc lower is better;
- competition ranks ("1224"); among equal scores, player_id in byte order;
- an increment that would take any board past |2^53-1| is refused whole;
- the first submission without a display name stores the player_id, a later
  name replaces the stored one, and no name (or '') keeps it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

MAX_SAFE_SCORE = 2**53 - 1
PERIODS: tuple[str, ...] = ("daily", "weekly", "monthly", "all-time")
PLAYER_ID_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
MAX_DISPLAY_NAME_CHARS = 64
ITEM_FIELDS = frozenset({"player_id", "score", "display_name"})
ITEM_REQUIRED = frozenset({"player_id", "score"})


# Period ids at the calendar's edges: computing their boundaries once overflowed (a 500).
CALENDAR_EDGE_IDS: tuple[str, ...] = (
    "daily/0001-01-01",
    "daily/9999-12-31",
    "weekly/0001-W01",
    "weekly/9999-W52",
    "monthly/0001-01",
    "monthly/9999-12",
)


class Rejected(Exception):
    """A submission the system must refuse, leaving every board and name untouched."""

    def __init__(self, code: str, field: str | None) -> None:
        super().__init__(code)
        self.code = code
        self.field = field


@dataclass(frozen=True)
class Entry:
    rank: int
    player_id: str
    display_name: str
    score: int

    def as_json(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "player_id": self.player_id,
            "display_name": self.display_name,
            "score": self.score,
            "metadata": None,
        }


@dataclass(frozen=True)
class Standing:
    player_id: str
    display_name: str
    rank: int
    score: int
    total: int
    percentile: float

    def as_json(self) -> dict[str, Any]:
        return {
            "player_id": self.player_id,
            "display_name": self.display_name,
            "rank": self.rank,
            "score": self.score,
            "total": self.total,
            "percentile": self.percentile,
            "metadata": None,
        }


@dataclass(frozen=True)
class Submitted:
    player_id: str
    display_name: str
    periods: dict[str, tuple[int, int]]  # period -> (score, rank)


@dataclass
class ReferenceLeaderboard:
    mode: str  # increment | best | latest
    order: str  # desc | asc
    periods: tuple[str, ...] = PERIODS
    scores: dict[str, dict[str, int]] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        assert self.mode in ("increment", "best", "latest"), self.mode
        assert self.order in ("desc", "asc"), self.order
        for period in self.periods:
            self.scores.setdefault(period, {})

    # ------------------------------------------------------------------ writes

    def _better(self, a: int, b: int) -> bool:
        return a > b if self.order == "desc" else a < b

    def _validate(self, player_id: Any, score: Any, display_name: Any) -> None:
        if not isinstance(player_id, str) or not PLAYER_ID_RE.match(player_id):
            raise Rejected("invalid", "player_id")
        if isinstance(score, bool) or not isinstance(score, int) or abs(score) > MAX_SAFE_SCORE:
            raise Rejected("invalid", "score")
        if display_name is not None and (
            not isinstance(display_name, str) or len(display_name) > MAX_DISPLAY_NAME_CHARS
        ):
            raise Rejected("invalid", "display_name")

    def submit_item(self, item: object) -> Submitted:
        """Apply one raw JSON item of a submission (as POSTed), validating its shape first."""
        if not isinstance(item, Mapping) or not set(item) >= ITEM_REQUIRED or not set(item) <= ITEM_FIELDS:
            raise Rejected("invalid", None)
        return self.submit(item["player_id"], item["score"], item.get("display_name"))

    def submit(self, player_id: Any, score: Any, display_name: Any = None) -> Submitted:
        """Apply one submission to every board, or raise Rejected and change nothing."""
        self._validate(player_id, score, display_name)
        new: dict[str, int] = {}
        for period in self.periods:
            board = self.scores[period]
            old = board.get(player_id)
            if old is None or self.mode == "latest":
                value = score
            elif self.mode == "increment":
                value = old + score
            else:
                value = score if self._better(score, old) else old
            if abs(value) > MAX_SAFE_SCORE:
                raise Rejected("score_overflow", "score")
            new[period] = value
        if display_name:
            self.names[player_id] = display_name
        else:
            self.names.setdefault(player_id, player_id)
        for period, value in new.items():
            self.scores[period][player_id] = value
        return Submitted(
            player_id=player_id,
            display_name=self.names[player_id],
            periods={p: (new[p], self._rank(p, new[p])) for p in self.periods},
        )

    # ------------------------------------------------------------------- reads

    def _rank(self, period: str, score: int) -> int:
        return 1 + sum(1 for other in self.scores[period].values() if self._better(other, score))

    def ranked(self, period: str) -> list[Entry]:
        """The whole board, best first; equal scores by player_id bytes."""
        board = self.scores[period]
        sign = -1 if self.order == "desc" else 1
        ordered = sorted(board, key=lambda pid: (sign * board[pid], pid.encode()))
        return [Entry(self._rank(period, board[pid]), pid, self.names[pid], board[pid]) for pid in ordered]

    def total(self, period: str) -> int:
        return len(self.scores[period])

    def page(self, period: str, offset: int, limit: int) -> list[Entry]:
        return self.ranked(period)[offset : offset + limit]

    def standing(self, period: str, player_id: str) -> Standing | None:
        board = self.scores[period]
        if player_id not in board:
            return None
        score = board[player_id]
        worse = sum(1 for other in board.values() if self._better(score, other))
        return Standing(
            player_id=player_id,
            display_name=self.names[player_id],
            rank=self._rank(period, score),
            score=score,
            total=len(board),
            percentile=round(100 * worse / len(board), 2),
        )

    def around(self, period: str, player_id: str, radius: int) -> list[Entry] | None:
        """A full window of 2*radius+1 entries containing the player, slid to fit the board."""
        ranked = self.ranked(period)
        positions = [e.player_id for e in ranked]
        if player_id not in positions:
            return None
        size = 2 * radius + 1
        if len(ranked) <= size:
            return ranked
        start = min(max(positions.index(player_id) - radius, 0), len(ranked) - size)
        return ranked[start : start + size]

    def friends(self, period: str, ids: Iterable[str]) -> tuple[list[Entry], list[str]]:
        """(entries of the present ids by rank then player_id bytes, absent ids in asked order)."""
        unique = list(dict.fromkeys(i for i in ids if i))
        by_id = {e.player_id: e for e in self.ranked(period)}
        found = sorted((by_id[i] for i in unique if i in by_id), key=lambda e: (e.rank, e.player_id.encode()))
        return found, [i for i in unique if i not in by_id]


def submitted_json(result: Submitted, period_ids: dict[str, str]) -> dict[str, Any]:
    """The body POST .../scores should answer for ``result``."""
    return {
        "player_id": result.player_id,
        "display_name": result.display_name,
        "leaderboard": "main",
        "periods": {
            p: {"period_id": period_ids[p], "score": score, "rank": rank} for p, (score, rank) in result.periods.items()
        },
        "metadata": None,
    }


def entries_json(entries: Sequence[Entry]) -> list[dict[str, Any]]:
    return [e.as_json() for e in entries]
