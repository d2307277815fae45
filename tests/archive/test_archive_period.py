"""period_archive and `manage.py archive_period`: chunked, idempotent, exactly the board at close."""

from __future__ import annotations

from io import StringIO

import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError

from archive import services
from archive.models import ArchivedPeriod, ArchivedStanding
from core import keys
from core.clock import now as clock_now
from core.errors import ServiceError
from core.models import Game
from core.redis import get_redis, run_sync
from games import periods
from games import services as game_services
from tests.archive.close_helpers import (
    archived_rows,
    at,
    board_key,
    live_rows,
    ms,
    pttl,
    submit_all,
    zscores,
)
from tests.conftest import clock_at

pytestmark = pytest.mark.django_db(transaction=True)

DAY = "2026-11-20"
DURING = at("2026-11-20T12:00:00+00:00")
CLOSED = at("2026-11-21T00:02:00+00:00")


@pytest.fixture
def game(make_game) -> Game:
    return make_game("tetris", max_submissions_per_minute=0)


class Crash(Exception):
    pass


def crash_after_first(index: int) -> None:
    if index == 0:
        raise Crash


def test_it_archives_a_big_board_in_chunks_exactly_as_the_live_reads_said(game):
    # Three players per score: tie groups straddle the chunk boundaries (5,000 is not a multiple of 3).
    submit_all(game, [(f"p{i:05d}", i // 3, f"Player {i}" if i % 2 else None) for i in range(12_000)], DURING)
    before = live_rows(game, "daily", DAY, CLOSED)
    seen: list[tuple[int, int]] = []

    with clock_at(CLOSED):
        archived = services.period_archive(
            board=game.leaderboards.first(),
            period="daily",
            period_id=DAY,
            progress=lambda done, total: seen.append((done, total)),
        )

    assert seen == [(5000, 12_000), (10_000, 12_000), (12_000, 12_000)]
    assert (archived.status, archived.total, archived.archived_at) == ("complete", 12_000, CLOSED)
    period = periods.parse("daily", DAY, "UTC")
    assert (archived.starts_at, archived.ends_at) == (period.starts_at, period.ends_at)
    assert archived_rows(archived) == before
    assert before[:4] == [
        (1, "p11997", "Player 11997", 3999),
        (1, "p11998", "p11998", 3999),
        (1, "p11999", "Player 11999", 3999),
        (4, "p11994", "p11994", 3998),
    ]
    assert len({row.run for row in ArchivedStanding.objects.only("run")}) == 1


def test_it_ends_with_identical_rows_when_re_run_after_a_crash(game):
    submit_all(game, [(f"p{i}", i % 4, f"P{i}") for i in range(10)], DURING)
    before = live_rows(game, "daily", DAY, CLOSED)
    key = board_key(game, "daily", DAY)

    with pytest.raises(Crash), clock_at(CLOSED):
        services.period_archive(
            board=game.leaderboards.first(), period="daily", period_id=DAY, chunk_size=4, after_chunk=crash_after_first
        )

    archived = ArchivedPeriod.objects.get()
    assert (archived.status, ArchivedStanding.objects.count()) == ("archiving", 4)
    assert pttl(key) == -1  # never left to expire unarchived
    assert zscores(keys.boards_index("tetris.main"))[key] == float("inf")

    with clock_at(CLOSED):
        archived = services.period_archive(board=game.leaderboards.first(), period="daily", period_id=DAY, chunk_size=4)

    assert (archived.status, archived.total) == ("complete", 10)
    assert archived_rows(archived) == before
    assert ArchivedStanding.objects.count() == 10
    retention_ms = settings.PERIOD_RETENTION_SECS * 1000
    assert 0 < pttl(key) <= retention_ms
    assert zscores(keys.boards_index("tetris.main"))[key] == ms(CLOSED) + retention_ms


def test_it_leaves_a_complete_archive_as_it_is(game):
    submit_all(game, [("a", 5, "Ada"), ("b", 3, None)], DURING)
    with clock_at(CLOSED):
        first = services.period_archive(board=game.leaderboards.first(), period="daily", period_id=DAY)
    rows = archived_rows(first)
    runs = set(ArchivedStanding.objects.values_list("run", flat=True))
    # A crash between completion and the expiry: the re-run only applies the expiry.
    run_sync(lambda: get_redis().persist(board_key(game, "daily", DAY)))

    with clock_at(at("2026-11-21T09:00:00+00:00")):
        again = services.period_archive(board=game.leaderboards.first(), period="daily", period_id=DAY)

    assert (again.pk, again.archived_at, archived_rows(again)) == (first.pk, CLOSED, rows)
    assert set(ArchivedStanding.objects.values_list("run", flat=True)) == runs
    assert pttl(board_key(game, "daily", DAY)) > 0


def test_it_snapshots_an_open_period_and_the_close_job_archives_the_final_state_over_it(game):
    submit_all(game, [("a", 5, "Ada"), ("b", 3, None), ("c", 9, "Cy")], DURING)
    with pytest.raises(ServiceError) as refused, clock_at(DURING):
        services.period_archive(board=game.leaderboards.first(), period="daily", period_id=DAY)
    assert (refused.value.status, refused.value.code) == (409, "period_open")

    with clock_at(DURING):
        snapshot = services.period_archive(board=game.leaderboards.first(), period="daily", period_id=DAY, force=True)

    assert (snapshot.status, snapshot.total) == ("snapshot", 3)
    assert pttl(board_key(game, "daily", DAY)) == -1
    later = at("2026-11-20T18:00:00+00:00")
    submit_all(game, [("b", 11, "Bea"), ("d", 1, None)], later)
    with clock_at(later):
        game_services.player_set_hidden(game=game, player_id="c", hidden=True)
    final = live_rows(game, "daily", DAY, CLOSED)

    with clock_at(CLOSED):
        assert services.close_jobs_run() == 1  # the daily job (the week and month go on)

    archived = ArchivedPeriod.objects.get(period="daily")
    assert (archived.pk, archived.status, archived.total) == (snapshot.pk, "complete", 3)
    assert archived_rows(archived) == final == [(1, "b", "Bea", 11), (2, "a", "Ada", 5), (3, "d", "d", 1)]
    assert pttl(board_key(game, "daily", DAY)) > 0


def test_it_archives_a_board_emptied_by_hiding_as_an_empty_period(game):
    submit_all(game, [("a", 5, None)], DURING)
    with clock_at(DURING):
        game_services.player_set_hidden(game=game, player_id="a", hidden=True)
    stash = keys.hidden_stash(board_key(game, "daily", DAY))

    with clock_at(CLOSED):
        archived = services.period_archive(board=game.leaderboards.first(), period="daily", period_id=DAY)

    assert (archived.status, archived.total) == ("complete", 0)
    assert pttl(stash) > 0  # the stash expires with the board


def test_it_refuses_what_it_cannot_archive_and_changes_nothing(game):
    cases = [
        ("all-time", "all-time", 422, "not_archived"),
        ("yearly", "2026", 422, "invalid"),
        ("daily", "2026-13-01", 422, "invalid"),
        ("daily", "2026-11-19", 404, "board_missing"),  # never written
    ]
    for period, period_id, status, code in cases:
        with pytest.raises(ServiceError) as refused, clock_at(CLOSED):
            services.period_archive(board=game.leaderboards.first(), period=period, period_id=period_id)
        assert (refused.value.status, refused.value.code) == (status, code), period_id
    assert not ArchivedPeriod.objects.exists()


def test_it_refuses_a_second_run_while_one_holds_the_period(game):
    submit_all(game, [("a", 5, None), ("b", 4, None)], DURING)
    refusals: list[ServiceError] = []

    def meanwhile(index: int) -> None:
        try:
            with clock_at(CLOSED):
                services.period_archive(board=game.leaderboards.first(), period="daily", period_id=DAY)
        except ServiceError as error:
            refusals.append(error)

    with clock_at(CLOSED):
        archived = services.period_archive(
            board=game.leaderboards.first(), period="daily", period_id=DAY, chunk_size=1, after_chunk=meanwhile
        )

    assert [e.code for e in refusals] == ["archive_busy", "archive_busy"]
    assert (archived.status, archived.total) == ("complete", 2)
    assert not run_sync(lambda: get_redis().exists(keys.archive_lock("tetris.main", "daily", DAY)))


def test_it_notices_a_board_that_changed_under_the_read_and_archives_it_next_time(game):
    submit_all(game, [(p, s, None) for p, s in [("a", 9), ("b", 8), ("c", 7), ("d", 6)]], DURING)

    def hide_a(index: int) -> None:
        if index == 0:
            with clock_at(CLOSED):
                game_services.player_set_hidden(game=game, player_id="a", hidden=True)

    with pytest.raises(ServiceError) as changed, clock_at(CLOSED):
        services.period_archive(
            board=game.leaderboards.first(), period="daily", period_id=DAY, chunk_size=2, after_chunk=hide_a
        )
    assert changed.value.code == "board_changed"
    assert pttl(board_key(game, "daily", DAY)) == -1

    with clock_at(CLOSED):
        archived = services.period_archive(board=game.leaderboards.first(), period="daily", period_id=DAY, chunk_size=2)
    assert [r[1] for r in archived_rows(archived)] == ["b", "c", "d"]


# --------------------------------------------------------------------------- the command


def command(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("archive_period", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_the_command_archives_with_a_progress_bar_and_is_idempotent(game, clock):
    submit_all(game, [(f"p{i}", i, None) for i in range(10)], DURING)
    clock.set(CLOSED)

    out, err = command("tetris", "daily", DAY, "--chunk-size", "3")

    assert out == f"Archived tetris/main daily {DAY}: 10 standings.\n"
    lines = err.splitlines()
    assert lines[0].startswith(f"tetris/main daily {DAY} [") and lines[0].endswith("] 3/10 (30%)")
    assert lines[-1].endswith("] 10/10 (100%)") and len(lines) == 4
    assert archived_rows(ArchivedPeriod.objects.get())[0] == (1, "p9", "p9", 9)

    out, err = command("tetris", "daily", DAY)
    assert (out, err) == (f"tetris/main daily {DAY} was already archived (10 standings); nothing to do.\n", "")


def test_the_command_snapshots_an_open_period_only_when_forced(game):
    today = periods.current("daily", "UTC", clock_now()).id
    submit_all(game, [("a", 1, None)], clock_now())
    with pytest.raises(CommandError, match=rf"The daily period {today} is still open .*force a snapshot"):
        command("tetris", "daily", today)

    out, _ = command("tetris", "daily", today, "--force")

    assert out.startswith(f"Snapshot of tetris/main daily {today}: 1 standing; the period is still open")
    assert ArchivedPeriod.objects.get().status == "snapshot"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("nope", "daily", DAY), "No game 'nope'."),
        (("tetris", "yearly", "2026"), "Unknown window 'yearly'; use one of daily, weekly, monthly, all-time, custom."),
        (("tetris", "all-time", "all-time"), "The all-time board never ends, so it is never archived."),
        (("tetris", "weekly", "2026-W60"), "'2026-W60' is not a weekly period id."),
        (("tetris", "daily", "2026-11-19"), "No daily board 2026-11-19 is in Redis and it was never archived"),
        (("tetris", "daily", DAY, "--chunk-size", "0"), "The chunk size must be at least 1."),
    ],
)
def test_the_command_explains_what_it_refuses(game, clock, args, message):
    clock.set(CLOSED)
    with pytest.raises(CommandError) as refused:
        command(*args)
    assert str(refused.value).startswith(message)
    assert not ArchivedPeriod.objects.exists()
