"""The one clock. Every view, consumer, service, task and command reads the time here.

Tests pin it (``pinned``; tests/conftest.py pins it for every test), so that no
code path can mix a fixed instant with the wall clock: a suite that passes
today passes next month. Redis keeps time of its own only for key expiry, and
every expiry the product sets is relative (PX / PEXPIRE), never an instant of
this clock.

Instants are aware UTC datetimes. Redis stores them as epoch milliseconds, and
the API and the websocket write them as ISO 8601 with milliseconds and ``Z``.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


class PinnedClock:
    """A clock that stands still at an instant until a test moves it."""

    def __init__(self, instant: dt.datetime) -> None:
        self._lock = threading.Lock()
        self._instant = _aware(instant)

    def now(self) -> dt.datetime:
        with self._lock:
            return self._instant

    def set(self, instant: dt.datetime) -> None:
        with self._lock:
            self._instant = _aware(instant)

    def advance(self, seconds: float) -> dt.datetime:
        with self._lock:
            self._instant += dt.timedelta(seconds=seconds)
            return self._instant


# Shared by every thread of the process (a test's live server and broadcaster
# threads read the test's pinned clock), so a plain module global, not a contextvar.
_pinned: PinnedClock | None = None


def _aware(instant: dt.datetime) -> dt.datetime:
    if instant.tzinfo is None:
        raise ValueError("the clock only holds aware datetimes")
    return instant.astimezone(dt.UTC)


def now() -> dt.datetime:
    """The current instant (aware, UTC)."""
    pinned = _pinned
    if pinned is not None:
        return pinned.now()
    return dt.datetime.fromtimestamp(time.time(), tz=dt.UTC)


def now_ms() -> int:
    return to_ms(now())


def to_ms(instant: dt.datetime) -> int:
    """Epoch milliseconds of an aware instant (exact: no float rounding)."""
    return (instant - _EPOCH) // dt.timedelta(milliseconds=1)


def from_ms(ms: int | float | str) -> dt.datetime:
    """The instant of epoch milliseconds (Redis replies may be strings or floats)."""
    return _EPOCH + dt.timedelta(milliseconds=ms if isinstance(ms, int) else int(float(ms)))


def shown(instant: dt.datetime) -> str:
    """An instant as admin and pages show it to people: ``2026-11-26 16:04 UTC`` (the form of
    settings' FORMAT_MODULE_PATH, for text a template does not render)."""
    return instant.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def iso(instant: dt.datetime) -> str:
    """The one text form of an instant: ``2026-11-22T10:51:32.598Z`` (UTC, milliseconds)."""
    # isoformat, not strftime: %Y leaves years before 1000 unpadded ("145-04-05"), not RFC 3339.
    return instant.astimezone(dt.UTC).replace(tzinfo=None).isoformat(timespec="milliseconds") + "Z"


@contextmanager
def pinned(instant: dt.datetime) -> Iterator[PinnedClock]:
    """Stop the clock at ``instant`` for the block (tests). Not reentrant across threads."""
    global _pinned
    previous = _pinned
    clock = PinnedClock(instant)
    _pinned = clock
    try:
        yield clock
    finally:
        _pinned = previous


def monotonic() -> float:
    """Seconds for measuring durations and cache ages (never pinned: not a calendar time)."""
    return time.monotonic()
