"""Closing finished periods: the archive of one period (period_archive.py), the close-job
queue that runs each exactly once (close_jobs.py), the background's safety net that finds
missing jobs and lost work marks (catch_up.py), and taking a board out of play
(board_close.py)."""

from __future__ import annotations

from .board_close import competition_end, leaderboard_deactivate
from .catch_up import SweepReport, close_jobs_catch_up, work_sweep
from .close_jobs import (
    CLOSE_JOB_MAX_ATTEMPTS,
    BoardBacklog,
    ClaimedJob,
    CloseQueue,
    DeadJob,
    board_backlogs,
    close_job_name,
    close_job_retry,
    close_jobs_claim,
    close_jobs_dead,
    close_jobs_due_now,
    close_jobs_next,
    close_jobs_queue,
    close_jobs_reap,
    close_jobs_run,
)
from .period_archive import ARCHIVE_CHUNK_SIZE, ARCHIVED_PERIODS, CLOSE_JOB_VISIBILITY_SECS, period_archive

__all__ = [
    "ARCHIVED_PERIODS",
    "ARCHIVE_CHUNK_SIZE",
    "CLOSE_JOB_MAX_ATTEMPTS",
    "CLOSE_JOB_VISIBILITY_SECS",
    "BoardBacklog",
    "ClaimedJob",
    "CloseQueue",
    "DeadJob",
    "SweepReport",
    "board_backlogs",
    "close_job_name",
    "close_job_retry",
    "close_jobs_catch_up",
    "close_jobs_claim",
    "close_jobs_dead",
    "close_jobs_due_now",
    "close_jobs_next",
    "close_jobs_queue",
    "close_jobs_reap",
    "close_jobs_run",
    "competition_end",
    "leaderboard_deactivate",
    "period_archive",
    "work_sweep",
]
