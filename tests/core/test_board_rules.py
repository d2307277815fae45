"""A board's rules: cron windows in a zone across DST, the range ties 'earliest' keeps
exact, and how each format shows a score."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest

from core import board_rules

PARIS = ZoneInfo("Europe/Paris")


def utc(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC)


def test_it_finds_the_next_resets_of_a_cron_in_local_time_across_a_dst_change():
    # Paris leaves summer time on Sunday 2026-10-25: 18:00 is 16:00Z before, 17:00Z after.
    resets = board_rules.cron_next("0 18 * * FRI", PARIS, utc("2026-10-20T00:00"), 3)
    assert resets == [utc("2026-10-23T16:00"), utc("2026-10-30T17:00"), utc("2026-11-06T17:00")]


def test_it_finds_the_reset_a_period_started_at_including_the_reset_instant_itself():
    assert board_rules.cron_previous("0 18 * * FRI", PARIS, utc("2026-10-30T17:00")) == utc("2026-10-30T17:00")
    assert board_rules.cron_previous("0 18 * * FRI", PARIS, utc("2026-10-30T16:59:59.999")) == utc("2026-10-23T16:00")


def test_it_measures_the_longest_period_of_a_cron_with_the_dst_hour():
    shortest, longest = board_rules.cron_gaps_ms("0 18 * * FRI", PARIS)
    week_ms = 7 * 24 * 3_600_000
    assert (shortest, longest) == (week_ms - 3_600_000, week_ms + 3_600_000)


@pytest.mark.parametrize(
    ("windows", "limit"),
    [(["daily"], 2**26 - 1), (["weekly"], 2**23 - 1), (["monthly"], 2**21 - 1), (["daily", "monthly"], 2**21 - 1)],
)
def test_it_keeps_earliest_ties_exact_within_the_range_of_the_longest_window(windows, limit):
    found = board_rules.earliest_check(
        windows, cron="", tz=PARIS, starts_at=None, ends_at=None, min_score=0, max_score=limit
    )
    assert found == limit
    # The sort key of the largest score at the end of the longest period is still an exact double.
    bits = board_rules.tie_bits(
        max(board_rules.longest_period_ms(w, cron="", tz=PARIS, starts_at=None, ends_at=None) or 0 for w in windows)
    )
    key = limit * 2**bits + 2**bits - 1
    assert float(key) == key and key < 2**53
    with pytest.raises(board_rules.RuleError, match=f"within ±{limit:,}"):
        board_rules.earliest_check(
            windows, cron="", tz=PARIS, starts_at=None, ends_at=None, min_score=-(limit + 1), max_score=0
        )


def test_it_lets_an_all_time_window_have_earliest_ties_only_within_a_season():
    with pytest.raises(board_rules.RuleError, match="all-time window never ends"):
        board_rules.earliest_check(
            ["all-time"], cron="", tz=PARIS, starts_at=None, ends_at=None, min_score=0, max_score=10
        )
    season = dict(starts_at=utc("2026-01-01T00:00"), ends_at=utc("2026-04-01T00:00"))
    assert board_rules.earliest_check(["all-time"], cron="", tz=PARIS, min_score=0, max_score=10, **season) > 10


@pytest.mark.parametrize(
    ("fmt", "value", "shown"),
    [
        ("integer", 1234567, "1,234,567"),
        ("integer", -5, "-5"),
        ("time_ms", 81999, "1:21.999"),
        ("time_ms", 5, "0:00.005"),
        ("time_ms", 3723004, "1:02:03.004"),
        ("time_ms", -1500, "-0:01.500"),
        ("decimal:2", 123456, "1,234.56"),
        ("decimal:3", 5, "0.005"),
        ("decimal:1", -15, "-1.5"),
    ],
)
def test_it_shows_a_score_in_its_boards_format(fmt, value, shown):
    assert board_rules.format_score(value, fmt) == shown


@pytest.mark.parametrize("fmt", ["hex", "decimal:0", "decimal:7", "decimal", "TIME_MS", ""])
def test_it_refuses_an_unknown_format(fmt):
    with pytest.raises(board_rules.RuleError, match="is not a format"):
        board_rules.format_check(fmt)
