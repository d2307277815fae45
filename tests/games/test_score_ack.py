"""SCORE_ACK=replica: a score is acknowledged only once a replica holds it; while no
replica confirms, the answer is 503 not_replicated and nothing is claimed as stored,
and a retry with the same Idempotency-Key is applied exactly once.

Against a Redis of the test's own with a real replica (two redis-server processes), so
it runs the same under `make test` and `make test-cluster`."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from asgiref.sync import sync_to_async

from core import apikeys, keys
from leaderboard_site import processes
from tests.conftest import auth, forget_redis_clients

pytestmark = pytest.mark.django_db(transaction=True)

LINK_TIMEOUT_SECS = 20.0


class Pair:
    """A master and its replica on loopback."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.master_port, self.replica_port = processes.free_port(), processes.free_port()
        self.master = processes.start_embedded_redis(port=self.master_port, data_dir=base / "master", durable=False)
        self.replica: Any = None
        self.start_replica()

    def start_replica(self) -> None:
        data_dir = self.base / "replica"
        args = processes.embedded_redis_args(port=self.replica_port, data_dir=data_dir, durable=False)
        args += ["--replicaof", "127.0.0.1", str(self.master_port)]
        self.replica = processes.start_embedded_redis(
            port=self.replica_port, data_dir=data_dir, durable=False, args=args
        )
        deadline = time.monotonic() + LINK_TIMEOUT_SECS
        client = redis.Redis(port=self.replica_port, decode_responses=True)
        while client.info("replication").get("master_link_status") != "up":
            assert time.monotonic() < deadline, "the replica did not link"
            time.sleep(0.05)

    def stop_replica(self) -> None:
        processes.stop([self.replica])

    def stop(self) -> None:
        processes.stop([self.replica, self.master])


@pytest.fixture
def pair(settings: Any, tmp_path: Path) -> Iterator[Pair]:
    started = Pair(tmp_path)
    original = (settings.REDIS_URL, settings.REDIS_CLUSTER)
    settings.REDIS_URL, settings.REDIS_CLUSTER = f"redis://127.0.0.1:{started.master_port}/0", False
    settings.SCORE_ACK, settings.SCORE_ACK_TIMEOUT_MS = "replica", 300
    forget_redis_clients()
    yield started
    settings.REDIS_URL, settings.REDIS_CLUSTER = original
    forget_redis_clients()
    started.stop()


async def test_it_acknowledges_a_score_once_a_replica_holds_it_and_never_twice(
    make_game: Any, pair: Pair, aclient: Any
) -> None:
    game = await sync_to_async(make_game)("acked", mode="increment", max_submissions_per_minute=0)
    _, raw_key = await sync_to_async(apikeys.api_key_create)(game=game, name="t")

    async def post(key: str) -> Any:
        return await aclient.post(
            "/api/v1/games/acked/leaderboards/main/scores",
            {"player_id": "ann", "score": 5},
            content_type="application/json",
            headers={**auth(raw_key), "Idempotency-Key": key},
        )

    first = await post("one")
    assert first.status_code == 200, first.content
    assert first.json()["periods"]["all-time"]["score"] == 5

    pair.stop_replica()
    refused = await post("two")
    assert refused.status_code == 503, refused.content
    assert refused.json()["error"]["code"] == "not_replicated"
    assert refused.headers["Retry-After"] == "1"

    pair.start_replica()
    retried = await post("two")
    assert retried.status_code == 200, retried.content
    assert retried.headers["Idempotent-Replayed"] == "true"
    # Applied once on the primary when it was refused, replayed now: 5 + 5, not 15.
    assert retried.json()["periods"]["all-time"]["score"] == 10
    board_key = keys.board(keys.board_ref("acked", "main"), "all-time", "all-time")
    assert redis.Redis(port=pair.replica_port).zcard(board_key) == 1
