"""Board writes, as plain keyword-only functions that views, API endpoints, tasks, admin
actions and commands adapt to, in three modules along their seams:

- scores.py: submissions (one, a batch, an import), async, touching only Redis;
- players.py: the player sync to the database, admin renames, names written outside a
  submission;
- hiding.py: hiding a player from every board, and restoring them.
"""

from __future__ import annotations

from .hiding import hidden_restore, player_set_hidden
from .players import (
    NAMES_INDEX_BACKFILL_PER_RUN,
    PLAYER_SYNC_BATCH_SIZE,
    names_index_backfill,
    names_write,
    player_rename,
    players_mark_all,
    players_sync_pending,
)
from .scores import (
    LEDGER_FULL_RETRY_SECS,
    METADATA_MAX_BYTES,
    PLAYER_SPAM_WINDOW_MS,
    SUBMIT_CHUNK_ITEMS,
    Idempotency,
    PeriodStanding,
    Submission,
    Submitted,
    board_closed,
    board_rules,
    metadata_text,
    not_replicated,
    score_import,
    score_submit,
    score_submit_many,
    window_periods,
)

__all__ = [
    "LEDGER_FULL_RETRY_SECS",
    "METADATA_MAX_BYTES",
    "NAMES_INDEX_BACKFILL_PER_RUN",
    "PLAYER_SPAM_WINDOW_MS",
    "PLAYER_SYNC_BATCH_SIZE",
    "SUBMIT_CHUNK_ITEMS",
    "Idempotency",
    "PeriodStanding",
    "Submission",
    "Submitted",
    "board_closed",
    "board_rules",
    "hidden_restore",
    "metadata_text",
    "names_index_backfill",
    "names_write",
    "not_replicated",
    "player_rename",
    "player_set_hidden",
    "players_mark_all",
    "players_sync_pending",
    "score_import",
    "score_submit",
    "score_submit_many",
    "window_periods",
]
