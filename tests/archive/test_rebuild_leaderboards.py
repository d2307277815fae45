"""leaderboards_rebuild and ``manage.py rebuild_leaderboards``: the ledger replayed into Redis
ends with boards identical to the ones it replaces, and brings them back after a data loss.

The model-based test drives random submissions (single and batched, every mode and
order), hidden players and corrections at times spread across day, week and month
boundaries in Europe/Paris, then compares every board, stash, name, hidden player,
index entry (of boards and of names) and close job before and after a rebuild, and after FLUSHDB + rebuild.
"""

from __future__ import annotations

import datetime as dt
import io
import itertools
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from hypothesis import HealthCheck, given, note
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from archive import ledger, services
from archive.ledger import rebuild
from archive.models import ArchivedPeriod, ScoreEvent
from core import keys
from core.clock import now as clock_now
from core.config import GameConfig
from core.errors import ServiceError
from core.models import Game, Player
from core.redis import get_redis, run_sync
from games import periods
from games import services as game_services
from tests.conftest import clock_at

pytestmark = pytest.mark.django_db

P = ParamSpec("P")
R = TypeVar("R")

PARIS = "Europe/Paris"
# Sunday 2026-11-29 23:00 in Paris: an hour before a new day and ISO week, a day
# and an hour before a new month.
START = dt.datetime(2026, 11, 29, 22, 0, tzinfo=dt.UTC)


def config_of(game: Game) -> GameConfig:
    return GameConfig.from_model(game, "0")


def submit(
    game: Game, player_id: str, score: int, now: dt.datetime, name: str | None = None, subscore: int | None = None
) -> None:
    config = config_of(game)
    board = config.boards[0]
    with clock_at(now):
        run_sync(
            lambda: game_services.score_submit(
                game=config,
                board=board,
                player_id=player_id,
                score=score,
                display_name=name,
                subscore=subscore if board.has_subscore else None,
            )
        )


def flush() -> None:
    run_sync(lambda: get_redis().flushdb())


def lose_redis() -> None:
    """Redis loses all its data some time after the last drain (which runs every few seconds)."""
    ledger.ledger_drain()
    flush()


def snapshot(slug: str) -> dict[str, Any]:
    """Every board and stash (members, scores, whether they expire), names, hidden players,
    the name index, the boards index and the close jobs of a game; fails on a leftover rebuild key."""

    async def read() -> dict[str, Any]:
        client = get_redis()
        found: dict[str, Any] = {}
        async for key in client.scan_iter(match=keys.board_pattern(keys.board_ref(slug, "main"))):
            assert ":rebuild:" not in key, f"leftover temporary key {key}"
            is_stash = key.endswith(":hidden") and keys.parse_board(key.removesuffix(":hidden")) is not None
            if keys.parse_board(key) is not None or is_stash:
                found[key] = (await client.zrange(key, 0, -1, withscores=True), await client.pttl(key) > 0)
            elif key.endswith(":members") and keys.parse_board(key.removesuffix(":members")) is not None:
                found[key] = (await client.hgetall(key), await client.pttl(key) > 0)
        found["tie clock"] = await client.get(keys.tie_clock(keys.board_ref(slug, "main")))
        found["names"] = await client.hgetall(keys.names(slug))
        found["name index"] = await client.zrange(keys.name_index(slug), 0, -1)
        found["name keys"] = await client.hgetall(keys.name_keys(slug))
        found["hidden"] = sorted(await client.smembers(keys.hidden(slug)))
        found["index"] = await client.zrange(keys.boards_index(keys.board_ref(slug, "main")), 0, -1, withscores=True)
        found["close jobs"] = await client.zrange(keys.close_jobs(keys.board_ref(slug, "main")), 0, -1, withscores=True)
        return found

    return run_sync(read)


def board_keys(state: dict[str, Any]) -> list[str]:
    return sorted(k for k in state if keys.parse_board(k) is not None)


# --------------------------------------------------------------------------- model-based

