"""Period arithmetic: which daily/weekly/monthly/custom board a moment belongs to.

Boundaries are local midnights in the board's time zone; weeks are ISO weeks
(Monday to Sunday, ids like ``2026-W47``). A custom window resets when the board's
cron fires (in its zone); its periods are named by their UTC start. The all-time
period never ends, unless the board has a season, which it then spans.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from core import board_rules
from core.config import BoardConfig

DAILY = "daily"
WEEKLY = "weekly"
MONTHLY = "monthly"
ALL_TIME = "all-time"
PERIODS: tuple[str, ...] = (DAILY, WEEKLY, MONTHLY, ALL_TIME)
ALL_TIME_ID = "all-time"

_ID_PATTERNS = {
    DAILY: re.compile(r"^(\d{4})-(\d{2})-(\d{2})$"),
    WEEKLY: re.compile(r"^(\d{4})-W(\d{2})$"),
    MONTHLY: re.compile(r"^(\d{4})-(\d{2})$"),
    ALL_TIME: re.compile(r"^all-time$"),
}


class InvalidPeriod(ValueError):
    pass


@dataclass(frozen=True)
class Period:
    kind: str
    id: str
    starts_at: dt.datetime | None  # None for all-time
    ends_at: dt.datetime | None  # exclusive; None for all-time

    @property
    def ends_at_ms(self) -> int | None:
        return None if self.ends_at is None else int(self.ends_at.timestamp() * 1000)


def zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidPeriod(f"unknown time zone {name!r}") from None


def _local_midnight(day: dt.date, tz: ZoneInfo) -> dt.datetime:
    """The first instant of ``day`` in ``tz``, in UTC.

    Where a DST jump skips midnight itself, the day starts at the first local
    time that exists, which the round trip through UTC yields.
    """
    naive = dt.datetime.combine(day, dt.time())
    instant = naive.replace(tzinfo=tz).astimezone(dt.UTC)
    if instant.astimezone(tz).date() != day:
        instant = naive.replace(tzinfo=tz, fold=1).astimezone(dt.UTC)
    return instant


def _span(kind: str, first_day: dt.date, tz: ZoneInfo) -> tuple[dt.datetime, dt.datetime]:
    if kind == DAILY:
        next_day = first_day + dt.timedelta(days=1)
    elif kind == WEEKLY:
        next_day = first_day + dt.timedelta(days=7)
    else:
        year, month = (first_day.year + 1, 1) if first_day.month == 12 else (first_day.year, first_day.month + 1)
        next_day = dt.date(year, month, 1)
    return _local_midnight(first_day, tz), _local_midnight(next_day, tz)


def current(kind: str, tz_name: str, now: dt.datetime) -> Period:
    """The period of ``kind`` that contains ``now`` (an aware datetime)."""
    if kind == ALL_TIME:
        return Period(ALL_TIME, ALL_TIME_ID, None, None)
    tz = zone(tz_name)
    today = now.astimezone(tz).date()
    if kind == DAILY:
        first, period_id = today, today.isoformat()
    elif kind == WEEKLY:
        year, week, weekday = today.isocalendar()
        first, period_id = today - dt.timedelta(days=weekday - 1), f"{year}-W{week:02d}"
    elif kind == MONTHLY:
        first, period_id = today.replace(day=1), f"{today.year}-{today.month:02d}"
    else:
        raise InvalidPeriod(f"unknown period {kind!r}")
    starts, ends = _span(kind, first, tz)
    return Period(kind, period_id, starts, ends)


def parse(kind: str, period_id: str, tz_name: str) -> Period:
    """The period named by ``period_id``; InvalidPeriod if it is not a valid id for ``kind``."""
    pattern = _ID_PATTERNS.get(kind)
    if pattern is None:
        raise InvalidPeriod(f"unknown period {kind!r}; use one of {', '.join(PERIODS)}")
    match = pattern.match(period_id)
    if match is None:
        raise InvalidPeriod(f"{period_id!r} is not a {kind} period id")
    if kind == ALL_TIME:
        return Period(ALL_TIME, ALL_TIME_ID, None, None)
    tz = zone(tz_name)
    try:
        if kind == DAILY:
            first = dt.date(int(match[1]), int(match[2]), int(match[3]))
        elif kind == WEEKLY:
            first = dt.date.fromisocalendar(int(match[1]), int(match[2]), 1)
        else:
            first = dt.date(int(match[1]), int(match[2]), 1)
    except ValueError:
        raise InvalidPeriod(f"{period_id!r} is not a {kind} period id") from None
    try:
        starts, ends = _span(kind, first, tz)
    except (OverflowError, ValueError):
        # Its start or end falls outside the years 1-9999 that dates can hold (in UTC).
        raise InvalidPeriod(f"{period_id!r} is at the edge of the calendar: no board can have it") from None
    return Period(kind, period_id, starts, ends)


# --------------------------------------------------------------------------- a board's windows

CUSTOM = board_rules.CUSTOM
WINDOWS: tuple[str, ...] = board_rules.WINDOWS
SEASON_ID = board_rules.SEASON_ID
_CUSTOM_ID = re.compile(r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})Z$")


def custom_id(starts_at: dt.datetime) -> str:
    """A cron period's id: the UTC instant it starts, to the minute ('2026-11-20T17:00Z')."""
    return starts_at.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%MZ")


