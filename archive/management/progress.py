"""A tiny progress bar for long management commands (archive_period, rebuild_leaderboards).

Hand-written rather than a dependency: it only has to draw one line on stderr.
On a terminal it redraws in place; elsewhere (logs, tests) it writes a line each
time another tenth is done, so a long run does not flood its log.
"""

from __future__ import annotations

import time
from typing import Protocol

# Characters of the bar itself.
PROGRESS_BAR_WIDTH = 30
# A terminal is redrawn at most this often (seconds): cheap even at thousands of updates.
PROGRESS_REDRAW_SECS = 0.1
# Without a terminal, a line is written each time this share (percent) more is done.
PROGRESS_LOG_STEP_PERCENT = 10


class Stream(Protocol):
    def write(self, text: str, /) -> object: ...

    def flush(self) -> None: ...


class ProgressBar:
    """``bar = ProgressBar(stderr, "archiving"); bar.update(done, total) ...; bar.close()``."""

    def __init__(self, stream: Stream, label: str) -> None:
        self.stream = stream
        self.label = label
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self._last_draw = 0.0
        self._last_step = -1
        self._drawn = False

    def _line(self, done: int, total: int) -> str:
        share = done / total if total else 1.0
        filled = int(PROGRESS_BAR_WIDTH * share)
        bar = "#" * filled + "." * (PROGRESS_BAR_WIDTH - filled)
        return f"{self.label} [{bar}] {done}/{total} ({share:.0%})"

    def update(self, done: int, total: int) -> None:
        if self.tty:
            now = time.monotonic()
            if done < total and now - self._last_draw < PROGRESS_REDRAW_SECS:
                return
            self._last_draw = now
            self.stream.write("\r" + self._line(done, total))
            self.stream.flush()
            self._drawn = True
            return
        step = (100 * done // total if total else 100) // PROGRESS_LOG_STEP_PERCENT
        if step > self._last_step:
            self._last_step = step
            self.stream.write(self._line(done, total) + "\n")

    def close(self) -> None:
        """End the line on a terminal (call it once, when done or failed)."""
        if self.tty and self._drawn:
            self.stream.write("\n")
            self.stream.flush()