PLAYERS = ("a", "b", "c", "d")
NAMES = (None, "", "Ann", "Bo")
STEPS_SECS = (0, 20 * 60, 6 * 3600)

_player = st.sampled_from(PLAYERS)
_score = st.integers(-40, 40)
_subscore = st.one_of(st.none(), st.integers(-3, 3))
# Often none: equal scores in one ms, where the board's clock orders them.
_step = st.sampled_from((0, *STEPS_SECS))
OPERATION = st.one_of(
    st.tuples(st.just("submit"), _player, _score, st.sampled_from(NAMES), _subscore, _step),
    st.tuples(
        st.just("batch"),
        st.lists(st.tuples(_player, _score, st.sampled_from(NAMES), _subscore), min_size=1, max_size=4),
        _step,
    ),
    st.tuples(st.just("hide"), _player, st.booleans(), _step),
    st.tuples(st.just("correct"), _player, _score, _subscore, _step),
)
_slugs = itertools.count()


def run_operations(game: Game, operations: list[tuple]) -> dt.datetime:
    config = config_of(game)
    now = START
    for operation in operations:
        kind, step = operation[0], operation[-1]
        now += dt.timedelta(seconds=step)
        try:
            if kind == "submit":
                submit(game, operation[1], operation[2], now, operation[3], operation[4])
            elif kind == "batch":
                sub = config.boards[0].has_subscore
                items = [
                    game_services.Submission(p, s, n, leaderboard="main", subscore=b if sub else None)
                    for p, s, n, b in operation[1]
                ]
                with clock_at(now):
                    run_sync(lambda items=items, now=now: game_services.score_submit_many(game=config, items=items))
            elif kind == "hide":
                with clock_at(now):
                    game_services.player_set_hidden(game=game, player_id=operation[1], hidden=operation[2])
            else:
                board = game.leaderboards.get()
                subscore = operation[3] if board.ties == "subscore" else None
                with clock_at(now):
                    ledger.score_correct(board=board, player_id=operation[1], value=operation[2], subscore=subscore)
        except ServiceError:
            pass  # refused (hidden, unknown, zero, overflow): nothing changed, nothing in the ledger
    return now


@pytest.mark.parametrize(
    ("mode", "order", "ties"),
    [
        ("increment", "desc", "shared"),
        ("best", "asc", "shared"),
        ("best", "desc", "shared"),
        ("latest", "desc", "shared"),
        ("best", "desc", "earliest"),
        ("increment", "asc", "earliest"),
        ("best", "asc", "subscore"),
        ("increment", "desc", "subscore"),
        ("latest", "desc", "subscore"),
    ],
)
@hypothesis_settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(operations=st.lists(OPERATION, min_size=1, max_size=14))
def test_it_rebuilds_identical_boards_from_the_ledger(make_game, mode, order, ties, operations):
    game = make_game(
        f"g{next(_slugs)}", mode=mode, order=order, ties=ties, timezone_name=PARIS, max_submissions_per_minute=0
    )
    end = run_operations(game, operations)
    before = snapshot(game.slug)
    note(f"before: {before}")

    with clock_at(end):
        report = ledger.leaderboards_rebuild(game=game)
    assert snapshot(game.slug) == before
    assert report.boards == len(board_keys(before)) + sum(
        1 for k in before if k.endswith(":hidden") and k.removesuffix(":hidden") not in before
    )
    assert report.events == ScoreEvent.objects.filter(game=game).count()

    # Redis lost everything: the ledger table alone brings it all back.
    flush()
    with clock_at(end):
        ledger.leaderboards_rebuild(game=game)
    assert snapshot(game.slug) == before


# --------------------------------------------------------------------------- periods


