"""The background's work sets (core/worksets.py): the drain and the close-job run visit only the
boards with work, so an idle board costs them nothing, and no mark is ever lost, whatever the
interleaving of writers and consumers; the sweep marks again what a crash left unmarked."""

from __future__ import annotations

import datetime as dt
import itertools
import random
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.conf import settings
from django.db import OperationalError, connection
from django.test.utils import CaptureQueriesContext

from archive import ledger, services
from archive.models import ArchivedPeriod, ScoreEvent
from archive.services import catch_up
from core import keys, worksets
from core import services as core_services
from core.config import BoardConfig, GameConfig
from core.models import Game
from core.redis import get_redis, run_sync
from games import periods
from games import services as game_services
from moderation import services as moderation
from tests.archive.close_helpers import at, ms, submit_all, zscores
from tests.conftest import clock_at

pytestmark = pytest.mark.django_db(transaction=True)

DAY = "2026-11-20"
DURING = at("2026-11-20T12:00:00+00:00")
DAY_END = at("2026-11-21T00:00:00+00:00")
GRACE_MS = settings.ARCHIVE_GRACE_SECS * 1000
DUE = DAY_END + dt.timedelta(milliseconds=GRACE_MS)
REF = "tetris.main"


@pytest.fixture
def game(make_game: Callable[..., Game]) -> Game:
    return make_game("tetris", max_submissions_per_minute=0)


def add_boards(game: Game, count: int) -> list[str]:
    """More boards b0.. of the game (the fixture's is 'main'); returns their refs."""
    for i in range(count):
        core_services.leaderboard_create(game=game, slug=f"b{i}", name=f"Board {i}")
    return [keys.board_ref(game.slug, f"b{i}") for i in range(count)]


def submit_to(game: Game, boards: list[str], now: dt.datetime = DURING, player: str = "a", score: int = 1) -> None:
    config = GameConfig.from_model(Game.objects.prefetch_related("leaderboards").get(pk=game.pk), "0")
    items = [game_services.Submission(player, score, leaderboard=board) for board in boards]
    with clock_at(now):
        results = run_sync(lambda: game_services.score_submit_many(game=config, items=items))
    assert all(isinstance(r, game_services.Submitted) for r in results), results


def marked() -> dict[str, float]:
    return zscores(keys.work_ledger())


def close_index() -> dict[str, float]:
    return zscores(keys.work_close_due())


def redis_commands() -> int:
    return int(run_sync(lambda: get_redis().info("stats"))["total_commands_processed"])


def forget_marks() -> None:
    """What a process killed between a board's script and its marks leaves: work, no marks."""
    run_sync(lambda: get_redis().delete(keys.work_ledger(), keys.work_close_due(), keys.work_close_dead()))


# --------------------------------------------------------------------------- marks


def test_it_marks_a_written_board_for_the_drain_and_at_its_first_close(game: Game) -> None:
    submit_all(game, [("a", 1, None)], DURING)

    assert marked() == {REF: ms(DURING)}
    # The day ends first (weekly and monthly later; all-time never).
    assert close_index() == {REF: ms(DAY_END) + GRACE_MS}
    submit_all(game, [("b", 1, None)], DURING + dt.timedelta(hours=1))
    assert marked() == {REF: ms(DURING)}  # a mark keeps its first time
    assert close_index() == {REF: ms(DAY_END) + GRACE_MS}


def test_the_earliest_close_follows_the_clock_across_a_period_end(game: Game) -> None:
    board = BoardConfig.from_model(game.leaderboards.get(), game)
    just_before = DAY_END - dt.timedelta(milliseconds=1)

    def close(at_: dt.datetime) -> int | None:
        return worksets._earliest_close(board, at_, periods.board_current)

    assert close(DURING) == close(just_before) == ms(DAY_END) + GRACE_MS
    assert close(DAY_END) == ms(DAY_END + dt.timedelta(days=1)) + GRACE_MS
    assert close(DURING) == ms(DAY_END) + GRACE_MS  # an import of the past: computed again
    all_time = BoardConfig.from_model(game.leaderboards.get(), game)
    all_time = type(all_time)(**{**all_time.__dict__, "windows": ("all-time",)})
    assert worksets._earliest_close(all_time, DURING, periods.board_current) is None


