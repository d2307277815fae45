"""score_submit: the one atomic script per submission, driven with an injected clock."""

from __future__ import annotations

import datetime as dt

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings
from redis.asyncio.cluster import RedisCluster
from redis.crc import key_slot

from core import keys
from core.clock import now as clock_now
from core.config import GameConfig
from core.errors import ServiceError
from core.models import MAX_SAFE_SCORE
from core.redis import get_redis
from games import periods, services
from games import scripts as games_scripts
from games.services import scores
from tests import redis_replies
from tests.conftest import clock_at

pytestmark = pytest.mark.django_db(transaction=True)


def at(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text)


async def config_for(make_game, slug="tetris", **kwargs) -> GameConfig:
    kwargs.setdefault("max_submissions_per_minute", 0)
    game = await sync_to_async(make_game)(slug, **kwargs)
    return GameConfig.from_model(game, "0")


async def board_keys(slug: str) -> list[str]:
    found = [k async for k in get_redis().scan_iter(match=keys.board_pattern(keys.board_ref(slug, "main")))]
    return sorted(
        k for k in found if k.count(":") == 3 and not k.endswith(("names", "hidden", "recent", "boards", "dirty"))
    )


async def test_it_lands_in_exactly_one_key_per_period(make_game):
    game = await config_for(make_game, timezone_name="Europe/Paris", mode="increment")
    # 22:59:59 UTC is 23:59:59 in Paris on Sunday the 22nd; a second later it is Monday the 23rd.
    with clock_at(at("2026-11-22T22:59:59+00:00")):
        await services.score_submit(game=game, board=game.boards[0], player_id="a", score=5)
    with clock_at(at("2026-11-22T23:00:00+00:00")):
        await services.score_submit(game=game, board=game.boards[0], player_id="a", score=7)
    redis = get_redis()
    assert await board_keys("tetris") == [
        "lb:{tetris.main}:all-time:all-time",
        "lb:{tetris.main}:daily:2026-11-22",
        "lb:{tetris.main}:daily:2026-11-23",
        "lb:{tetris.main}:monthly:2026-11",
        "lb:{tetris.main}:weekly:2026-W47",
        "lb:{tetris.main}:weekly:2026-W48",
    ]
    # Stored as sort keys: negated for higher-is-better games.
    assert await redis.zscore("lb:{tetris.main}:daily:2026-11-22", "a") == -5
    assert await redis.zscore("lb:{tetris.main}:daily:2026-11-23", "a") == -7
    assert await redis.zscore("lb:{tetris.main}:monthly:2026-11", "a") == -12
    assert await redis.zscore("lb:{tetris.main}:all-time:all-time", "a") == -12


@pytest.mark.parametrize(
    ("before", "after", "kind", "old_id", "new_id"),
    [
        ("2026-11-30T22:59:59.999+00:00", "2026-11-30T23:00:00+00:00", "monthly", "2026-11", "2026-12"),
        ("2026-11-29T22:59:59.999+00:00", "2026-11-29T23:00:00+00:00", "weekly", "2026-W48", "2026-W49"),
        # Dates ahead of the real clock, so Redis keeps the keys (their TTL runs on real time).
        # The day clocks go back in Paris lasts 25 hours; 22:00 UTC is still that day.
        ("2027-10-31T22:59:59.999+00:00", "2027-10-31T23:00:00+00:00", "daily", "2027-10-31", "2027-11-01"),
        # The day clocks go forward lasts 23 hours and ends at 22:00 UTC.
        ("2027-03-28T21:59:59.999+00:00", "2027-03-28T22:00:00+00:00", "daily", "2027-03-28", "2027-03-29"),
    ],
)
async def test_it_rolls_each_period_over_at_its_boundary(make_game, before, after, kind, old_id, new_id):
    game = await config_for(make_game, timezone_name="Europe/Paris", mode="increment")
    with clock_at(at(before)):
        first = await services.score_submit(game=game, board=game.boards[0], player_id="a", score=1)
    with clock_at(at(after)):
        second = await services.score_submit(game=game, board=game.boards[0], player_id="a", score=1)
    assert (first.periods[kind].period_id, first.periods[kind].score) == (old_id, 1)
    assert (second.periods[kind].period_id, second.periods[kind].score) == (new_id, 1)
    assert second.periods["all-time"].score == 2


