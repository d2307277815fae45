"""Period arithmetic: which daily/weekly/monthly/custom board a moment belongs to.

Boundaries are local midnights in the board's time zone; weeks are ISO weeks
(Monday to Sunday, ids like ``2026-W47``). A custom window resets when the board's
cron fires (in its zone); its periods are named by their UTC start. The all-time
period never ends, unless the board has a season, which it then spans.

A board taken out of play (DELETE) has its periods archived at once, as if they had ended:
for good. Brought back (PUT) before such a period's natural end, it does not reopen that
archive: the rest of the period is a new *generation*, its own period from the moment the
board came back to the natural end, whose id is the period's own, ``~`` and that moment
(``2026-11-25~20261125T140307.123Z``). Its scores are archived on their own when it ends, so
no period ever collides with one archived before (docs/archive.md).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from core import board_rules, competition_rules
from core.competition_rules import Competition
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


GENERATION_MARK = "~"
_STAMP = re.compile(r"^(\d{8}T\d{6})\.(\d{3})Z$")


def _stamp(instant: dt.datetime) -> str:
    utc = instant.astimezone(dt.UTC)
    return f"{utc:%Y%m%dT%H%M%S}.{utc.microsecond // 1000:03d}Z"


def _unstamp(text: str) -> dt.datetime | None:
    match = _STAMP.match(text)
    if match is None:
        return None
    try:
        moment = dt.datetime.strptime(match[1], "%Y%m%dT%H%M%S").replace(tzinfo=dt.UTC)
    except ValueError:
        return None
    return moment + dt.timedelta(milliseconds=int(match[2]))


def _generation(period: Period, since: dt.datetime) -> Period:
    return Period(period.kind, f"{period.id}{GENERATION_MARK}{_stamp(since)}", since, period.ends_at)


def _reopened_within(board: BoardConfig, period: Period) -> bool:
    """Whether the board was last taken out of play and brought back both within ``period``'s span
    (a period that ends: one that never does is never archived, so it simply goes on)."""
    closed, reopened = board.closed_at, board.reopened_at
    if closed is None or reopened is None or period.ends_at is None:
        return False
    return (period.starts_at is None or period.starts_at <= closed) and closed <= reopened < period.ends_at


def superseded(board: BoardConfig, period: Period) -> bool:
    """Whether a later generation took over ``period``'s span: it takes no more scores, so it is
    finished (and archived as ended early) although its natural end is still to come."""
    if board.reopened_at is None or not _reopened_within(board, period):
        return False
    return period.starts_at is None or period.starts_at < board.reopened_at


def window_current(board: BoardConfig, window: str, now: dt.datetime) -> Period:
    """The period of one of the board's windows that contains ``now``: from the moment the board
    came back into play within a period, that period's new generation (see the module's doc)."""
    period = _window_current(board, window, now)
    if board.reopened_at is not None and now >= board.reopened_at and _reopened_within(board, period):
        return _generation(period, board.reopened_at)
    return period


def _window_current(board: BoardConfig, window: str, now: dt.datetime) -> Period:
    """The period of one of the board's windows that contains ``now``, by the calendar.

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
    """The period of the board's ``window`` named ``period_id`` (maybe a generation: see the
    module's doc); InvalidPeriod if none is."""
    base_id, mark, stamp = period_id.partition(GENERATION_MARK)
    period = _window_parse(board, window, base_id)
    if not mark:
        return period
    since = _unstamp(stamp)
    if since is None or period.ends_at is None or not (period.starts_at or since) <= since < period.ends_at:
        raise InvalidPeriod(
            f"{period_id!r} is not a generation of {base_id!r}: after {GENERATION_MARK!r} comes the moment "
            "the board came back within that period, like 20261125T140307.123Z"
        )
    return _generation(period, since)


def _window_parse(board: BoardConfig, window: str, period_id: str) -> Period:
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


def entry_closes_at(period: Period, entry_window_secs: int | None) -> dt.datetime | None:
    """When entry to a competing board's ``period`` closes: ``entry_window_secs`` after its start,
    at its end at the latest; None without an entry window (or a period without a start)."""
    if entry_window_secs is None or period.starts_at is None:
        return None
    try:
        closes = period.starts_at + dt.timedelta(seconds=entry_window_secs)
    except OverflowError:  # past the calendar's end: the period ends first, if it ever does
        return period.ends_at
    return closes if period.ends_at is None else min(closes, period.ends_at)


def cohorts_formed_at(period: Period, competition: Competition) -> dt.datetime | None:
    """When a competing ``period``'s balanced cohorts are split (None where entrants are placed
    as they enter, or without cohorts)."""
    return competition_rules.cohorts_formed_at(
        competition,
        starts_at=period.starts_at,
        ends_at=period.ends_at,
        closes_at=entry_closes_at(period, competition.entry_window_secs),
    )


def settles_at(period: Period, competition: Competition) -> dt.datetime | None:
    """When a competing ``period`` settles: its end after the review buffer (None if it never ends)."""
    if period.ends_at is None:
        return None
    return period.ends_at + dt.timedelta(seconds=competition.settle_delay_secs)


def board_current(board: BoardConfig, now: dt.datetime) -> list[Period]:
    """The current period of each of the board's windows, in the board's window order."""
    return [window_current(board, window, now) for window in board.windows]