def test_a_correction_and_an_erasure_mark_the_board_for_the_drain(game: Game) -> None:
    submit_all(game, [("a", 5, None)], DURING)
    with clock_at(DURING):
        ledger.ledger_drain()
    assert marked() == {}

    with clock_at(DURING):
        ledger.score_correct(board=game.leaderboards.get(), player_id="a", value=9, reason="typo")
    assert REF in marked()
    with clock_at(DURING):
        assert ledger.ledger_drain() == 1
        moderation.player_erase(game=game, player_id="a", reason="asked")
    assert REF in marked()
    with clock_at(DURING):
        assert ledger.ledger_drain() == 1
    assert marked() == {}
    assert list(ScoreEvent.objects.values_list("kind", flat=True)) == []  # the erasure took its rows


# --------------------------------------------------------------------------- idle boards cost nothing


def test_an_idle_run_costs_the_same_with_one_board_or_sixty(game: Game) -> None:
    def idle_cost() -> tuple[int, int]:
        with CaptureQueriesContext(connection) as queries:
            before = redis_commands()
            with clock_at(DURING):
                assert ledger.ledger_drain() == 0
                assert services.close_jobs_run() == 0
            used = redis_commands() - before - 1  # the INFO itself
        return used, len(queries)

    submit_all(game, [("a", 1, None)], DURING)
    with clock_at(DURING):
        assert ledger.ledger_drain() == 1
    one = idle_cost()
    refs = add_boards(game, 59)
    submit_to(game, [keys.split_ref(ref)[1] for ref in refs])
    with clock_at(DURING):
        assert ledger.ledger_drain() == 59
    sixty = idle_cost()

    # One read of each work set, and no database query at all.
    assert one == sixty == (2, 0)


def test_the_close_run_visits_only_the_boards_that_are_due(game: Game) -> None:
    refs = add_boards(game, 5)
    submit_to(game, ["main"])
    submit_to(game, [keys.split_ref(ref)[1] for ref in refs], now=DURING + dt.timedelta(days=1))
    with clock_at(DUE):
        assert services.close_jobs_run() == 1  # main's day; the others' starts a day later

    assert ArchivedPeriod.objects.get().leaderboard.slug == "main"
    next_day = ms(DAY_END + dt.timedelta(days=1)) + GRACE_MS
    assert close_index() == {
        REF: ms(at("2026-11-23T00:00:00+00:00")) + GRACE_MS,  # its week's job is next
        **dict.fromkeys(refs, next_day),
    }


def test_it_forgets_the_marks_of_boards_that_are_gone(game: Game) -> None:
    run_sync(lambda: worksets.mark(ledger=["gone.board"], close={"gone.board": 1}, now_ms=1))
    with clock_at(DURING):
        assert ledger.ledger_drain() == 0
        assert services.close_jobs_run() == 0
    assert marked() == {} and close_index() == {}


# --------------------------------------------------------------------------- no mark is lost


def test_it_drains_an_entry_written_while_the_board_was_being_drained(game: Game, monkeypatch: Any) -> None:
    submit_all(game, [("a", 1, None)], DURING)
    from archive.ledger import drain

    drain_board = drain._drain_board
    late: list[int] = []

    def then_a_write(*args: Any, **kwargs: Any) -> int:
        stored = drain_board(*args, **kwargs)
        if not late:  # after its last read, before it unmarks the board
            late.append(1)
            submit_all(game, [("b", 2, None)], DURING)
        return stored

    monkeypatch.setattr(drain, "_drain_board", then_a_write)
    with clock_at(DURING):
        assert ledger.ledger_drain() == 1
    assert REF in marked()
    with clock_at(DURING):
        assert ledger.ledger_drain() == 1
    assert marked() == {}
    assert sorted(ScoreEvent.objects.values_list("player_id", flat=True)) == ["a", "b"]


Steps = Iterator[None]


def _run(interleaving: tuple[int, ...], processes: list[Steps]) -> None:
    """Advance the processes one step at a time in this order (a process that finished skips)."""
    for index in interleaving:
        next(processes[index], None)
    for process in processes:
        for _ in process:
            pass


def _interleavings(lengths: list[int]) -> set[tuple[int, ...]]:
    slots = [i for i, n in enumerate(lengths) for _ in range(n)]
    return set(itertools.permutations(slots))


def _ledger_writer() -> Steps:
    run_sync(lambda: get_redis().xadd(keys.ledger(REF), {"k": "submit"}))
    yield
    run_sync(lambda: worksets.mark(ledger=[REF], now_ms=2))
    yield


def _ledger_consumer() -> Steps:
    """worksets.settle, a step per Redis call (remove, check, mark again)."""
    run_sync(lambda: get_redis().zrem(keys.work_ledger(), REF))
    yield
    remaining = run_sync(lambda: get_redis().xlen(keys.ledger(REF)))
    yield
    if remaining:
        run_sync(lambda: get_redis().zadd(keys.work_ledger(), {REF: 3}, nx=True))
    yield