def test_it_replays_each_score_into_its_periods_across_a_dst_change(make_game):
    game = make_game("tetris", mode="increment", timezone_name=PARIS, max_submissions_per_minute=0)
    # Paris leaves summer time at 03:00 on Sunday 2026-10-25 (01:00 UTC): that day lasts 25 hours.
    moments = {
        "2026-10-24T21:59:59+00:00": ("2026-10-24", "2026-W43", "2026-10"),
        "2026-10-24T22:00:00+00:00": ("2026-10-25", "2026-W43", "2026-10"),
        "2026-10-25T22:59:59+00:00": ("2026-10-25", "2026-W43", "2026-10"),
        "2026-10-25T23:00:00+00:00": ("2026-10-26", "2026-W44", "2026-10"),
        "2026-10-31T22:59:59+00:00": ("2026-10-31", "2026-W44", "2026-10"),
        "2026-10-31T23:00:00+00:00": ("2026-11-01", "2026-W44", "2026-11"),
    }
    for i, moment in enumerate(moments):
        submit(game, "a", 10**i, dt.datetime.fromisoformat(moment))
    before = snapshot("tetris")
    lose_redis()
    with clock_at(dt.datetime(2026, 11, 1, 12, tzinfo=dt.UTC)):
        ledger.leaderboards_rebuild(game=game)
    after = snapshot("tetris")
    assert after == before
    expected: dict[str, int] = {}
    for i, ids in enumerate(moments.values()):
        for kind, period_id in zip(("daily", "weekly", "monthly"), ids, strict=True):
            key = keys.board("tetris.main", kind, period_id)
            expected[key] = expected.get(key, 0) + 10**i
    expected[keys.board("tetris.main", "all-time", "all-time")] = sum(10**i for i in range(len(moments)))
    # Higher is better: boards hold negated scores.
    assert {k: -after[k][0][0][1] for k in board_keys(after)} == expected


# --------------------------------------------------------------------------- scores landing meanwhile


def after_the_first_replay(monkeypatch, land: Callable[[], None]) -> None:
    """Run ``land`` once, right after the rebuild has read the stream to its end."""
    monkeypatch.setattr(rebuild, "_replay_stream", _then_once(rebuild._replay_stream, land))


def _then_once(function: Callable[P, R], after: Callable[[], None]) -> Callable[P, R]:
    """``function``, calling ``after`` once, when its first call has returned."""
    done: list[bool] = []

    def wrapped(*args: P.args, **kwargs: P.kwargs) -> R:
        result = function(*args, **kwargs)
        if not done:
            done.append(True)
            after()
        return result

    return wrapped


def test_it_replays_scores_that_land_while_it_runs(make_game, monkeypatch):
    game = make_game("tetris", mode="increment", max_submissions_per_minute=0)
    now = clock_now()
    for i in range(30):
        submit(game, f"p{i % 7}", i, now)

    def meanwhile() -> None:
        # The replay has read past the end: a score lands now.
        submit(game, "late", 99, now, "Late")
        # And one in a period the replay has not seen: a board of its own.
        submit(game, "later", 5, now + dt.timedelta(days=1))

    after_the_first_replay(monkeypatch, meanwhile)
    with clock_at(now):
        report = ledger.leaderboards_rebuild(game=game)
    assert report.swap_attempts == 2
    state = snapshot("tetris")
    daily = keys.board("tetris.main", "daily", periods.current("daily", "UTC", now).id)
    tomorrow = keys.board("tetris.main", "daily", periods.current("daily", "UTC", now + dt.timedelta(days=1)).id)
    assert ("late", -99.0) in state[daily][0]
    assert state[tomorrow][0] == [("later", -5.0)]
    assert state["names"]["late"] == "Late"
    # And the rebuilt state is what the ledger says: a second rebuild changes nothing.
    with clock_at(now):
        ledger.leaderboards_rebuild(game=game)
    assert snapshot("tetris") == state


