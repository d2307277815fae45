"""The score ledger: every applied score, copied from Redis to the database, and
replayed into Redis when Redis lost its boards (docs/ledger.md).

- drain.py: :func:`ledger_drain` (beat task, every few seconds) copies each game's
  ledger stream into the ScoreEvent table.
- corrections.py: :func:`score_correct`, an admin's correction, applied to the
  current boards and appended to the ledger in one script.
- rebuild.py: :func:`leaderboards_rebuild` (``manage.py rebuild_leaderboards``)
  replays the ledger into temporary keys and swaps them in atomically.
"""

from __future__ import annotations

from .corrections import Corrected, score_correct
from .drain import LEDGER_DRAIN_BATCH, default_consumer, ledger_drain
from .events import CORRECTION_REASON_MAX_CHARS, LEDGER_GROUP, event_row
from .rebuild import RebuildReport, leaderboards_rebuild

__all__ = [
    "CORRECTION_REASON_MAX_CHARS",
    "LEDGER_DRAIN_BATCH",
    "LEDGER_GROUP",
    "Corrected",
    "RebuildReport",
    "default_consumer",
    "event_row",
    "leaderboards_rebuild",
    "ledger_drain",
    "score_correct",
]
