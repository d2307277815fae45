from __future__ import annotations

import datetime as dt

import pytest

from games import periods

UTC = dt.UTC


def at(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text)


def length(period: periods.Period) -> dt.timedelta:
    """How long a bounded period runs (every kind but all-time has both ends)."""
    assert period.starts_at is not None and period.ends_at is not None
    return period.ends_at - period.starts_at


def test_it_names_periods_in_the_game_time_zone():
    # 23:30 UTC on the 22nd is already the 23rd in Paris (UTC+1 in November).
    now = at("2026-11-22T23:30:00+00:00")
    assert periods.current("daily", "UTC", now).id == "2026-11-22"
    assert periods.current("daily", "Europe/Paris", now).id == "2026-11-23"
    assert periods.current("weekly", "Europe/Paris", now).id == "2026-W48"
    assert periods.current("weekly", "UTC", now).id == "2026-W47"
    assert periods.current("monthly", "Europe/Paris", now).id == "2026-11"
    assert periods.current("all-time", "Europe/Paris", now) == periods.Period("all-time", "all-time", None, None)


def test_it_ends_a_day_at_local_midnight():
    daily = periods.current("daily", "Europe/Paris", at("2026-11-22T12:00:00+00:00"))
    assert daily.starts_at == at("2026-11-21T23:00:00+00:00")
    assert daily.ends_at == at("2026-11-22T23:00:00+00:00")


def test_it_makes_dst_days_23_and_25_hours_long():
    spring = periods.current("daily", "Europe/Paris", at("2026-03-29T12:00:00+00:00"))
    autumn = periods.current("daily", "Europe/Paris", at("2026-10-25T12:00:00+00:00"))
    assert length(spring) == dt.timedelta(hours=23)
    assert length(autumn) == dt.timedelta(hours=25)
    assert autumn.starts_at == at("2026-10-24T22:00:00+00:00")


def test_it_starts_a_day_at_the_first_local_time_where_dst_skips_midnight():
    # Chile moves clocks from 00:00 to 01:00 on the first Sunday of September.
    day = periods.current("daily", "America/Santiago", at("2026-09-06T12:00:00+00:00"))
    assert day.id == "2026-09-06"
    assert day.starts_at is not None
    assert day.starts_at.astimezone(periods.zone("America/Santiago")).date() == dt.date(2026, 9, 6)
    assert length(day) == dt.timedelta(hours=23)


def test_it_uses_iso_weeks_across_the_new_year():
    # 2027-01-01 is a Friday: it belongs to ISO week 53 of 2026, which starts Monday 2026-12-28.
    week = periods.current("weekly", "UTC", at("2027-01-01T10:00:00+00:00"))
    assert week.id == "2026-W53"
    assert week.starts_at == at("2026-12-28T00:00:00+00:00")
    assert week.ends_at == at("2027-01-04T00:00:00+00:00")


def test_it_rolls_months_over_december():
    month = periods.current("monthly", "UTC", at("2026-12-31T23:59:59+00:00"))
    assert (month.id, month.ends_at) == ("2026-12", at("2027-01-01T00:00:00+00:00"))


@pytest.mark.parametrize(
    ("kind", "period_id"),
    [("daily", "2026-11-22"), ("weekly", "2026-W47"), ("monthly", "2026-11"), ("all-time", "all-time")],
)
def test_it_parses_what_it_names(kind, period_id):
    now = at("2026-11-22T12:00:00+00:00")
    assert periods.parse(kind, period_id, "Europe/Paris") == periods.current(kind, "Europe/Paris", now)


@pytest.mark.parametrize(
    ("kind", "period_id"),
    [
        ("daily", "2026-02-30"),
        ("daily", "2026-11-22x"),
        ("weekly", "2026-W60"),
        ("weekly", "2025-W53"),
        ("monthly", "2026-13"),
        ("monthly", "2026-1"),
        ("all-time", "forever"),
        ("yearly", "2026"),
    ],
)
def test_it_rejects_ids_that_name_no_period(kind, period_id):
    with pytest.raises(periods.InvalidPeriod):
        periods.parse(kind, period_id, "UTC")