def test_it_gives_up_without_touching_the_boards_when_scores_never_stop(make_game, monkeypatch):
    game = make_game("tetris", mode="increment", max_submissions_per_minute=0)
    now = clock_now()
    submit(game, "a", 1, now)
    monkeypatch.setattr(rebuild, "REBUILD_SWAP_ATTEMPTS", 1)
    before = snapshot("tetris")
    after_the_first_replay(monkeypatch, lambda: submit(game, "b", 2, now))

    with pytest.raises(ServiceError) as raised, clock_at(now):
        ledger.leaderboards_rebuild(game=game)
    assert raised.value.code == "rebuild_busy"
    after = snapshot("tetris")  # also fails on a leftover temporary key
    daily = keys.board("tetris.main", "daily", periods.current("daily", "UTC", now).id)
    assert after[daily][0] == [("b", -2.0), ("a", -1.0)]
    assert after["names"] == {**before["names"], "b": "b"}


# --------------------------------------------------------------------------- which boards


def test_it_leaves_a_board_without_events_as_it_was(make_game):
    game = make_game("tetris", max_submissions_per_minute=0)
    now = clock_now()
    submit(game, "a", 1, now)
    # Written before the ledger existed: nothing could rebuild it.
    old = keys.board("tetris.main", "daily", "2020-01-01")
    run_sync(lambda: get_redis().zadd(old, {"x": -5}))
    run_sync(lambda: get_redis().zadd(keys.boards_index("tetris.main"), {old: float("inf")}))
    before = snapshot("tetris")
    with clock_at(now):
        report = ledger.leaderboards_rebuild(game=game)
    assert report.kept == [old]
    assert snapshot("tetris") == before


def test_it_keeps_archived_boards_out_of_redis_once_gone_and_their_retention_while_kept(make_game):
    game = make_game("tetris", mode="increment", max_submissions_per_minute=0)
    today = clock_now()
    yesterday = today - dt.timedelta(days=1)
    day_before = periods.current("daily", "UTC", yesterday).id
    submit(game, "a", 3, yesterday)
    submit(game, "b", 4, yesterday)
    submit(game, "a", 5, today)
    with clock_at(today):
        archived = services.period_archive(board=game.leaderboards.first(), period="daily", period_id=day_before)
    assert archived.status == ArchivedPeriod.Status.COMPLETE
    old = keys.board("tetris.main", "daily", day_before)

    # Still kept in Redis (retention): rebuilt, with its expiry.
    before = snapshot("tetris")
    assert before[old][1] is True
    with clock_at(today):
        ledger.leaderboards_rebuild(game=game)
    after = snapshot("tetris")
    assert after == before
    expires_at = dict(after["index"])[old]
    assert abs(run_sync(lambda: get_redis().pttl(old)) - (expires_at - today.timestamp() * 1000)) < 5000

    # Redis lost everything: the archived day stays in the database, the rest comes back.
    lose_redis()
    with clock_at(today):
        report = ledger.leaderboards_rebuild(game=game)
    state = snapshot("tetris")
    assert old not in state
    assert keys.board("tetris.main", "daily", periods.current("daily", "UTC", today).id) in state
    assert state[keys.board("tetris.main", "all-time", "all-time")][0] == [("a", -8.0), ("b", -4.0)]
    assert f"daily:{day_before}" not in dict(state["close jobs"])
    assert report.events == 3


def test_it_schedules_the_close_jobs_of_finished_periods_not_yet_archived(make_game):
    game = make_game("tetris", max_submissions_per_minute=0)
    yesterday = dt.datetime(2026, 11, 21, 12, tzinfo=dt.UTC)
    submit(game, "a", 3, yesterday)
    lose_redis()
    with clock_at(yesterday + dt.timedelta(days=1)):
        ledger.leaderboards_rebuild(game=game)
    jobs = dict(snapshot("tetris")["close jobs"])
    daily = periods.parse("daily", "2026-11-21", "UTC")
    assert daily.ends_at_ms is not None
    assert jobs["daily:2026-11-21"] == daily.ends_at_ms + settings.ARCHIVE_GRACE_SECS * 1000
    assert {"weekly:2026-W47", "monthly:2026-11"} <= set(jobs)


