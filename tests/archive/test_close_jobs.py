"""The close-job queue: scheduled by submissions, claimed once, reaped, retried with
backoff, dead-lettered, retried from admin, caught up after a restore."""

from __future__ import annotations

import asyncio
import datetime as dt
import threading

import pytest
from django.conf import settings
from django.contrib.auth.models import Permission
from django.urls import reverse

from archive import services
from archive.models import ArchivedPeriod, ArchivedStanding
from archive.services import close_jobs
from core import keys
from core import redis as site_redis
from core.redis import get_redis, run_sync
from games import periods
from tests.archive.close_helpers import archived_rows, at, board_key, live_rows, ms, pttl, submit_all, zscores
from tests.conftest import clock_at

pytestmark = pytest.mark.django_db(transaction=True)

DAY = "2026-11-20"
DURING = at("2026-11-20T12:00:00+00:00")
DAY_END = at("2026-11-21T00:00:00+00:00")
GRACE = dt.timedelta(seconds=settings.ARCHIVE_GRACE_SECS)
DUE = DAY_END + GRACE
JOB = f"daily:{DAY}"
SECOND = dt.timedelta(seconds=1)


@pytest.fixture
def game(make_game):
    return make_game("tetris", max_submissions_per_minute=0)


def due_jobs() -> dict[str, float]:
    return zscores(keys.close_jobs("tetris.main"))


def claim(now: dt.datetime, limit: int = 10) -> list[services.ClaimedJob]:
    with clock_at(now):
        return run_sync(lambda: services.close_jobs_claim(ref="tetris.main", limit=limit))


def lost_key(key: str) -> str:
    """Where a lost board is kept aside: its own name and hash tag, so on its slot."""
    return f"{key}:lost"


def lose_board(game) -> str:
    """Simulate a board lost with Redis data (kept aside under another name to restore it)."""
    key = board_key(game, "daily", DAY)
    run_sync(lambda: get_redis().rename(key, lost_key(key)))
    run_sync(lambda: get_redis().zrem(keys.boards_index("tetris.main"), key))
    return key


def test_it_schedules_one_job_per_period_at_its_end_plus_grace(game):
    submit_all(game, [("a", 1, None), ("b", 2, None)], DURING)
    submit_all(game, [("a", 3, None)], DURING + dt.timedelta(hours=1))
    grace_ms = settings.ARCHIVE_GRACE_SECS * 1000

    assert due_jobs() == {
        JOB: ms(DAY_END) + grace_ms,
        "weekly:2026-W47": ms(at("2026-11-23T00:00:00+00:00")) + grace_ms,
        "monthly:2026-11": ms(at("2026-12-01T00:00:00+00:00")) + grace_ms,
    }


def test_it_claims_a_job_only_once_it_is_due(game):
    submit_all(game, [("a", 1, None)], DURING)

    assert claim(DUE - dt.timedelta(milliseconds=1)) == []
    [claimed] = claim(DUE)

    assert (claimed.job, claimed.attempts, claimed.token) == (
        JOB,
        0,
        ms(DUE) + services.CLOSE_JOB_VISIBILITY_SECS * 1000,
    )
    assert JOB not in due_jobs()
    assert zscores(keys.close_claims("tetris.main")) == {JOB: claimed.token}


def test_it_hands_each_job_to_one_of_two_claims_made_at_once(game):
    for day in range(1, 21):
        submit_all(game, [("a", day, None)], at(f"2026-10-{day:02d}T12:00:00+00:00"))
    everything = due_jobs().keys()
    assert len(everything) == 20 + 4 + 1  # days, ISO weeks W40-W43, October
    now = at("2026-11-02T00:00:00+00:00")

    async def both() -> tuple[list[services.ClaimedJob], list[services.ClaimedJob]]:
        with clock_at(now):
            return await asyncio.gather(
                services.close_jobs_claim(ref="tetris.main", limit=15),
                services.close_jobs_claim(ref="tetris.main", limit=15),
            )

    first, second = run_sync(both)

    jobs = [c.job for c in first + second]
    assert len(jobs) == len(set(jobs)) and set(jobs) == everything
    assert sorted([len(first), len(second)]) == [10, 15]
    assert due_jobs() == {}