def test_a_drain_never_loses_a_mark_whatever_the_interleaving(game: Game) -> None:
    """Every order of a writer's two steps (entry, then mark) against the drain's three
    (unmark, check, mark again): an entry left in the stream always leaves its board marked."""
    for interleaving in sorted(_interleavings([2, 3])):
        run_sync(lambda: get_redis().delete(keys.ledger(REF), keys.work_ledger()))
        run_sync(lambda: worksets.mark(ledger=[REF], now_ms=1))  # an earlier entry's mark, now drained
        _run(interleaving, [_ledger_writer(), _ledger_consumer()])
        assert REF in marked(), interleaving
    # The settle itself, with nothing written meanwhile, unmarks the board.
    run_sync(lambda: get_redis().delete(keys.ledger(REF)))
    remaining = run_sync(lambda: worksets.settle(keys.work_ledger(), REF, remaining=_false, now_ms=4))
    assert not remaining and marked() == {}


async def _false() -> bool:
    return False


def _close_writer(due: int) -> Steps:
    run_sync(lambda: get_redis().zadd(keys.close_jobs(REF), {f"daily:{due}": due}))
    yield
    run_sync(lambda: worksets.mark(close={REF: due}, now_ms=0))
    yield


def _close_consumer() -> Steps:
    """worksets.settle_close, a step per Redis call (read, write, read again, lower)."""
    first = run_sync(lambda: services.close_jobs_next(ref=REF))
    yield
    if first is None:
        run_sync(lambda: get_redis().zrem(keys.work_close_due(), REF))
    else:
        run_sync(lambda: get_redis().zadd(keys.work_close_due(), {REF: first}))
    yield
    again = run_sync(lambda: services.close_jobs_next(ref=REF))
    yield
    if again is not None and again != first:
        run_sync(lambda: get_redis().zadd(keys.work_close_due(), {REF: again}, lt=True))
    yield


def _check_close_index(context: object) -> None:
    first = run_sync(lambda: services.close_jobs_next(ref=REF))
    if first is not None:
        assert REF in close_index() and close_index()[REF] <= first, context


@pytest.mark.parametrize("existing", [None, 500, 2000])
def test_a_close_run_never_leaves_the_index_later_than_a_job_whatever_the_interleaving(
    game: Game, existing: int | None
) -> None:
    """A writer adds a job due at 1000 (then lowers the index to it) while the run settles the
    board (read, write, read again, lower), with no job, an earlier one or a later one there:
    in every order, the index ends no later than the board's earliest job."""
    for interleaving in sorted(_interleavings([2, 4])):
        run_sync(lambda: get_redis().delete(keys.close_jobs(REF), keys.work_close_due()))
        if existing is not None:
            run_sync(lambda: get_redis().zadd(keys.close_jobs(REF), {"old": existing}))
        run_sync(lambda: worksets.mark(close={REF: 0}, now_ms=0))  # due: the run is visiting it
        _run(interleaving, [_close_writer(1000), _close_consumer()])
        _check_close_index(interleaving)


def test_two_close_runs_and_two_writers_never_leave_the_index_late(game: Game) -> None:
    rng = random.Random(20)
    slots = [0] * 2 + [1] * 2 + [2] * 4 + [3] * 4
    for _ in range(150):
        rng.shuffle(slots)
        run_sync(lambda: get_redis().delete(keys.close_jobs(REF), keys.work_close_due()))
        run_sync(lambda: worksets.mark(close={REF: 0}, now_ms=0))
        _run(tuple(slots), [_close_writer(900), _close_writer(700), _close_consumer(), _close_consumer()])
        _check_close_index(slots)