async def test_it_keeps_period_keys_until_archived_and_schedules_their_close_jobs(make_game):
    game = await config_for(make_game, timezone_name="Europe/Paris")
    now = clock_now()
    with clock_at(now):
        await services.score_submit(game=game, board=game.boards[0], player_id="a", score=1)
    with clock_at(now):
        await services.score_submit(game=game, board=game.boards[0], player_id="b", score=2)
    redis = get_redis()
    grace_ms = settings.ARCHIVE_GRACE_SECS * 1000
    due = dict(await redis_replies.scored(keys.close_jobs("tetris.main")))
    expected = {}
    for kind in ("daily", "weekly", "monthly"):
        period = periods.current(kind, "Europe/Paris", now)
        # No expiry: the close job sets one once the archive is complete.
        assert await redis.pttl(keys.board("tetris.main", kind, period.id)) == -1
        assert period.ends_at_ms is not None
        expected[f"{kind}:{period.id}"] = period.ends_at_ms + grace_ms
    assert due == expected  # one job per period, scheduled once
    assert await redis.ttl(keys.board("tetris.main", "all-time", "all-time")) == -1
    assert not await redis.exists(keys.player_spam("tetris.main", "a"))  # no anti-spam window when unlimited
    assert await redis.llen(keys.recent("tetris")) == 2


async def test_it_appends_each_applied_submission_to_the_ledger(make_game):
    game = await config_for(make_game, mode="increment", max_submissions_per_minute=0)
    now = clock_now()
    with clock_at(now):
        await services.score_submit(game=game, board=game.boards[0], player_id="a", score=5, display_name="Ada")
    with clock_at(now):
        await services.score_submit(game=game, board=game.boards[0], player_id="a", score=-2)
    with pytest.raises(ServiceError), clock_at(now):
        await services.score_submit(game=game, board=game.boards[0], player_id="a", score=10**16)  # refused: not logged

    entries = await redis_replies.entries(keys.ledger("tetris.main"))

    assert [fields for _, fields in entries] == [
        {"k": "submit", "p": "a", "v": "5", "n": "Ada", "m": "increment", "t": str(int(now.timestamp() * 1000))},
        {"k": "submit", "p": "a", "v": "-2", "n": "", "m": "increment", "t": str(int(now.timestamp() * 1000))},
    ]


async def test_it_bounds_the_recent_list_and_the_spam_window(make_game, settings):
    settings.RECENT_SUBMISSIONS_MAX = 3
    game = await config_for(make_game, max_submissions_per_minute=100)
    for i in range(5):
        await services.score_submit(game=game, board=game.boards[0], player_id="a", score=i)
    redis = get_redis()
    assert await redis.llen(keys.recent("tetris")) == 3
    assert 0 < await redis.pttl(keys.player_spam("tetris.main", "a")) <= services.PLAYER_SPAM_WINDOW_MS


@pytest.mark.parametrize(
    ("mode", "order", "submissions", "expected"),
    [
        ("best", "desc", [5, 9, 3], 9),
        ("best", "asc", [5, 9, 3], 3),
        ("latest", "desc", [5, 9, 3], 3),
        ("increment", "desc", [5, 9, -3], 11),
        ("increment", "asc", [5, 9, -3], 11),
    ],
)
async def test_it_applies_each_scoring_mode(make_game, mode, order, submissions, expected):
    game = await config_for(make_game, mode=mode, order=order)
    for score in submissions:
        result = await services.score_submit(game=game, board=game.boards[0], player_id="a", score=score)
    assert {s.score for s in result.periods.values()} == {expected}


