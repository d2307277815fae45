"""The time suite's one stack (``make test-time``): every process of the product on a clock the
tests move forward, shared by the whole session (tests/time/stack.py).

The clock starts three hours before the next local midnight in Asia/Kolkata (UTC+05:30) that
ends a day, an ISO week and a month at once (the next 1st of a month that is a Monday), a few
days past the real date; each test moves it forward to the boundary it crosses, never back.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from tests.time.stack import Stack, running_stack

# A zone whose midnights are not UTC's, and not even on a whole hour.
ZONE = "Asia/Kolkata"
# How far before the boundary the stack starts: longer than it takes to start and set up.
START_AHEAD = dt.timedelta(hours=3)
# The boundary is at least this far past the real date.
BOUNDARY_AFTER = dt.timedelta(days=2)


def month_start_on_a_monday(after: dt.datetime, zone: str = ZONE) -> dt.datetime:
    """The first local midnight after ``after`` that starts a month on a Monday (so a day, an
    ISO week and a month end together), in UTC."""
    tz = ZoneInfo(zone)
    day = after.astimezone(tz).date().replace(day=1)
    while True:
        day = (day + dt.timedelta(days=32)).replace(day=1)
        if day.weekday() == 0:
            return dt.datetime.combine(day, dt.time(), tzinfo=tz).astimezone(dt.UTC)


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    boundary = month_start_on_a_monday(dt.datetime.now(dt.UTC) + BOUNDARY_AFTER)
    with running_stack(Path(tmp_path_factory.mktemp("time-stack")), boundary - START_AHEAD) as started:
        yield started
