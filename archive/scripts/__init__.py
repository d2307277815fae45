"""The Lua scripts of the archive and the ledger (archive/lua/), each with its one typed
wrapper, split by the service they serve: close_jobs.py (the close-job queue and the safety
net's sweep), period_archive.py (one period's archive lock and retention) and ledger.py (the
drain's stream). The board-writing scripts, score_correct and board_swap, are
archive/ledger/board_scripts.py's.
"""

from __future__ import annotations

from .close_jobs import (
    CLOSE_ACK,
    CLOSE_CLAIM,
    CLOSE_EXTEND,
    CLOSE_FAIL,
    CLOSE_REAP,
    CLOSE_RETRY,
    CLOSE_SCHEDULE,
    CLOSE_SWEEP,
    ClaimedJob,
    Failed,
    FailOutcome,
    Reaped,
    ReapOutcome,
    SweptBoard,
    close_ack,
    close_claim,
    close_defer,
    close_extend,
    close_fail,
    close_reap,
    close_retry,
    close_schedule,
    close_sweep,
)
from .ledger import LEDGER_CONSUMERS_PRUNE, LEDGER_TRIM, ledger_consumers_prune, ledger_trim
from .period_archive import CLOSE_LOCK, CLOSE_RETAIN, close_lock, close_retain

__all__ = [
    "CLOSE_ACK",
    "CLOSE_CLAIM",
    "CLOSE_EXTEND",
    "CLOSE_FAIL",
    "CLOSE_LOCK",
    "CLOSE_REAP",
    "CLOSE_RETAIN",
    "CLOSE_RETRY",
    "CLOSE_SCHEDULE",
    "CLOSE_SWEEP",
    "LEDGER_CONSUMERS_PRUNE",
    "LEDGER_TRIM",
    "ClaimedJob",
    "FailOutcome",
    "Failed",
    "ReapOutcome",
    "Reaped",
    "SweptBoard",
    "close_ack",
    "close_claim",
    "close_defer",
    "close_extend",
    "close_fail",
    "close_lock",
    "close_reap",
    "close_retain",
    "close_retry",
    "close_schedule",
    "close_sweep",
    "ledger_consumers_prune",
    "ledger_trim",
]
