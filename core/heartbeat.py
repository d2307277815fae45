"""Heartbeat files: how a process with no HTTP port (the Celery worker, Celery beat, the
live broadcaster) shows a container health check that its loop still turns.

Each touches ``<HEARTBEAT_DIR>/<role>`` (its modification time) as it works, at most
every HEARTBEAT_EVERY_SECS; ``manage.py healthcheck ROLE`` reads its age. The files
live on the container's own disk, one process per container, so nothing is shared.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from django.conf import settings

from . import clock

# A heartbeat is written at most this often (a file's mtime: a cheap system call).
HEARTBEAT_EVERY_SECS = 5.0
# Older than this, a heartbeat means the process is stuck or gone: several missed
# beats, and longer than the slowest beat task (a drain or a close job) takes.
HEARTBEAT_STALE_SECS = 60.0

ROLES = ("worker", "beat", "broadcast")

_last_beat: dict[str, float] = {}


def _path(role: str) -> Path:
    return Path(settings.HEARTBEAT_DIR) / role


def heartbeat(role: str) -> None:
    """Record that ``role``'s loop turned just now (a no-op if it did so lately)."""
    now = clock.monotonic()
    if now - _last_beat.get(role, float("-inf")) < HEARTBEAT_EVERY_SECS:
        return
    path = _path(role)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()
    # Stamped with this process's clock, which is what the age is read against.
    stamp = time.time()
    os.utime(path, (stamp, stamp))
    _last_beat[role] = now


def heartbeat_age_secs(role: str) -> float | None:
    """Seconds since ``role`` last beat, or None if it never did."""
    try:
        # The stamp is time.time() of the beating process, so its age is read against that
        # clock too, not core.clock's (which tests pin).
        return max(0.0, time.time() - _path(role).stat().st_mtime)
    except FileNotFoundError:
        return None
