"""100 claims of one reward at once (issue 22), through the real HTTP API of real processes: four
uvicorn workers sharing one database, as production runs them, so that the claims race in the
database itself, not one after the other in a test's thread. The reward is claimed once, with
one reward.claimed event, and every claim gets the same claimed reward. A claim answered 503
(SQLite's write lock held past its timeout by the others, on a loaded machine) is sent again after
its Retry-After, as every client of this API does: a claim is answered alike however often sent."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import httpx
import pytest

from tests.competitions.settled import node_grants
from tests.conftest import auth
from tests.real_server import node_env, setup_node, start_web, stop_all

pytestmark = pytest.mark.wall_clock

CLAIMS = 100
WORKERS = 4
# A 503 claim is sent again at most this many times (each after its Retry-After).
RETRIES_MAX = 5


async def _claim_all(url: str, key: str, grant_id: str) -> list[httpx.Response]:
    limits = httpx.Limits(max_connections=CLAIMS, max_keepalive_connections=0)
    async with httpx.AsyncClient(base_url=url, headers=auth(key), timeout=30, limits=limits) as client:
        start = asyncio.Event()

        async def claim() -> httpx.Response:
            await start.wait()
            for _ in range(RETRIES_MAX):
                answer = await client.post(f"/api/v1/games/claims/rewards/{grant_id}/claim")
                if answer.status_code != 503:
                    return answer
                await asyncio.sleep(float(answer.headers.get("Retry-After", "1")))
            return answer

        tasks = [asyncio.create_task(claim()) for _ in range(CLAIMS)]
        await asyncio.sleep(0.1)
        start.set()
        return await asyncio.gather(*tasks)


def test_it_claims_a_reward_once_under_100_claims_at_once_and_answers_each_alike(tmp_path: Path) -> None:
    node = setup_node(node_env(tmp_path), "claims")
    node_grants(node.env, game="claims", board="cup", grants=[("ada", 0, {"coins": 500})])
    try:
        url = start_web(node, workers=WORKERS, log=tmp_path / "web.log")
        listed = httpx.get(f"{url}/api/v1/games/claims/players/ada/rewards", headers=auth(node.raw_key), timeout=10)
        (reward,) = listed.json()["rewards"]
        answers = asyncio.run(_claim_all(url, node.raw_key, reward["grant_id"]))
    finally:
        stop_all(node)

    failed = [a.text for a in answers if a.status_code != 200][:3]
    assert sorted({a.status_code for a in answers}) == [200], (failed, (tmp_path / "web.log").read_text()[-6000:])
    bodies = [a.json() for a in answers]
    assert all(body == bodies[0] for body in bodies)
    assert (bodies[0]["status"], bodies[0]["grant_id"]) == ("claimed", reward["grant_id"])
    with sqlite3.connect(tmp_path / "db.sqlite3") as db:
        claimed = db.execute("SELECT status, claimed_at FROM competitions_grant").fetchall()
        events = db.execute("SELECT count(*) FROM core_event WHERE type = 'reward.claimed'").fetchone()
    assert len(claimed) == 1 and claimed[0][0] == "claimed"
    assert events == (1,)
