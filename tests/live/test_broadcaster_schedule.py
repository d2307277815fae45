"""The broadcaster's rollover schedule (live/rollovers.py): what it plans, when, and that taking
what is due always ends, across a season's end, a restart, cron windows and config changes."""

from __future__ import annotations

import datetime as dt
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from core import clock, keys
from core import services as core_services
from core.config import BoardConfig, GameConfig
from core.models import Game
from core.redis import get_redis
from games import periods, services
from live import broadcaster, rollovers
from tests.conftest import T0, clock_at
from tests.live.live_helpers import Sockets, drain

pytestmark = pytest.mark.django_db(transaction=True)

# Taking what is due must return at once: longer than this is an endless loop (the season-end bug).
RETURN_WITHIN_SECS = 2
ZONE = "Asia/Kolkata"  # local midnight at 18:30 UTC: not the UTC day's boundary
MS = dt.timedelta(milliseconds=1)


@contextmanager
def returns_within(seconds: float) -> Iterator[None]:
    """Fail (instead of hanging the suite) if the block has not returned within ``seconds``."""

    def expired(signum: int, frame: object) -> None:
        raise TimeoutError(f"did not return within {seconds} s: an endless loop")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def config_of(game: Game) -> GameConfig:
    return GameConfig.from_model(Game.objects.prefetch_related("leaderboards").get(pk=game.pk), "0")


def add_board(game: Game, slug: str, **settings: Any) -> None:
    core_services.leaderboard_create(game=game, slug=slug, **settings)


def due(state: broadcaster.BroadcasterState, at: dt.datetime) -> dict[str, list[str]]:
    with returns_within(RETURN_WITHIN_SECS):
        return state.due(at)


def plans(state: broadcaster.BroadcasterState) -> dict[tuple[str, str], dt.datetime]:
    return {key: clock.from_ms(ms) for key, ms in state.rollovers.planned.items()}


def season_game(make_game: Callable[..., Game], ends_at: dt.datetime) -> GameConfig:
    """A game whose board 'cup' has a season (daily, all-time and custom windows), beside a
    board 'main' without one."""
    game = make_game("tetris", board=None, timezone_name=ZONE)
    add_board(game, "main", windows=["daily", "all-time"])
    add_board(
        game,
        "cup",
        windows=["daily", "all-time", "custom"],
        starts_at=T0 - dt.timedelta(days=3),
        ends_at=ends_at,
    )
    return config_of(game)


def next_midnight(at: dt.datetime) -> dt.datetime:
    ends = periods.current("daily", ZONE, at).ends_at
    assert ends is not None
    return ends


# --------------------------------------------------------------------------- a season's end


def test_it_never_plans_the_windows_whose_period_never_changes(make_game: Callable[..., Game]) -> None:
    game = season_game(make_game, ends_at=T0 + dt.timedelta(seconds=10))
    state = broadcaster.BroadcasterState()
    state.follow([game])

    # The first claims: only windows whose period id can change (a season keeps 'all-time' and 'season').
    assert due(state, T0) == {"tetris.main": ["daily"], "tetris.cup": ["daily"]}
    assert plans(state) == {("tetris.main", "daily"): next_midnight(T0), ("tetris.cup", "daily"): next_midnight(T0)}


def test_it_takes_nothing_more_once_a_season_ended(make_game: Callable[..., Game]) -> None:
    ends_at = T0 + dt.timedelta(seconds=10)
    game = season_game(make_game, ends_at=ends_at)
    state = broadcaster.BroadcasterState()
    state.follow([game])
    due(state, T0)

    assert due(state, ends_at) == {}
    assert due(state, ends_at + dt.timedelta(seconds=3)) == {}
    # The next midnight still rolls both boards' daily windows over, once.
    midnight = next_midnight(T0)
    assert due(state, midnight) == {"tetris.main": ["daily"], "tetris.cup": ["daily"]}
    assert due(state, midnight) == {}


def test_it_plans_nothing_of_a_season_that_ended_before_it_started(make_game: Callable[..., Game]) -> None:
    game = season_game(make_game, ends_at=T0 - dt.timedelta(hours=1))
    state = broadcaster.BroadcasterState()  # a broadcaster (re)started after the season's end
    state.follow([game])

    assert due(state, T0) == {"tetris.main": ["daily"], "tetris.cup": ["daily"]}
    assert due(state, T0 + MS) == {}
    assert set(plans(state)) == {("tetris.main", "daily"), ("tetris.cup", "daily")}