def test_it_archives_once_when_two_workers_run_at_once(game, clock):
    submit_all(game, [(f"p{i}", i, None) for i in range(50)], DURING)
    expected = live_rows(game, "daily", DAY, DUE)
    clock.set(DUE)  # both workers' clock
    results: list[int] = []
    start = threading.Barrier(2)

    def worker(name: str) -> None:
        start.wait()
        results.append(services.close_jobs_run(worker=name))

    threads = [threading.Thread(target=worker, args=(f"w{i}",)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(results) == [0, 1]
    archived = ArchivedPeriod.objects.get()
    assert (archived.status, archived.total) == ("complete", 50)
    assert archived_rows(archived) == expected
    assert ArchivedStanding.objects.count() == 50
    assert due_jobs().keys() == {"weekly:2026-W47", "monthly:2026-11"}
    assert zscores(keys.close_claims("tetris.main")) == {}


def test_it_reaps_an_expired_claim_and_then_archives_the_job(game):
    submit_all(game, [("a", 1, None)], DURING)
    [claimed] = claim(DUE)  # a worker that dies without acking
    visibility = dt.timedelta(seconds=services.CLOSE_JOB_VISIBILITY_SECS)

    with clock_at(DUE + visibility - SECOND):
        assert services.close_jobs_run() == 0  # still claimed
    assert not ArchivedPeriod.objects.exists()
    # The dead worker's late ack (or failure) cannot touch a claim it no longer holds.
    with clock_at(DUE + visibility):
        assert services.close_jobs_run() == 1

    assert ArchivedPeriod.objects.get().status == "complete"
    assert not run_sync(lambda: close_jobs._ack("tetris.main", JOB, claimed.token))
    assert run_sync(lambda: get_redis().hgetall(keys.close_attempts("tetris.main"))) == {}
    assert zscores(keys.close_claims("tetris.main")) == {}


def test_it_dead_letters_a_job_whose_claims_keep_expiring(game):
    submit_all(game, [("a", 1, None)], DURING)
    visibility = dt.timedelta(seconds=services.CLOSE_JOB_VISIBILITY_SECS)
    now = DUE
    for _ in range(services.CLOSE_JOB_MAX_ATTEMPTS):
        assert [c.job for c in claim(now)] == [JOB]
        now += visibility
        with clock_at(now):
            run_sync(lambda: services.close_jobs_reap(ref="tetris.main"))

    assert zscores(keys.close_dead("tetris.main")) == {JOB: ms(now)}
    [dead] = services.close_jobs_dead(board=game.leaderboards.first())
    assert (dead.attempts, dead.error) == (5, "its claim expired: the worker died or hung")


def test_it_retries_with_exponential_backoff_then_dead_letters_and_admin_retries(game, admin_client, clock):
    submit_all(game, [("a", 7, "Ada")], DURING)
    key = lose_board(game)
    now = DUE
    for attempt, backoff_secs in enumerate([30, 60, 120, 240], start=1):
        with clock_at(now):
            assert services.close_jobs_run() == 0
        retry_at = now + dt.timedelta(seconds=backoff_secs)
        assert due_jobs()[JOB] == ms(retry_at)
        assert run_sync(lambda: get_redis().hget(keys.close_attempts("tetris.main"), JOB)) == str(attempt)
        with clock_at(retry_at - dt.timedelta(milliseconds=1)):
            assert services.close_jobs_run() == 0  # not before
        now = retry_at
    with clock_at(now):
        assert services.close_jobs_run() == 0

    assert JOB not in due_jobs() and zscores(keys.close_dead("tetris.main")) == {JOB: ms(now)}
    assert not ArchivedPeriod.objects.exists()  # the missing board wrote nothing
    page = admin_client.get(reverse("admin:archive_close_jobs")).content.decode()
    assert JOB in page and "No daily board 2026-11-20 is in Redis" in page and "1 dead" in page

    run_sync(lambda: get_redis().rename(lost_key(key), key))  # Redis data restored
    clock.set(now)
    response = admin_client.post(
        reverse("admin:archive_close_jobs"), {"board": game.leaderboards.get().pk, "job": JOB}, follow=True
    )
    assert f"Close job {JOB} of tetris/main is due again" in response.content.decode()
    assert JOB in due_jobs() and zscores(keys.close_dead("tetris.main")) == {}

    # Due at once.
    with clock_at(now + SECOND):
        assert services.close_jobs_run() == 1
    assert archived_rows(ArchivedPeriod.objects.get(period="daily")) == [(1, "a", "Ada", 7)]
    assert run_sync(lambda: get_redis().hgetall(keys.close_errors("tetris.main"))) == {}


def test_the_admin_lists_archives_and_their_standings_read_only(game, admin_client):
    submit_all(game, [("a", 7, "<b>Ada</b>"), ("b", 3, None)], DURING)
    with clock_at(DUE):
        services.close_jobs_run()
    archived = ArchivedPeriod.objects.get()

    listing = admin_client.get(reverse("admin:archive_archivedperiod_changelist"), {"status__exact": "complete"})
    page = admin_client.get(reverse("admin:archive_archivedperiod_change", args=[archived.pk])).content.decode()
    standings = admin_client.get(
        reverse("admin:archive_archivedstanding_changelist"), {"archived_period__id__exact": archived.pk}
    )

    assert listing.status_code == 200 and "2 standings" in listing.content.decode()
    assert "Close jobs (and failed ones to retry)" in listing.content.decode()
    assert "&lt;b&gt;Ada&lt;/b&gt;" in page and "<b>Ada</b>" not in page
    assert standings.status_code == 200 and "2 archived standings" in standings.content.decode()
    assert admin_client.get(reverse("admin:archive_archivedperiod_add")).status_code == 403


def test_the_admin_keeps_dead_close_jobs_on_their_own_page_apart_from_the_dead_letters(game, admin_client):
    # The page once sent its reader to the dead letters, a list that never holds close jobs.
    page = admin_client.get(reverse("admin:archive_close_jobs")).content.decode()

    assert "as a <strong>dead job</strong> under its board, until it is retried here" in page
    assert f'href="{reverse("admin:core_deadletter_changelist")}">dead letters</a> are another list' in page


def test_the_admin_explains_a_retry_of_a_job_that_is_not_dead(game, admin_client):
    response = admin_client.post(
        reverse("admin:archive_close_jobs"), {"board": game.leaderboards.get().pk, "job": JOB}, follow=True
    )
    assert "No dead close job daily:2026-11-20 in tetris.main: nothing to retry." in response.content.decode()
    response = admin_client.post(reverse("admin:archive_close_jobs"), {"board": "x", "job": JOB}, follow=True)
    assert "No such leaderboard." in response.content.decode()


def test_the_admin_shows_redis_being_down_as_a_message(game, admin_client, monkeypatch):
    # A Redis that is not there: a closed loopback port, and no cached client for the bridge loop.
    monkeypatch.setattr(settings, "REDIS_URL", "redis://127.0.0.1:1/0")
    run_sync(site_redis.close_redis)
    try:
        page = admin_client.get(reverse("admin:archive_close_jobs"))
        retried = admin_client.post(
            reverse("admin:archive_close_jobs"), {"board": game.leaderboards.get().pk, "job": JOB}, follow=True
        )
    finally:
        run_sync(site_redis.close_redis)
    assert page.status_code == 200
    assert "Redis is unavailable, so the close jobs cannot be shown." in page.content.decode()
    assert retried.status_code == 200 and "Redis is unavailable, so nothing was changed." in retried.content.decode()


def test_catch_up_schedules_boards_without_a_job_and_ignores_complete_archives(game):
    submit_all(game, [("a", 1, None)], DURING)
    submit_all(game, [("a", 1, None)], at("2026-11-19T12:00:00+00:00"))
    with clock_at(at("2026-11-20T00:02:00+00:00")):
        assert services.close_jobs_run() == 1  # the 19th is archived
    expected = due_jobs()
    assert expected.keys() == {JOB, "weekly:2026-W47", "monthly:2026-11"}
    run_sync(lambda: get_redis().delete(keys.close_jobs("tetris.main")))  # a restore without the job ZSETs

    with clock_at(DUE):
        assert services.close_jobs_catch_up() == 3
    assert due_jobs() == expected
    with clock_at(DUE):
        assert services.close_jobs_catch_up() == 0

    # Claimed and dead jobs are left where they are.
    assert [c.job for c in claim(DUE, limit=1)] == [JOB]
    run_sync(lambda: get_redis().zadd(keys.close_dead("tetris.main"), {"weekly:2026-W47": 1}))
    run_sync(lambda: get_redis().zrem(keys.close_jobs("tetris.main"), "weekly:2026-W47"))
    with clock_at(DUE):
        assert services.close_jobs_catch_up() == 0
    assert due_jobs().keys() == {"monthly:2026-11"}


def test_catch_up_finds_boards_by_scanning_when_the_index_is_gone_too(game):
    submit_all(game, [("a", 1, None)], DURING)
    run_sync(lambda: get_redis().delete(keys.close_jobs("tetris.main"), keys.boards_index("tetris.main")))

    with clock_at(DUE):
        assert services.close_jobs_catch_up() == 3
    with clock_at(DUE):
        assert services.close_jobs_run() == 1
    assert ArchivedPeriod.objects.get().total == 1


def test_catch_up_reschedules_a_complete_archive_whose_board_never_got_its_expiry(game):
    submit_all(game, [("a", 1, None)], DURING)
    with clock_at(DUE):
        services.close_jobs_run()
    key = board_key(game, "daily", DAY)
    run_sync(lambda: get_redis().persist(key))  # the process died between completion and the expiry
    run_sync(lambda: get_redis().zadd(keys.boards_index("tetris.main"), {key: "+inf"}))

    with clock_at(DUE):
        assert services.close_jobs_catch_up() == 1
    with clock_at(DUE):
        assert services.close_jobs_run() == 1

    assert pttl(key) > 0
    assert ArchivedPeriod.objects.get().status == "complete"


def test_it_sets_the_expiry_only_once_the_archive_is_complete(game):
    submit_all(game, [(f"p{i}", i, None) for i in range(3)], DURING)
    key = board_key(game, "daily", DAY)
    observed: list[int] = []

    with clock_at(DUE):
        services.period_archive(
            board=game.leaderboards.first(),
            period="daily",
            period_id=DAY,
            chunk_size=1,
            after_chunk=lambda i: observed.append(pttl(key)),
        )

    assert observed == [-1, -1, -1]
    assert pttl(key) > 0
    assert periods.parse("daily", DAY, "UTC").ends_at == ArchivedPeriod.objects.get().ends_at


def test_the_close_jobs_page_lets_only_those_allowed_to_change_archives_retry(game, client, django_user_model):
    staff = django_user_model.objects.create_user("ops", password="pw", is_staff=True)
    client.force_login(staff)
    assert client.get(reverse("admin:archive_close_jobs")).status_code == 403
    staff.user_permissions.add(Permission.objects.get(codename="view_archivedperiod"))
    run_sync(lambda: get_redis().zadd(keys.close_dead("tetris.main"), {JOB: ms(DUE)}))

    page = client.get(reverse("admin:archive_close_jobs"))
    retried = client.post(reverse("admin:archive_close_jobs"), {"board": game.leaderboards.get().pk, "job": JOB})

    assert page.status_code == 200 and JOB in page.content.decode() and 'value="Retry"' not in page.content.decode()
    assert retried.status_code == 403
    assert zscores(keys.close_dead("tetris.main")) == {JOB: ms(DUE)}
