"""The rules a leaderboard's settings follow: its windows (with the cron of a custom one),
its tie rule and the score range that rule keeps exact, and its display format.

Pure functions over plain values: the model validates with them, the period arithmetic
(games/periods.py) and the pages build on them.
"""

from __future__ import annotations

import datetime as dt
import functools
import math
import re
from collections.abc import Sequence
from zoneinfo import ZoneInfo

from cronsim import CronSim, CronSimError

DAILY = "daily"
WEEKLY = "weekly"
MONTHLY = "monthly"
ALL_TIME = "all-time"
CUSTOM = "custom"
WINDOWS: tuple[str, ...] = (DAILY, WEEKLY, MONTHLY, ALL_TIME, CUSTOM)
# The id of a custom window's one period when the board has a season and no cron.
SEASON_ID = "season"

# A custom window lasts at least this long: each period is a board, an archive and a
# close job, so a cron firing every minute would bury the history under 1,440 a day.
CUSTOM_WINDOW_MIN_SECS = 3600
# How far ahead a cron is walked to find its longest period: 8 years covers the rarest
# 5-field schedule (29 February on a given weekday repeats within 28 years, but a day-of-month
# *or* weekday match, as cron reads both, keeps the gaps far shorter).
CRON_SCAN_YEARS = 8
# ... and at most this many of its occurrences (an hourly cron reaches it in 2.3 years).
CRON_SCAN_MAX_OCCURRENCES = 20_000

# The longest period of each fixed window (ms), DST's extra hour included.
_HOUR_MS = 3_600_000
_LONGEST_MS = {DAILY: 25 * _HOUR_MS, WEEKLY: (7 * 24 + 1) * _HOUR_MS, MONTHLY: (31 * 24 + 1) * _HOUR_MS}

# Scores are exact in a Redis double only up to 2**53 - 1.
DOUBLE_EXACT_BITS = 53


class RuleError(ValueError):
    """A setting that breaks a rule; the message says which and why, for a person, and
    ``field`` names the setting to point at (a form field, the API's ``field``)."""

    def __init__(self, message: str, *, field: str) -> None:
        super().__init__(message)
        self.field = field


# --------------------------------------------------------------------------- cron


def _start_in(tz: ZoneInfo, after: dt.datetime) -> dt.datetime:
    # cronsim walks in the zone of its start and counts from the next whole minute.
    return after.astimezone(tz).replace(second=0, microsecond=0)


def cron_check(expr: str) -> None:
    """RuleError unless ``expr`` is a 5-field cron expression."""
    if len(expr.split()) != 5:
        raise RuleError(f"{expr!r} is not a 5-field cron expression (minute hour day month weekday).", field="cron")
    try:
        CronSim(expr, dt.datetime(2000, 1, 1, tzinfo=dt.UTC))
    except CronSimError as exc:
        raise RuleError(f"{expr!r} is not a valid cron expression: {exc}.", field="cron") from None


def cron_explain(expr: str) -> str:
    """A readable sentence for a valid expression ("At 18:00 on Friday")."""
    return str(CronSim(expr, dt.datetime(2000, 1, 1, tzinfo=dt.UTC)).explain())


def cron_next(expr: str, tz: ZoneInfo, after: dt.datetime, count: int) -> list[dt.datetime]:
    """The next ``count`` resets strictly after ``after``, as aware UTC datetimes."""
    found: list[dt.datetime] = []
    for instant in CronSim(expr, _start_in(tz, after)):
        utc = instant.astimezone(dt.UTC)
        if utc > after:
            found.append(utc)
        if len(found) == count:
            break
    return found


def cron_previous(expr: str, tz: ZoneInfo, at: dt.datetime) -> dt.datetime | None:
    """The last reset at or before ``at`` (UTC), or None if the cron never fired before."""
    start = _start_in(tz, at) + dt.timedelta(minutes=1)
    for instant in CronSim(expr, start, reverse=True):
        utc = instant.astimezone(dt.UTC)
        if utc <= at:
            return utc
    return None


@functools.lru_cache(maxsize=256)
def cron_gaps_ms(expr: str, tz: ZoneInfo) -> tuple[int, int]:
    """(shortest, longest) time between two resets, in ms, over CRON_SCAN_YEARS from 2000."""
    origin = dt.datetime(2000, 1, 1, tzinfo=tz)
    horizon = origin.replace(year=origin.year + CRON_SCAN_YEARS)
    previous: dt.datetime | None = None
    shortest, longest = math.inf, 0.0
    for count, instant in enumerate(CronSim(expr, origin)):
        if instant > horizon or count >= CRON_SCAN_MAX_OCCURRENCES:
            break
        if previous is not None:
            gap = (instant.astimezone(dt.UTC) - previous).total_seconds() * 1000
            shortest, longest = min(shortest, gap), max(longest, gap)
        previous = instant.astimezone(dt.UTC)
    if previous is None or longest == 0:
        raise RuleError("The cron expression fires at most once in eight years; use a season instead.", field="cron")
    return int(shortest), int(longest)


# --------------------------------------------------------------------------- windows


def window_names_check(windows: object) -> None:
    """RuleError unless ``windows`` is a list of distinct known window names."""
    if not isinstance(windows, list | tuple) or not windows:
        raise RuleError("Choose at least one window.", field="windows")
    unknown = [str(w) for w in windows if w not in WINDOWS]
    if unknown:
        raise RuleError(f"Unknown windows: {', '.join(unknown)}; use {', '.join(WINDOWS)}.", field="windows")
    if len(set(windows)) != len(windows):
        raise RuleError("Each window may appear once.", field="windows")