def _custom(board: BoardConfig, starts_at: dt.datetime) -> Period:
    (ends_at,) = board_rules.cron_next(board.cron, zone(board.timezone), starts_at, 1)
    return Period(CUSTOM, custom_id(starts_at), starts_at, ends_at)


def _season(board: BoardConfig, kind: str, period_id: str) -> Period:
    return Period(kind, period_id, board.starts_at, board.ends_at)


def window_current(board: BoardConfig, window: str, now: dt.datetime) -> Period:
    """The period of one of the board's windows that contains ``now``.

    A board with a season spans it with its all-time window (which then ends and is
    archived) and, without a cron, with its custom window (id 'season').
    """
    if window == ALL_TIME and board.ends_at is not None:
        return _season(board, ALL_TIME, ALL_TIME_ID)
    if window == CUSTOM:
        if not board.cron:
            return _season(board, CUSTOM, SEASON_ID)
        starts_at = board_rules.cron_previous(board.cron, zone(board.timezone), now)
        if starts_at is None:  # a cron that never fired before now: its first period runs up to it
            raise InvalidPeriod(f"{board.cron!r} has not fired yet")
        return _custom(board, starts_at)
    return current(window, board.timezone, now)


def window_parse(board: BoardConfig, window: str, period_id: str) -> Period:
    """The period of the board's ``window`` named ``period_id``; InvalidPeriod if none is."""
    if window == ALL_TIME and board.ends_at is not None:
        if period_id != ALL_TIME_ID:
            raise InvalidPeriod(f"{period_id!r} is not an all-time period id")
        return _season(board, ALL_TIME, ALL_TIME_ID)
    if window != CUSTOM:
        return parse(window, period_id, board.timezone)
    if not board.cron:
        if period_id != SEASON_ID:
            raise InvalidPeriod(f"{period_id!r} is not this board's custom period id; use {SEASON_ID!r}")
        return _season(board, CUSTOM, SEASON_ID)
    match = _CUSTOM_ID.match(period_id)
    try:
        year, month, day, hour, minute = (int(part) for part in match.groups()) if match else (0, 0, 0, 0, 0)
        starts_at: dt.datetime | None = dt.datetime(year, month, day, hour, minute, tzinfo=dt.UTC)
    except ValueError:
        starts_at = None
    tz = zone(board.timezone)
    if starts_at is None or board_rules.cron_previous(board.cron, tz, starts_at) != starts_at:
        raise InvalidPeriod(
            f"{period_id!r} is not the start of a custom period: ids are UTC instants when the cron fires, "
            "like 2026-11-20T17:00Z"
        )
    return _custom(board, starts_at)


def board_current(board: BoardConfig, now: dt.datetime) -> list[Period]:
    """The current period of each of the board's windows, in the board's window order."""
    return [window_current(board, window, now) for window in board.windows]
