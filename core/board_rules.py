"""The rules a leaderboard's settings follow: its windows (with the cron of a custom one),
its tie rules and how a board entry is keyed and ranked, and its display format.

Pure functions over plain values: the model validates with them, the period arithmetic
(games/periods.py) and the pages build on them, and the board entries' rules are the Python
twin of the Lua prelude every board script shares (core/lua/prelude/entries.lua).
"""

from __future__ import annotations

import datetime as dt
import functools
import itertools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from zoneinfo import ZoneInfo

from cronsim import CronSim, CronSimError

from . import text

DAILY = "daily"
WEEKLY = "weekly"
MONTHLY = "monthly"
ALL_TIME = "all-time"
CUSTOM = "custom"
WINDOWS: tuple[str, ...] = (DAILY, WEEKLY, MONTHLY, ALL_TIME, CUSTOM)
# The id of a custom window's one period when the board has a season and no cron.
SEASON_ID = "season"

# A custom window lasts at least this long on its zone's clock: each period is a board, an
# archive and a close job, so a cron firing every minute would bury the history under 1,440 a
# day. A cron that fires at one minute of an hour meets it (windows_check).
CUSTOM_WINDOW_MIN_SECS = 3600
# How far ahead a cron is walked to find its longest period (cron_gaps_ms: only for upgrading
# the keys of an older release, never per request): 8 years covers the rarest
# 5-field schedule (29 February on a given weekday repeats within 28 years, but a day-of-month
# *or* weekday match, as cron reads both, keeps the gaps far shorter).
CRON_SCAN_YEARS = 8
# ... and at most this many of its occurrences (an hourly cron reaches it in 2.3 years).
CRON_SCAN_MAX_OCCURRENCES = 20_000

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


# How pages name a window when the board names it nothing of its own (window_labels).
WINDOW_LABELS = {"daily": "Daily", "weekly": "Weekly", "monthly": "Monthly", "all-time": "All-time", "custom": "Custom"}
# A window's own name is a tab's label and a page's heading: a few words ("Race week").
WINDOW_LABEL_MAX_CHARS = 40


def window_label(labels: Mapping[str, str], kind: str) -> str:
    """A window's name as a tab or a heading shows it: the board's own, else 'Daily' …"""
    return labels.get(kind) or WINDOW_LABELS.get(kind, kind)


def window_phrase(labels: Mapping[str, str], kind: str) -> str:
    """A window's name inside a sentence ("on the daily board", "on the Race week board")."""
    return labels.get(kind) or kind


def window_labels_check(labels: object, windows: Sequence[object]) -> None:
    """RuleError unless ``labels`` names some of the board's windows, each in one short line."""
    if not isinstance(labels, dict):
        raise RuleError('An object of window names, such as {"custom": "Race week"}.', field="window_labels")
    for kind, label in labels.items():
        if kind not in windows:
            raise RuleError(f"The board keeps no {kind} window to name.", field="window_labels")
        if (
            not isinstance(label, str)
            or not label.strip()
            or label != label.strip()
            or len(label) > WINDOW_LABEL_MAX_CHARS
            or text.has_control_characters(label)
        ):
            raise RuleError(
                f"{kind}: one line of 1 to {WINDOW_LABEL_MAX_CHARS} characters, without spaces at either end.",
                field="window_labels",
            )


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
    minutes = sorted(CronSim(cron, dt.datetime(2000, 1, 1, tzinfo=dt.UTC)).minutes)
    if len(minutes) > 1:
        # In every hour it fires, it fires at each of these minutes: more often than hourly,
        # read from the field at once (walking the schedule to find it took seconds a request).
        closest = min(later - earlier for earlier, later in itertools.pairwise(minutes))
        raise RuleError(
            f"{cron!r} resets every {closest} minutes or less; a custom window lasts at least "
            f"{CUSTOM_WINDOW_MIN_SECS // 60} minutes.",
            field="cron",
        )
    # One minute an hour: on its zone's clock, every period lasts an hour or more, decided from
    # the fields alone, whatever the zone, in microseconds. (Walking years of the schedule for the
    # real shortest gap cost 200-400 ms a request, for each new minute or zone.) A DST change
    # can make one period a year 30 or 60 minutes shorter, as it makes that day's daily window 23
    # hours: not the pile of periods a day the minimum keeps out of the history.


# --------------------------------------------------------------------------- ties

SHARED = "shared"
EARLIEST = "earliest"
SUBSCORE = "subscore"
TIES: tuple[str, ...] = (SHARED, EARLIEST, SUBSCORE)


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


# --------------------------------------------------------------------------- board entries
#
# The Python twin of core/lua/prelude/entries.lua (the rebuild replays the ledger with it,
# and tests run both on the same inputs). A period board is a ZSET member -> sort base: the
# score, negated when higher is better, so ascending is best first at any order, exact for
# every |score| <= 2^53-1 (a double holds those). Equal bases are ordered by the member, in
# byte order:
#
# - ties 'shared': the member is the player id (equal scores share a rank; listed by id);
# - ties 'earliest': CLOCK_CHARS of when the entry reached its score, then the player id;
# - ties 'subscore': SUBSCORE_CHARS of the subscore (oriented like the base: ascending is
#   better), then the same clock and the player id.
#
# "When" is a per-board hybrid clock: 12 hex digits of epoch ms (never behind the last
# one given on the board) and 4 of a sequence within that ms, so entries applied in the same
# ms (one batch) still rank in the order they were applied. A board's members HASH maps
# player -> member for the two prefixed rules.