def test_it_restores_hidden_players_into_stashes_after_a_data_loss(make_game):
    game = make_game("tetris", max_submissions_per_minute=0)
    now = clock_now()
    submit(game, "a", 3, now, "Ann")
    submit(game, "b", 4, now)
    with clock_at(now):
        game_services.player_set_hidden(game=game, player_id="a", hidden=True)
    before = snapshot("tetris")
    lose_redis()
    with clock_at(now):
        report = ledger.leaderboards_rebuild(game=game)
    assert snapshot("tetris") == before
    assert report.stashed == 4
    assert report.names_restored == 2
    # Unhidden, they come back with their scores.
    with clock_at(now):
        game_services.player_set_hidden(game=game, player_id="a", hidden=False)
    daily = keys.board("tetris.main", "daily", periods.current("daily", "UTC", now).id)
    assert snapshot("tetris")[daily][0] == [("b", -4.0), ("a", -3.0)]


def test_it_keeps_a_name_redis_holds_over_the_ledger(make_game):
    game = make_game("tetris", max_submissions_per_minute=0)
    now = clock_now()
    submit(game, "a", 3, now, "Ann")
    game_services.players_sync_pending()
    game_services.player_rename(player=Player.objects.get(player_id="a"), display_name="Annie")
    with clock_at(now):
        ledger.leaderboards_rebuild(game=game)
    assert snapshot("tetris")["names"] == {"a": "Annie"}


def test_it_restores_names_from_player_rows_and_the_ledger_after_a_data_loss(make_game):
    game = make_game("tetris", max_submissions_per_minute=0)
    now = clock_now()
    submit(game, "a", 3, now, "Ann")
    submit(game, "b", 4, now, "Bo")
    game_services.players_sync_pending()
    # An admin rename is no ledger event: the player's row carries it.
    game_services.player_rename(player=Player.objects.get(player_id="a"), display_name="Annie")
    submit(game, "b", 5, now)  # no name: 'Bo' stays
    submit(game, "c", 6, now, "Cy")
    # Hidden before the player sync saw them: their row is named after their id.
    with clock_at(now):
        game_services.player_set_hidden(game=game, player_id="c", hidden=True)
    lose_redis()
    with clock_at(now):
        report = ledger.leaderboards_rebuild(game=game)
    restored = snapshot("tetris")
    assert restored["names"] == {"a": "Annie", "b": "Bo", "c": "Cy"}
    # And findable by them again.
    assert restored["name index"] == ["annie\0a", "bo\0b", "cy\0c"]
    assert report.names_restored == 3
    # Only the row that lacks its name is marked for the player sync, which then fixes it.
    assert run_sync(lambda: get_redis().zrange(keys.pending_players("tetris"), 0, -1)) == ["c"]
    game_services.players_sync_pending()
    assert Player.objects.get(player_id="c").display_name == "Cy"
    assert Player.objects.get(player_id="a").display_name == "Annie"


# --------------------------------------------------------------------------- the command


def command(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("rebuild_leaderboards", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_the_command_rebuilds_every_game_and_reports(make_game):
    now = clock_now()
    tetris = make_game("tetris", max_submissions_per_minute=0)
    make_game("chess", max_submissions_per_minute=0)
    for i in range(3):
        submit(tetris, f"p{i}", i, now)
    with clock_at(now):
        game_services.player_set_hidden(game=tetris, player_id="p0", hidden=True)
    before = snapshot("tetris")
    lose_redis()
    out, err = command()
    assert out.splitlines() == [
        "chess: 0 boards rebuilt from 0 events.",
        "tetris: 4 boards rebuilt from 3 events, 4 hidden entries stashed, 3 names restored.",
    ]
    assert "tetris events [" in err
    assert snapshot("tetris") == before


def test_the_command_rebuilds_one_game_and_refuses_an_unknown_one(make_game):
    now = clock_now()
    submit(make_game("tetris", max_submissions_per_minute=0), "a", 1, now)
    out, _ = command("--game", "tetris")
    assert out == "tetris: 4 boards rebuilt from 1 event.\n"
    with pytest.raises(CommandError, match="No game 'nope'"):
        command("--game", "nope")