async def test_it_keeps_other_boards_live_after_a_season_ends(make_game: Callable[..., Game], sockets: Sockets) -> None:
    ends_at = T0 + dt.timedelta(seconds=10)
    game = await sync_to_async(season_game)(make_game, ends_at)
    ws = await sockets.open()
    await ws.send_json_to({"action": "subscribe", "leaderboard": "main", "period": "all-time"})
    assert (await ws.receive_json_from())["type"] == "standings"
    state = broadcaster.BroadcasterState()
    await broadcaster.tick(state=state, games=[game])
    after = ends_at + dt.timedelta(seconds=5)

    for n, at in enumerate([after, after + dt.timedelta(seconds=1)]):
        with clock_at(at):
            await services.score_submit(game=game, board=game.boards[0], player_id=f"p{n}", score=n + 1)
            with returns_within(RETURN_WITHIN_SECS):
                report = await broadcaster.tick(state=state, games=[game])
        assert report.standings == 2  # main's daily and all-time windows; the socket watches one
        (standings,) = await drain(ws)
        assert standings["entries"][0]["player_id"] == f"p{n}"
    # A broadcaster started now plans nothing of the season either, and sends the next change.
    with clock_at(after), returns_within(RETURN_WITHIN_SECS):
        await services.score_submit(game=game, board=game.boards[0], player_id="late", score=100)
        assert (await broadcaster.tick(state=broadcaster.BroadcasterState(), games=[game])).standings == 2


# --------------------------------------------------------------------------- rolling windows


def test_it_plans_each_rolling_window_at_its_periods_end(make_game: Callable[..., Game]) -> None:
    game = make_game("tetris", board=None, timezone_name=ZONE)
    # Minute 45 in Kolkata (UTC+5:30) is minute 15 in UTC.
    add_board(game, "main", windows=["daily", "weekly", "monthly", "custom"], cron="45 * * * *")
    config = config_of(game)
    state = broadcaster.BroadcasterState()
    state.follow([config])
    board = config.boards[0]

    assert due(state, T0) == {"tetris.main": ["daily", "weekly", "monthly", "custom"]}
    ends = {w: periods.window_current(board, w, T0).ends_at for w in board.windows}
    assert plans(state) == {("tetris.main", w): at for w, at in ends.items()}
    assert ends["custom"] == T0.replace(minute=15)

    # Each window comes due at its period's end exactly (not a millisecond before), and is
    # planned again at its next period's end.
    for window in ("custom", "daily"):
        at = ends[window]
        assert at is not None
        assert window not in due(state, at - MS).get("tetris.main", [])
        assert window in due(state, at)["tetris.main"]
        assert plans(state)[("tetris.main", window)] == periods.window_current(board, window, at).ends_at
        assert due(state, at) == {}


def test_it_ends_however_far_the_clock_jumps(make_game: Callable[..., Game]) -> None:
    game = make_game("tetris", board=None, timezone_name=ZONE)
    add_board(game, "main", windows=["daily", "weekly", "monthly", "custom"], cron="30 * * * *")
    config = config_of(game)
    state = broadcaster.BroadcasterState()
    state.follow([config])
    due(state, T0)

    # Forty days later (a broadcaster paused, or a clock put forward): each window once, at its current period.
    later = T0 + dt.timedelta(days=40, minutes=7)
    assert {ref: sorted(windows) for ref, windows in due(state, later).items()} == {
        "tetris.main": ["custom", "daily", "monthly", "weekly"]
    }
    assert plans(state)[("tetris.main", "custom")] == later.replace(minute=0) + dt.timedelta(hours=1)
    assert due(state, later) == {}


def test_it_plans_a_cron_that_has_not_fired_yet_at_its_first_firing(make_game: Callable[..., Game]) -> None:
    game = make_game("tetris", board=None)
    add_board(game, "main", windows=["custom"], cron="0 12 * * *")
    board = config_of(game).boards[0]
    # A clock before the cron ever fired: the calendar starts in the year 1.
    early = dt.datetime(1, 1, 1, 6, tzinfo=dt.UTC)
    with pytest.raises((periods.InvalidPeriod, OverflowError)):
        periods.window_current(board, "custom", early)

    assert rollovers.next_end_ms(board, "custom", early) == clock.to_ms(early.replace(hour=12))


def test_it_plans_nothing_for_a_window_at_the_calendars_end(make_game: Callable[..., Game]) -> None:
    board = config_of(make_game("tetris", periods_kept=["daily"])).boards[0]
    last_day = dt.datetime(9999, 12, 31, 12, tzinfo=dt.UTC)

    assert rollovers.next_end_ms(board, "daily", last_day) is None


# --------------------------------------------------------------------------- claims per tick


