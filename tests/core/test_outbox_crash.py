"""A delivery run killed with kill -9 in the middle of a handler: the next run (beat's sweep)
delivers every event to every handler; the handler that records by event id in its delivery's
transaction holds each event exactly once, and the one with an effect outside the database gets
each at least once (the event it was handling when killed, twice)."""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.real_server import REPO_DIR, finished, node_env, node_process

pytestmark = pytest.mark.wall_clock

EVENTS = 30
# The killed run's claims are let go this long after it took them.
CLAIM_SECS = 2
HANG_AFTER_CALLS = 12
WAIT_SECS = 60.0


def _worker(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return node_process(env, "tests.core.outbox_worker", *args)


def _finished(process: subprocess.Popen[str]) -> str:
    return finished(process, WAIT_SECS)


def _state(env: dict[str, str]) -> tuple[dict[str, int], int, set[str]]:
    """(ledger entries per event id, undelivered events, every event id), read by a process of the node
    (the deliveries counted are the two test handlers': the product's own, webhooks.enqueue, gets them too)."""
    script = (
        "import django,json;django.setup();"
        "from core.models import AuditEntry,Event,EventDelivery;"
        "print(json.dumps([list(AuditEntry.objects.filter(actor_name='test.ledger').values_list('reason',flat=True)),"
        "Event.objects.filter(delivered_at__isnull=True).count(),"
        "list(Event.objects.values_list('event_id',flat=True)),"
        "EventDelivery.objects.filter(status='delivered',handler__startswith='test.').count()]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, cwd=REPO_DIR, check=True, capture_output=True, text=True
    )
    reasons, undelivered, ids, delivered = json.loads(out.stdout)
    assert delivered == 2 * len(ids)
    return dict(collections.Counter(reasons)), undelivered, set(ids)


def test_it_delivers_every_event_to_every_handler_after_a_run_is_killed_mid_delivery(tmp_path: Path) -> None:
    env = node_env(tmp_path)
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], env=env, cwd=REPO_DIR, check=True)
    _finished(_worker(env, "emit", str(EVENTS)))
    log, marker = tmp_path / "handled.log", tmp_path / "hanging"

    doomed = _worker(env, "deliver", str(log), str(CLAIM_SECS), str(HANG_AFTER_CALLS), str(marker))
    deadline = time.monotonic() + WAIT_SECS
    while not marker.exists():
        assert doomed.poll() is None, doomed.communicate()[1][-3000:]
        assert time.monotonic() < deadline, "the run never reached the handler it is killed in"
        time.sleep(0.05)
    os.kill(doomed.pid, signal.SIGKILL)
    doomed.wait(timeout=WAIT_SECS)
    handled_before = log.read_text().split()
    assert len(handled_before) == HANG_AFTER_CALLS

    time.sleep(CLAIM_SECS + 0.5)  # the killed run's claims run out
    events, _, failed = map(int, _finished(_worker(env, "deliver", str(log), str(CLAIM_SECS))).split())
    assert failed == 0
    assert events == EVENTS - (HANG_AFTER_CALLS - 1)  # all but those the killed run finished

    ledger, undelivered, ids = _state(env)
    assert undelivered == 0
    assert ledger == dict.fromkeys(ids, 1)  # recorded by event id: once each, no double effect
    handled = collections.Counter(log.read_text().split())
    assert set(handled) == ids  # at least once each
    assert [i for i, n in handled.items() if n > 1] == [handled_before[-1]]  # only the one it died in, twice
