"""The one-time upgrade of Redis data written by earlier versions (``manage.py upgrade_boards``,
run after ``migrate`` by ``make run`` and the image's ``migrate`` role).

Boards with ties 'earliest' used to keep ``base * 2^bits + ms since the period started`` as
each entry's score, which held only bounded scores; entries are now keyed by the entries
prelude (core/lua/prelude/entries.lua). Each period board Redis keeps (and its hidden stash)
is converted once, atomically, by games/lua/board_upgrade.lua; converting twice changes
nothing.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import cast
from zoneinfo import ZoneInfo

from core import board_rules, clock, keys
from core.config import BoardConfig
from core.models import Leaderboard
from core.redis import get_redis, run_sync

from .. import periods
from ..scripts import board as board_scripts

# The retired format's longest period of each fixed window (ms), DST's extra hour included.
_HOUR_MS = 3_600_000
_RETIRED_LONGEST_MS = {
    periods.DAILY: 25 * _HOUR_MS,
    periods.WEEKLY: (7 * 24 + 1) * _HOUR_MS,
    periods.MONTHLY: (31 * 24 + 1) * _HOUR_MS,
}


def _retired_bits(board: BoardConfig, window: str) -> int | None:
    """The low bits the retired format gave a window's keys (None: it had no such window)."""
    if window in _RETIRED_LONGEST_MS:
        longest = _RETIRED_LONGEST_MS[window]
    elif window == periods.CUSTOM and board.cron:
        longest = board_rules.cron_gaps_ms(board.cron, ZoneInfo(board.timezone))[1]
    elif board.starts_at is not None and board.ends_at is not None:
        longest = int((board.ends_at - board.starts_at).total_seconds() * 1000)
    else:
        return None
    return max(1, int(longest).bit_length())


@dataclass
class UpgradeReport:
    boards: int = 0  # period boards converted
    entries: int = 0


def _period_start(board: BoardConfig, window: str, period_id: str) -> dt.datetime | None:
    try:
        return periods.window_parse(board, window, period_id).starts_at
    except periods.InvalidPeriod:
        return None


def boards_upgrade() -> UpgradeReport:
    """Convert every period board of every 'earliest' leaderboard still in the retired format."""
    report = UpgradeReport()
    for model in Leaderboard.objects.filter(ties=Leaderboard.Ties.EARLIEST).select_related("game"):
        board = BoardConfig.from_model(model, model.game)
        board_keys = cast(
            "list[str]", run_sync(lambda ref=board.ref: get_redis().zrange(keys.boards_index(ref), 0, -1))
        )
        for board_key in board_keys:
            parsed = keys.parse_board(board_key)
            if parsed is None:
                continue
            _, window, period_id = parsed
            bits = _retired_bits(board, window)
            starts = _period_start(board, window, period_id)
            if bits is None or starts is None:
                continue
            converted = run_sync(
                lambda ref=board.ref, key=board_key, bits=bits, starts=starts: board_scripts.board_upgrade(
                    get_redis(), ref=ref, board_key=key, bits=bits, start_ms=clock.to_ms(starts)
                )
            )
            if converted:
                report.boards += 1
                report.entries += converted
    return report
