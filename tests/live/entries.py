"""What live messages carry of a board's entries, computed from the selectors (the tests'
expectation of live/events.py)."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from typing import Any

from games import selectors


def live_rows(board: selectors.Board, online: Collection[str]) -> list[dict[str, Any]]:
    """Each entry as a standings message shows it: its score formatted, whether its player is
    online, and ``subscore`` only on boards that have them."""
    rows = []
    for e in board.entries:
        row = {**dataclasses.asdict(e), "shown": f"{e.score:,}", "online": e.player_id in online}
        if row["subscore"] is None:
            del row["subscore"]
        rows.append(row)
    return rows
