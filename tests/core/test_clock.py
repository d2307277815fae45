"""The one text form of an instant."""

from __future__ import annotations

import datetime as dt

from core import clock


def test_it_writes_every_instant_as_rfc3339_utc_milliseconds() -> None:
    assert clock.iso(dt.datetime(2026, 11, 22, 10, 51, 32, 598765, tzinfo=dt.UTC)) == "2026-11-22T10:51:32.598Z"
    # A season an admin set in the year 145 (schemathesis found it): the year stays four digits.
    assert clock.iso(dt.datetime(145, 4, 5, 1, 37, 10, tzinfo=dt.UTC)) == "0145-04-05T01:37:10.000Z"
    paris = dt.timezone(dt.timedelta(hours=1))
    assert clock.iso(dt.datetime(2026, 1, 1, 0, 30, tzinfo=paris)) == "2025-12-31T23:30:00.000Z"