def test_concurrent_submissions_and_drains_store_every_entry_once(game: Game) -> None:
    boards = ["main", *(keys.split_ref(ref)[1] for ref in add_boards(game, 3))]
    config = GameConfig.from_model(Game.objects.prefetch_related("leaderboards").get(pk=game.pk), "0")
    writing = threading.Event()
    writing.set()
    accepted: list[int] = []

    def writer(n: int) -> None:
        rng = random.Random(n)
        for i in range(40):
            board = config.board_named(rng.choice(boards))
            assert board is not None
            result = run_sync(
                lambda board=board, i=i: game_services.score_submit(
                    game=config, board=board, player_id=f"w{n}-{i}", score=i
                )
            )
            accepted.append(0 if result.replayed else 1)

    def drainer(n: int) -> None:
        while writing.is_set():
            try:
                ledger.ledger_drain(consumer=f"drain-{n}")
            except OperationalError:
                # The test's shared SQLite refuses a second writer at times: the run fails, its marks
                # stay, and what it held waits for a takeover, as a failed run's would.
                pass
        connection.close()

    writers = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    drainers = [threading.Thread(target=drainer, args=(n,)) for n in range(2)]
    for thread in drainers + writers:
        thread.start()
    for thread in writers:
        thread.join()
    writing.clear()
    for thread in drainers:
        thread.join()
    # What is left is marked: drains alone finish it.
    for _ in range(5):
        ledger.ledger_drain(consumer="last", claim_min_idle_ms=0)
    assert marked() == {}
    assert ScoreEvent.objects.count() == len(accepted) == 160
    assert ScoreEvent.objects.values("leaderboard", "event_id").distinct().count() == 160
    for board in boards:
        assert run_sync(lambda board=board: get_redis().xlen(keys.ledger(keys.board_ref("tetris", board)))) == 0


# --------------------------------------------------------------------------- the safety net


def test_the_sweep_marks_again_what_a_crash_left_unmarked(game: Game) -> None:
    submit_all(game, [("a", 1, None)], DURING)
    forget_marks()
    with clock_at(DUE):
        assert ledger.ledger_drain() == 0 and services.close_jobs_run() == 0  # nothing says there is work

        report = services.work_sweep()

        assert (report.boards, report.ledger, report.close, report.scheduled) == (1, 1, 1, 0)
        assert ledger.ledger_drain() == 1
        assert services.close_jobs_run() == 1
    assert ArchivedPeriod.objects.get().period_id == DAY


def test_the_sweep_takes_a_bounded_slice_of_the_boards_each_run_and_goes_round(game: Game, monkeypatch: Any) -> None:
    monkeypatch.setattr(catch_up, "SWEEP_BOARDS_PER_RUN", 3)
    refs = [REF, *add_boards(game, 6)]
    submit_to(game, [keys.split_ref(ref)[1] for ref in refs])
    forget_marks()

    seen = [services.work_sweep() for _ in range(3)]

    assert [r.boards for r in seen] == [3, 3, 3]  # the third: the last board, then round again
    assert set(marked()) == set(refs)
    assert set(close_index()) == set(refs)


def test_the_sweep_schedules_the_jobs_of_period_boards_whose_index_is_gone(game: Game, monkeypatch: Any) -> None:
    monkeypatch.setattr(catch_up, "SWEEP_SCAN_COUNT", 5)
    submit_all(game, [("a", 1, None)], DURING)
    run_sync(lambda: get_redis().delete(keys.close_jobs(REF), keys.boards_index(REF)))
    forget_marks()

    with clock_at(DUE):
        scheduled = sum(services.work_sweep().scheduled for _ in range(20))
        assert scheduled == 3  # the day, the week, the month
        assert services.close_jobs_run() == 1
    assert ArchivedPeriod.objects.get().total == 1


def test_dead_jobs_are_marked_for_the_gauge_and_unmarked_once_retried(game: Game) -> None:
    submit_all(game, [("a", 1, None)], DURING)
    # Lost with Redis data, index entry and all (kept aside to restore it).
    lost = f"{keys.board(REF, 'daily', DAY)}:lost"  # on the board's slot (a cluster renames within one)
    run_sync(lambda: get_redis().rename(keys.board(REF, "daily", DAY), lost))
    run_sync(lambda: get_redis().zrem(keys.boards_index(REF), keys.board(REF, "daily", DAY)))
    now = DUE
    for backoff_secs in [30, 60, 120, 240, 0]:
        with clock_at(now):
            assert services.close_jobs_run() == 0
        now += dt.timedelta(seconds=backoff_secs)
    assert set(zscores(keys.work_close_dead())) == {REF}
    with clock_at(now):
        [backlog] = [b for b in run_sync(lambda: services.board_backlogs(games=[GameConfig.from_model(game, "0")]))]
    assert backlog.dead == 1

    run_sync(lambda: get_redis().rename(lost, keys.board(REF, "daily", DAY)))
    with clock_at(now):
        services.close_job_retry(board=game.leaderboards.get(), job=f"daily:{DAY}")
        assert zscores(keys.work_close_dead()) == {}
        assert services.close_jobs_run() == 1
    # A stale mark (the board's dead jobs went another way) is dropped by the sweep.
    run_sync(lambda: worksets.mark(dead=[REF], now_ms=1))
    services.work_sweep()
    assert zscores(keys.work_close_dead()) == {}