async def test_it_refuses_a_total_past_2_pow_53_and_changes_nothing(make_game):
    game = await config_for(make_game, mode="increment")
    await services.score_submit(game=game, board=game.boards[0], player_id="a", score=MAX_SAFE_SCORE)
    with pytest.raises(ServiceError) as error:
        await services.score_submit(game=game, board=game.boards[0], player_id="a", score=1)
    assert (error.value.status, error.value.code, error.value.field) == (422, "score_overflow", "score")
    result = await services.score_submit(game=game, board=game.boards[0], player_id="a", score=-1)
    assert result.periods["all-time"].score == MAX_SAFE_SCORE - 1


async def test_it_keeps_extreme_scores_exact(make_game):
    game = await config_for(make_game, mode="latest")
    for value in (MAX_SAFE_SCORE, -MAX_SAFE_SCORE, MAX_SAFE_SCORE - 1, 0):
        result = await services.score_submit(game=game, board=game.boards[0], player_id="a", score=value)
        assert result.periods["daily"].score == value


async def test_it_keeps_each_scripts_keys_on_one_cluster_slot(make_game):
    """A board's script touches only {game.board} keys, the game's script only {game} keys,
    and everything a submission stores is on one of the two slots (or is a global key: the
    live change sets, the config epoch)."""
    game = await config_for(make_game, slug="space-race", max_submissions_per_minute=5)
    board = game.boards[0]
    now = clock_now()
    now_ms = int(now.timestamp() * 1000)
    queued = [
        scores._Queued(
            0, services.Submission("p", 1, leaderboard="main"), board, services.Idempotency("abcd1234", "k", "f")
        ),
        scores._Queued(1, services.Submission("q", 2, leaderboard="main"), board, None),
    ]
    board_keys, _ = scores._board_call(board, queued, now_ms, periods.board_current(board, now), 5)
    game_keys, _ = scores._game_call(game, [(q, True) for q in queued], now_ms, True)
    board_slot, game_slot = key_slot(b"{space-race.main}"), key_slot(b"{space-race}")
    assert {key_slot(k.encode()) for k in board_keys} == {board_slot}
    assert {key_slot(k.encode()) for k in game_keys} == {game_slot}

    await services.score_submit(game=game, board=board, player_id="p", score=1)
    builders = [
        keys.boards_index("space-race.main"),
        keys.hidden_stash(keys.board("space-race.main", "daily", "2026-11-22")),
        keys.idempotency("space-race.main", "abcd1234", "k", 7),
    ]
    assert {key_slot(k.encode()) for k in builders} == {board_slot}
    assert {key_slot(k.encode()) for k in (keys.config_version("space-race"), keys.api_rate("space-race", "x"))} == {
        game_slot
    }
    stored = [
        k
        async for k in get_redis().scan_iter(match="*")
        if k not in (keys.live_changes(), keys.live_presence_changes(), keys.config_epoch(), keys.config_changes())
        if k not in (keys.work_ledger(), keys.work_close_due(), keys.work_players())  # the background's work sets
    ]
    assert {key_slot(k.encode()) for k in stored} == {board_slot, game_slot}
    assert len(stored) >= 8


async def test_it_calls_scripts_by_sha_and_reloads_them_after_a_flush(make_game):
    game = await config_for(make_game)
    await get_redis().script_flush()
    result = await services.score_submit(game=game, board=game.boards[0], player_id="a", score=3)
    assert result.periods["daily"].rank == 1
    client, sha = get_redis(), games_scripts.SUBMIT_SCORE.sha
    if isinstance(client, RedisCluster):
        # Loaded where the board lives (a cluster's other masters need not have it).
        board_key = keys.board(keys.board_ref("tetris", "main"), "daily", result.periods["daily"].period_id)
        present = await client.execute_command("SCRIPT EXISTS", sha, target_nodes=client.get_node_from_key(board_key))
    else:
        present = await client.script_exists(sha)
    assert [bool(int(p)) for p in present] == [True]