# A hybrid clock: 12 hex digits of ms (up to the year 10889), then 4 of sequence.
CLOCK_MS_CHARS = 12
CLOCK_SEQ_CHARS = 4
CLOCK_CHARS = CLOCK_MS_CHARS + CLOCK_SEQ_CHARS
_CLOCK_MS_MAX = 16**CLOCK_MS_CHARS - 1
_CLOCK_SEQ_MAX = 16**CLOCK_SEQ_CHARS - 1
# A subscore: '0' + 14 hex digits of (v + 2^53) below zero, '1' + 14 hex digits of v from zero.
SUBSCORE_CHARS = 15
_TWO_53 = 2**DOUBLE_EXACT_BITS
MAX_EXACT = _TWO_53 - 1


def prefix_chars(ties: str) -> int:
    """How many characters come before the player id in a member of a board with ``ties``."""
    if ties == EARLIEST:
        return CLOCK_CHARS
    if ties == SUBSCORE:
        return SUBSCORE_CHARS + CLOCK_CHARS
    return 0


def subscore_encode(value: int) -> str:
    """A subscore (oriented: ascending is better) as fixed-width text in the same byte order."""
    if value < 0:
        return f"0{value + _TWO_53:014x}"
    return f"1{value:014x}"


def subscore_decode(text: str) -> int:
    number = int(text[1:SUBSCORE_CHARS], 16)
    return number - _TWO_53 if text[0] == "0" else number


def clock_next(state: str | None, now_ms: int) -> str:
    """The board's next clock after ``state`` (None: none given yet) at ``now_ms``: later than
    every one before it, and at ``now_ms`` when the clock has not run ahead of it."""
    now_ms = min(max(0, now_ms), _CLOCK_MS_MAX)
    if state is None:
        return f"{now_ms:012x}0000"
    last_ms, seq = int(state[:CLOCK_MS_CHARS], 16), int(state[CLOCK_MS_CHARS:CLOCK_CHARS], 16)
    if now_ms > last_ms:
        return f"{now_ms:012x}0000"
    if seq < _CLOCK_SEQ_MAX:
        return f"{last_ms:012x}{seq + 1:04x}"
    if last_ms == _CLOCK_MS_MAX:
        return state  # the year 10889: the clock stops rather than overflow its width
    return f"{last_ms + 1:012x}0000"


def clock_ms(clock: str) -> int:
    """The epoch ms a clock value names."""
    return int(clock[:CLOCK_MS_CHARS], 16)


def member_of(ties: str, player_id: str, *, sub: int = 0, clock: str = "") -> str:
    """The ZSET member of an entry."""
    if ties == SHARED:
        return player_id
    if ties == EARLIEST:
        return clock + player_id
    return subscore_encode(sub) + clock + player_id


@dataclass(frozen=True)
class MemberParts:
    player_id: str
    sub: int  # oriented subscore (0 unless ties 'subscore')
    clock: str  # '' for ties 'shared'


def member_parts(ties: str, member: str) -> MemberParts:
    """What a member holds: the player id, the (oriented) subscore and the clock."""
    if ties == SHARED:
        return MemberParts(member, 0, "")
    if ties == EARLIEST:
        return MemberParts(member[CLOCK_CHARS:], 0, member[:CLOCK_CHARS])
    return MemberParts(
        member[SUBSCORE_CHARS + CLOCK_CHARS :],
        subscore_decode(member[:SUBSCORE_CHARS]),
        member[SUBSCORE_CHARS : SUBSCORE_CHARS + CLOCK_CHARS],
    )


def next_entry(*, mode: str, stored: tuple[int, int] | None, value: int, sub: int = 0) -> tuple[int, int] | None:
    """The (base, oriented subscore) an entry gets from one submission, or None when it keeps
    ``stored`` (what the prelude's ``entry_next`` does).

    ``value`` and ``sub`` are oriented (negated when higher is better): the amounts for
    increment, the submitted pair otherwise. ``best`` keeps a stored pair that is no worse,
    compared as a whole; an unchanged pair keeps the moment it was first reached.
    """
    old_base, old_sub = stored if stored is not None else (None, None)
    if mode == "increment":
        base, new_sub = (old_base or 0) + value, (old_sub or 0) + sub
    elif mode == "best" and stored is not None and stored <= (value, sub):
        return None
    else:
        base, new_sub = value, sub
    if (base, new_sub) == stored:
        return None
    return base, new_sub


def exact(value: int) -> bool:
    """Whether a base or subscore (a total, say) is one a double holds exactly, and the API accepts."""
    return abs(value) <= MAX_EXACT
