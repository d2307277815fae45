"""Scores on a Redis Cluster that loses a master: with replicas and SCORE_ACK=replica no
acknowledged score is lost; without replicas, that master's boards answer 503 and the
others keep working. Each test forms a cluster of its own on loopback (real
redis-server processes, killed with SIGKILL), so it runs under `make test` and
`make test-cluster` alike."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from redis.asyncio.cluster import RedisCluster
from redis.crc import key_slot

from core import config, keys
from core.errors import UNAVAILABLE_ERRORS
from games import periods, services
from leaderboard_site import localcluster
from tests.conftest import auth, forget_redis_clients

pytestmark = pytest.mark.django_db(transaction=True)

BOARDS = 12
# Submissions per batch of the load, and how long the load goes on after the kill.
LOAD_BATCH = 50
LOAD_AFTER_KILL_SECS = 4.0


@pytest.fixture
def cluster_with(settings: Any, tmp_path: Path) -> Iterator[Any]:
    """Start a cluster (``cluster_with(replicas=...)``) and point the product's Redis at it."""
    started: list[localcluster.LocalCluster] = []

    def start(*, replicas: int) -> localcluster.LocalCluster:
        cluster = localcluster.start(tmp_path / "cluster", masters=3, replicas=replicas)
        started.append(cluster)
        settings.REDIS_CLUSTER = True
        settings.REDIS_URL = cluster.url
        forget_redis_clients()
        return cluster

    original = settings.REDIS_URL
    yield start
    settings.REDIS_URL = original
    settings.REDIS_CLUSTER = False
    forget_redis_clients()
    for cluster in started:
        cluster.stop()


def _master_of(cluster: localcluster.LocalCluster, key: str) -> localcluster.Node:
    """The master first serving ``key``'s slot (localcluster splits the slots evenly, in order)."""
    slot, masters = key_slot(key.encode()), cluster.masters()
    return next(m for i, m in enumerate(masters) if slot < localcluster.SLOTS * (i + 1) // len(masters))


def _board_key(board: str) -> str:
    return keys.board(keys.board_ref("fail", board), periods.ALL_TIME, periods.ALL_TIME_ID)


def _game_with_boards(make_game: Any) -> Any:
    game = make_game("fail", max_submissions_per_minute=0, periods_kept=["all-time"], board="b0")
    from core import services as core_services

    for index in range(1, BOARDS):
        core_services.leaderboard_create(game=game, slug=f"b{index}", windows=["all-time"])
    return game


async def test_it_loses_no_acknowledged_score_when_a_master_dies_under_load(
    make_game: Any, cluster_with: Any, settings: Any
) -> None:
    settings.SCORE_ACK = "replica"
    cluster = cluster_with(replicas=1)
    await sync_to_async(_game_with_boards)(make_game)
    game = await config.get_game("fail")
    assert game is not None
    victim = _master_of(cluster, _board_key("b0"))
    acknowledged: list[tuple[str, str]] = []
    refused = 0

    async def load(stop: asyncio.Event) -> None:
        nonlocal refused
        round_ = 0
        while not stop.is_set():
            items = [
                services.Submission(f"r{round_}-{i}", i + 1, leaderboard=f"b{i % BOARDS}") for i in range(LOAD_BATCH)
            ]
            try:
                results = await services.score_submit_many(game=game, items=items)
            except UNAVAILABLE_ERRORS:
                refused += len(items)  # the whole batch answered 503: nothing claimed
            else:
                for item, result in zip(items, results, strict=True):
                    if isinstance(result, services.Submitted):
                        acknowledged.append((item.leaderboard, item.player_id))
                    else:
                        assert result.status == 503, result.as_dict()
                        refused += 1
            round_ += 1

    stop = asyncio.Event()
    task = asyncio.create_task(load(stop))
    await asyncio.sleep(1.0)
    await asyncio.to_thread(cluster.kill, victim)
    promoted = await asyncio.to_thread(localcluster.wait_for_failover, cluster, victim)
    await asyncio.sleep(LOAD_AFTER_KILL_SECS)
    stop.set()
    await task

    assert promoted.master_port == victim.port
    assert acknowledged and refused  # scores went on, and the failover refused some
    # A client of its own: the product's may still hold a connection the kill closed (its
    # next command on it answers 503 once, as a lost connection should).
    survivor = next(n for n in cluster.nodes if n.port != victim.port)
    client = RedisCluster.from_url(survivor.url, decode_responses=True)
    try:
        for board, player_id in acknowledged:
            assert await client.zscore(_board_key(board), player_id) is not None, (board, player_id)
    finally:
        await client.aclose()


async def test_it_answers_503_for_the_boards_of_a_master_lost_without_replica(
    make_game: Any, cluster_with: Any, aclient: Any, settings: Any
) -> None:
    cluster = cluster_with(replicas=0)
    game = await sync_to_async(_game_with_boards)(make_game)
    from core import apikeys

    _, raw_key = await sync_to_async(apikeys.api_key_create)(game=game, name="t")
    # A submission also writes the game's keys and the global live change sets: the master to
    # lose holds none of them, only boards (docs/scale.md: run replicas for those).
    busy = {
        _master_of(cluster, key).port
        for key in (keys.names("fail"), keys.live_changes(), keys.live_presence_changes(), keys.config_epoch())
    }
    boards = [f"b{i}" for i in range(BOARDS)]
    lost = next(b for b in boards if _master_of(cluster, _board_key(b)).port not in busy)
    kept = next(b for b in boards if _master_of(cluster, _board_key(b)).port in busy)
    victim = _master_of(cluster, _board_key(lost))
    await asyncio.to_thread(cluster.kill, victim)

    async def post(board: str, player: str) -> Any:
        return await aclient.post(
            f"/api/v1/games/fail/leaderboards/{board}/scores",
            {"player_id": player, "score": 5},
            content_type="application/json",
            headers=auth(raw_key),
        )

    gone = await post(lost, "ann")
    assert gone.status_code == 503, gone.content
    assert gone.json()["error"]["code"] == "unavailable"
    assert gone.headers["Retry-After"]
    alive = await post(kept, "bob")
    assert alive.status_code == 200, alive.content