def test_it_claims_a_ticks_share_of_boards_at_a_time(
    make_game: Callable[..., Game], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rollovers, "MAX_CLAIMS_PER_TICK", 3)
    game = make_game("tetris", board=None)
    for n in range(7):
        add_board(game, f"b{n}", windows=["daily", "all-time"])
    add_board(game, "forever", windows=["all-time"])  # nothing to claim, ever
    config = config_of(game)
    state = broadcaster.BroadcasterState()
    state.follow([config])

    claimed = [due(state, T0), due(state, T0), due(state, T0), due(state, T0)]

    assert [list(c) for c in claimed] == [
        ["tetris.b0", "tetris.b1", "tetris.b2"],
        ["tetris.b3", "tetris.b4", "tetris.b5"],
        ["tetris.b6"],
        [],
    ]


def test_it_claims_rollovers_before_boards_it_has_not_claimed_yet(
    make_game: Callable[..., Game], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rollovers, "MAX_CLAIMS_PER_TICK", 2)
    game = make_game("tetris", board=None)
    add_board(game, "old", windows=["daily"])
    state = broadcaster.BroadcasterState()
    state.follow([config_of(game)])
    due(state, T0)
    for n in range(3):
        add_board(game, f"new{n}", windows=["daily"])
    state.follow([config_of(game)])
    midnight = periods.current("daily", "UTC", T0).ends_at
    assert midnight is not None

    assert list(due(state, midnight)) == ["tetris.old", "tetris.new0"]
    assert list(due(state, midnight)) == ["tetris.new1", "tetris.new2"]


# --------------------------------------------------------------------------- config changes


def test_it_takes_in_only_the_boards_that_changed(make_game: Callable[..., Game]) -> None:
    tetris = make_game("tetris", board=None)
    for slug in ("a", "b"):
        add_board(tetris, slug, windows=["daily"])
    pong = make_game("pong", periods_kept=["weekly"])
    state = broadcaster.BroadcasterState()
    pong_config = config_of(pong)
    state.follow([config_of(tetris), pong_config])
    due(state, T0)

    # tetris.b gains a window, tetris.c is new, tetris.a stays; pong is the same object.
    board = tetris.leaderboards.get(slug="b")
    board.windows = ["daily", "monthly"]
    board.save()
    add_board(tetris, "c", windows=["daily"])
    state.follow([config_of(tetris), pong_config])

    assert due(state, T0) == {"tetris.b": ["daily", "monthly"], "tetris.c": ["daily"]}
    assert set(state.boards) == {"tetris.a", "tetris.b", "tetris.c", "pong.main"}
    # A board taken out of play and a game gone leave nothing planned.
    board.active = False
    board.save()
    state.follow([config_of(tetris)])
    assert set(state.boards) == {"tetris.a", "tetris.c"}
    assert {ref for ref, _ in state.rollovers.planned} == {"tetris.a", "tetris.c"}
    midnight = periods.current("daily", "UTC", T0).ends_at
    assert midnight is not None
    assert due(state, midnight) == {"tetris.a": ["daily"], "tetris.c": ["daily"]}


def test_it_leaves_a_game_that_did_not_change_alone(make_game: Callable[..., Game]) -> None:
    tetris, pong = config_of(make_game("tetris")), config_of(make_game("pong"))
    state = broadcaster.BroadcasterState()
    state.follow([tetris, pong])
    due(state, T0)
    before = dict(state.rollovers.planned)

    state.follow([tetris, config_of(make_game("chess"))])

    assert due(state, T0) == {"chess.main": ["daily", "weekly", "monthly"]}
    assert {k: v for k, v in state.rollovers.planned.items() if k[0] == "tetris.main"} == {
        k: v for k, v in before.items() if k[0] == "tetris.main"
    }
    assert "pong.main" not in state.boards


async def test_it_claims_again_the_boards_of_a_tick_that_failed(
    make_game: Callable[..., Game], monkeypatch: pytest.MonkeyPatch
) -> None:
    game = await sync_to_async(lambda: config_of(make_game("tetris", periods_kept=["daily"])))()
    state = broadcaster.BroadcasterState()

    async def fail(current: object) -> list[list[str]]:
        raise ConnectionError("Redis went away")

    with monkeypatch.context() as patched:
        patched.setattr(broadcaster, "_claim", fail)
        with pytest.raises(ConnectionError):
            await broadcaster.tick(state=state, games=[game])
    await broadcaster.tick(state=state, games=[game])

    stored = await get_redis().hgetall(keys.live_periods("tetris.main"))
    assert stored == {"daily": periods.current("daily", "UTC", clock.now()).id}


def test_board_configs_compare_by_their_settings(make_game: Callable[..., Game]) -> None:
    # What follow() relies on: an unchanged board read again equals the one it has.
    game = make_game("tetris")
    assert config_of(game).boards[0] == config_of(game).boards[0]
    assert isinstance(config_of(game).boards[0], BoardConfig)
