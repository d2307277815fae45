"""Submissions on either side of a period boundary (UTC, and Europe/Paris across both DST
changes): each lands in exactly one board per period, and the earlier period's close
job falls due at its end + grace and archives only what was submitted before the end.

(The period arithmetic itself is tests/games/test_periods.py's; this is the submit
path and the close job.)
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict

import pytest
from django.conf import settings

from archive import services
from archive.models import ArchivedPeriod
from core import keys
from core.config import GameConfig
from core.redis import get_redis, run_sync
from games import periods
from tests import redis_replies
from tests.archive.close_helpers import archived_rows, at, ms, submit_all, zscores
from tests.conftest import clock_at

pytestmark = pytest.mark.django_db(transaction=True)

MS = dt.timedelta(milliseconds=1)
GRACE = dt.timedelta(seconds=settings.ARCHIVE_GRACE_SECS)

CASES = [
    # UTC: midnight, ISO Monday, first of the month.
    ("UTC", "daily", "2026-11-21T00:00:00+00:00", "2026-11-20", "2026-11-21"),
    ("UTC", "weekly", "2026-11-23T00:00:00+00:00", "2026-W47", "2026-W48"),
    ("UTC", "monthly", "2026-12-01T00:00:00+00:00", "2026-11", "2026-12"),
    # Paris, clocks forward on Sunday 2026-03-29: that day (and ISO week 13) ends at
    # 22:00 UTC after 23 hours; March ends at local midnight in summer time.
    ("Europe/Paris", "daily", "2026-03-28T23:00:00+00:00", "2026-03-28", "2026-03-29"),
    ("Europe/Paris", "daily", "2026-03-29T22:00:00+00:00", "2026-03-29", "2026-03-30"),
    ("Europe/Paris", "weekly", "2026-03-29T22:00:00+00:00", "2026-W13", "2026-W14"),
    ("Europe/Paris", "monthly", "2026-03-31T22:00:00+00:00", "2026-03", "2026-04"),
    # Paris, clocks back on Sunday 2026-10-25: that day (and week 43) ends at 23:00 UTC
    # after 25 hours; October ends at local midnight in winter time.
    ("Europe/Paris", "daily", "2026-10-24T22:00:00+00:00", "2026-10-24", "2026-10-25"),
    ("Europe/Paris", "daily", "2026-10-25T23:00:00+00:00", "2026-10-25", "2026-10-26"),
    ("Europe/Paris", "weekly", "2026-10-25T23:00:00+00:00", "2026-W43", "2026-W44"),
    ("Europe/Paris", "monthly", "2026-10-31T23:00:00+00:00", "2026-10", "2026-11"),
]


def boards_by_kind(slug: str) -> dict[str, dict[str, set[str]]]:
    """kind -> period id -> the players on that board, from every board key in Redis."""

    async def scan() -> dict[str, dict[str, set[str]]]:
        client = get_redis()
        found: dict[str, dict[str, set[str]]] = defaultdict(dict)
        async for key in client.scan_iter(match=keys.board_pattern(keys.board_ref(slug, "main")), _type="zset"):
            parsed = keys.parse_board(key)
            if parsed is not None and parsed[1] in periods.PERIODS:
                found[parsed[1]][parsed[2]] = set(await redis_replies.members(key))
        return found

    return run_sync(scan)


@pytest.mark.parametrize(("tz", "kind", "boundary", "old_id", "new_id"), CASES)
def test_it_rolls_over_at_the_boundary_and_closes_the_earlier_period(make_game, tz, kind, boundary, old_id, new_id):
    game = make_game("tetris", timezone_name=tz, max_submissions_per_minute=0)
    end = at(boundary)
    submit_all(game, [("early", 10, None)], end - MS)
    submit_all(game, [("late", 20, None)], end)

    boards = boards_by_kind("tetris")
    assert boards[kind] == {old_id: {"early"}, new_id: {"late"}}
    for each_kind in GameConfig.from_model(game, "0").boards[0].windows:
        for player in ("early", "late"):
            holding = [period_id for period_id, players in boards[each_kind].items() if player in players]
            assert len(holding) == 1, (each_kind, player, holding)
    assert boards["all-time"] == {"all-time": {"early", "late"}}

    due = zscores(keys.close_jobs("tetris.main"))
    assert due[f"{kind}:{old_id}"] == ms(end + GRACE)
    new_ends_at_ms = periods.parse(kind, new_id, tz).ends_at_ms
    assert new_ends_at_ms is not None
    assert due[f"{kind}:{new_id}"] == new_ends_at_ms + settings.ARCHIVE_GRACE_SECS * 1000

    with clock_at(end + GRACE - MS):
        services.close_jobs_run()
    assert not ArchivedPeriod.objects.filter(period=kind, period_id=old_id).exists()
    with clock_at(end + GRACE):
        services.close_jobs_run()

    archived = ArchivedPeriod.objects.get(period=kind, period_id=old_id)
    old = periods.parse(kind, old_id, tz)
    assert (archived.status, archived.ends_at, archived.starts_at) == ("complete", end, old.starts_at)
    assert archived_rows(archived) == [(1, "early", "early", 10)]
    assert not ArchivedPeriod.objects.filter(period=kind, period_id=new_id).exists()
