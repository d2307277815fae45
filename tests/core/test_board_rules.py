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


@pytest.mark.parametrize("ties", board_rules.TIES)
def test_it_lets_every_tie_rule_keep_every_window_at_any_range(ties):
    """No bounds and no season needed: the entries keep every score exact (core/lua/prelude/entries.lua)."""
    board_rules.windows_check(list(board_rules.WINDOWS), cron="0 18 * * FRI", tz=PARIS, starts_at=None, ends_at=None)
    assert board_rules.prefix_chars(ties) == {"shared": 0, "earliest": 16, "subscore": 31}[ties]


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


@pytest.mark.parametrize(
    ("cron", "closest"),
    [("7,37 * * * *", 30), ("0,59 9 * * *", 59), ("*/5 18 * * FRI", 5), ("0-1 0 1 1 *", 1)],
)
def test_it_refuses_a_cron_more_often_than_hourly_from_its_minute_field(cron: str, closest: int) -> None:
    # Read from the field, whatever the zone: no walk over years of its schedule first.
    for zone in ("UTC", "Europe/Paris", "Australia/Lord_Howe", "Asia/Kathmandu"):
        with pytest.raises(board_rules.RuleError) as refused:
            board_rules.windows_check(["custom"], cron=cron, tz=ZoneInfo(zone), starts_at=None, ends_at=None)
        assert refused.value.field == "cron"
        assert f"every {closest} minutes or less" in str(refused.value)


def test_it_accepts_a_cron_of_one_minute_an_hour_or_rarer() -> None:
    for cron in ("13 * * * *", "0 */2 * * *", "0 0 29 2 *"):
        board_rules.windows_check(["custom"], cron=cron, tz=PARIS, starts_at=None, ends_at=None)


def test_it_accepts_a_cron_of_one_minute_an_hour_in_any_zone_a_dst_night_included() -> None:
    # New York's spring night skips 02:00-03:00, so "30 1,2" fires at 01:30 and at 03:00 (cron's
    # reading of 02:30 that night): one 30-minute period a year, as that day's daily window lasts
    # 23 hours. The minimum is an hour of the zone's clock, as the daily window's is its day.
    for zone in ("America/New_York", "Australia/Lord_Howe", "Asia/Kathmandu", "UTC"):
        for cron in ("30 1,2 * * *", "7 * * * *", "59 23 * * *"):
            board_rules.windows_check(["custom"], cron=cron, tz=ZoneInfo(zone), starts_at=None, ends_at=None)
