"""A settlement killed with kill -9 in the middle (issue 22): the close job's worker dies inside
the transaction that completes the archive and settles the period, after its tier moves were
written and before the commit. Nothing of it stays: no archive marked complete, no settlement,
no move, no grant, no event. When its claim has run out, the next run settles the period
whole, exactly once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from core import keys
from core.redis import get_redis, run_sync
from tests.real_server import REPO_DIR, finished, node_env, node_process

pytestmark = pytest.mark.wall_clock

WAIT_SECS = 60.0
REF = keys.board_ref("crash", "cup")
JOB = "all-time:all-time"


def _worker(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return node_process(env, "tests.competitions.settle_worker", *args)


def _finished(process: subprocess.Popen[str]) -> str:
    return finished(process, WAIT_SECS)


def _state(env: dict[str, str]) -> dict[str, Any]:
    """What the node's database holds of the period, read by a process of the node."""
    script = (
        "import django,json;django.setup();"
        "from archive.models import ArchivedPeriod;"
        "from competitions.models import Grant,SettledEntry,Settlement,LeagueStanding;"
        "from core.models import Event;"
        "print(json.dumps({'complete':ArchivedPeriod.objects.filter(status='complete').count(),"
        "'settlements':Settlement.objects.count(),'entries':SettledEntry.objects.count(),"
        "'moves':sorted(SettledEntry.objects.exclude(move=0).values_list('player_id','tier_after')),"
        "'tiers':LeagueStanding.objects.count(),"
        "'grants':sorted(Grant.objects.values_list('player_id',flat=True)),"
        "'events':sorted(Event.objects.values_list('type',flat=True))}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, cwd=REPO_DIR, check=True, capture_output=True, text=True
    )
    return json.loads(out.stdout)


def _claim_runs_out() -> None:
    """What the claim's visibility timeout (10 minutes) and the archive lock's do in time: the
    killed worker's claim is past its deadline, and its lock gone."""

    async def expire() -> None:
        client = get_redis()
        assert await client.zadd(keys.close_claims(REF), {JOB: 1}, xx=True, ch=True) == 1
        await client.delete(keys.archive_lock(REF, "all-time", "all-time"))

    run_sync(expire)


def test_it_settles_a_period_exactly_once_after_its_worker_is_killed_mid_settlement(tmp_path: Path) -> None:
    env = node_env(tmp_path)
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], env=env, cwd=REPO_DIR, check=True)
    _finished(_worker(env, "setup"))
    marker = tmp_path / "settling"

    doomed = _worker(env, "run", str(marker))
    deadline = time.monotonic() + WAIT_SECS
    while not marker.exists():
        assert doomed.poll() is None, doomed.communicate()[1][-3000:]
        assert time.monotonic() < deadline, "the worker never reached the settlement it is killed in"
        time.sleep(0.05)
    os.kill(doomed.pid, signal.SIGKILL)
    doomed.wait(timeout=WAIT_SECS)

    nothing = _state(env)
    assert nothing["complete"] == nothing["settlements"] == nothing["entries"] == nothing["tiers"] == 0
    assert (nothing["moves"], nothing["grants"]) == ([], [])
    assert not {"period.archived", "period.settled", "tier.changed", "reward.granted"} & set(nothing["events"])

    _claim_runs_out()
    assert _finished(_worker(env, "run")).split() == ["1"]
    assert _finished(_worker(env, "run")).split() == ["0"]  # nothing left to do

    settled = _state(env)
    assert (settled["complete"], settled["settlements"], settled["entries"], settled["tiers"]) == (1, 1, 6, 6)
    # Cohorts of 2 in silver: (p0, p1), (p2, p3), (p4, p5); each winner up, each last down (p5 never scored).
    assert [tuple(move) for move in settled["moves"]] == [
        ("p0", "bronze"),
        ("p1", "gold"),
        ("p2", "bronze"),
        ("p3", "gold"),
        ("p4", "gold"),
        ("p5", "bronze"),
    ]
    assert settled["grants"] == ["p1", "p3", "p4"]
    events = settled["events"]
    assert (events.count("period.settled"), events.count("tier.changed"), events.count("reward.granted")) == (1, 6, 3)