def windows_check(
    windows: Sequence[object], *, cron: str, tz: ZoneInfo, starts_at: dt.datetime | None, ends_at: dt.datetime | None
) -> None:
    """RuleError unless the windows, the cron and the season fit together."""
    window_names_check(windows)
    if starts_at is not None and ends_at is not None and ends_at <= starts_at:
        raise RuleError("The season must end after it starts.", field="ends_at")
    if CUSTOM not in windows:
        if cron:
            raise RuleError("A cron expression needs the custom window.", field="cron")
        return
    if not cron:
        if starts_at is None or ends_at is None:
            raise RuleError(
                "The custom window needs a cron expression, or a season (start and end) to span.", field="cron"
            )
        return
    cron_check(cron)
    shortest, _ = cron_gaps_ms(cron, tz)
    if shortest < CUSTOM_WINDOW_MIN_SECS * 1000:
        raise RuleError(
            f"{cron!r} resets every {shortest // 60_000} minutes; a custom window lasts at least "
            f"{CUSTOM_WINDOW_MIN_SECS // 60} minutes.",
            field="cron",
        )


# --------------------------------------------------------------------------- ties


def longest_period_ms(
    window: str, *, cron: str, tz: ZoneInfo, starts_at: dt.datetime | None, ends_at: dt.datetime | None
) -> int | None:
    """The longest a period of ``window`` lasts (ms), or None when it never ends."""
    if window in _LONGEST_MS:
        return _LONGEST_MS[window]
    if window == CUSTOM and cron:
        return cron_gaps_ms(cron, tz)[1]
    if starts_at is not None and ends_at is not None:
        # A season's span: the all-time window of a board with a season, or a custom window without cron.
        return int((ends_at - starts_at).total_seconds() * 1000)
    return None


def tie_bits(longest_ms: int) -> int:
    """How many low bits of an ``earliest`` sort key hold the ms since its period started."""
    return max(1, int(longest_ms).bit_length())


def earliest_score_limit(bits: int) -> int:
    """The largest |score| whose ``earliest`` sort key (score * 2**bits + ms) a double holds exactly."""
    return int(2 ** (DOUBLE_EXACT_BITS - bits) - 1)


def earliest_check(
    windows: Sequence[str],
    *,
    cron: str,
    tz: ZoneInfo,
    starts_at: dt.datetime | None,
    ends_at: dt.datetime | None,
    min_score: int | None,
    max_score: int | None,
) -> int:
    """The largest |score| an ``earliest`` board keeps exact; RuleError if the board can't have it."""
    if min_score is None or max_score is None:
        raise RuleError(
            "Ties 'earliest' needs both score bounds, so the range it keeps exact can be checked.", field="ties"
        )
    limit: int | None = None
    for window in windows:
        longest = longest_period_ms(window, cron=cron, tz=tz, starts_at=starts_at, ends_at=ends_at)
        if longest is None:
            raise RuleError(
                f"Ties 'earliest' orders equal scores by when they were reached within a period; the {window} "
                "window never ends, so give the board a season (start and end) or drop that window.",
                field="ties",
            )
        window_limit = earliest_score_limit(tie_bits(longest))
        limit = window_limit if limit is None else min(limit, window_limit)
    assert limit is not None
    if max(abs(min_score), abs(max_score)) > limit:
        raise RuleError(
            f"With ties 'earliest' and these windows, scores must stay within ±{limit:,}: the sort key holds "
            "the score and the ms since the period started in one exact double. Narrow the bounds, "
            "shorten the windows, or use ties 'shared'.",
            field="ties",
        )
    return limit


# --------------------------------------------------------------------------- formats

INTEGER = "integer"
TIME_MS = "time_ms"
_DECIMAL = re.compile(r"^decimal:([1-6])$")
FORMAT_HELP = "integer, time_ms, or decimal:N with N from 1 to 6"


def format_check(fmt: str) -> None:
    if fmt not in (INTEGER, TIME_MS) and not _DECIMAL.match(fmt):
        raise RuleError(f"{fmt!r} is not a format; use {FORMAT_HELP}.", field="format")


def format_score(value: int, fmt: str) -> str:
    """How pages show a score: 1,234,567 (integer), 1:21.999 (time_ms: 81999), 1,234.56 (decimal:2)."""
    sign = "-" if value < 0 else ""
    magnitude = abs(int(value))
    if fmt == TIME_MS:
        seconds, ms = divmod(magnitude, 1000)
        minutes, seconds = divmod(seconds, 60)
        hours, minutes = divmod(minutes, 60)
        if hours:
            return f"{sign}{hours}:{minutes:02d}:{seconds:02d}.{ms:03d}"
        return f"{sign}{minutes}:{seconds:02d}.{ms:03d}"
    match = _DECIMAL.match(fmt)
    if match:
        places = int(match[1])
        whole, fraction = divmod(magnitude, 10**places)
        return f"{sign}{whole:,}.{fraction:0{places}d}"
    return f"{sign}{magnitude:,}"


# --------------------------------------------------------------------------- sort keys


def next_sort_key(*, mode: str, stored: int | None, value: int, bits: int, offset_ms: int) -> int | None:
    """The sort key an entry gets from one submission, or None when it keeps ``stored`` (what
    games/lua/submit_score.lua does, for the rebuild and the tests' reference).

    ``value`` is the submission's sort base (the score, negated when higher is better; the
    amount for increment); a key is base * 2**bits + ms since its period started, bits 0 for
    ties 'shared'. A score reached again keeps the moment it was first reached.
    """
    old_base = None if stored is None else stored >> bits
    if mode == "increment":
        base = (old_base or 0) + value
    elif mode == "best" and old_base is not None and old_base <= value:
        return None
    else:
        base = value
    if base == old_base:
        return None
    return (base << bits) + (offset_ms if bits else 0)
