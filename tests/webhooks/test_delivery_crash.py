"""A delivery run killed with kill -9 while a request is in flight: nothing is lost. The
killed run's lock and claims run out by themselves (WEBHOOK_RUNNER_LEASE_SECS, the claim's
visibility deadline), the next run sends what the killed one held, and the receiver gets every
event, the one in flight twice, with the same ``webhook-id`` both times (verified by the
``standardwebhooks`` library against the wall clock, as a studio's server would)."""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.real_server import REPO_DIR, finished, node_env, node_process
from webhooks.services.delivery import WEBHOOK_RECORD_MARGIN_SECS

from .receiver import Receiver, Reply

pytestmark = pytest.mark.wall_clock

EVENTS = 6
TIMEOUT_SECS = 1.0
WAIT_SECS = 60.0


def test_it_delivers_every_event_after_the_run_is_killed_mid_request(tmp_path: Path) -> None:
    env = node_env(tmp_path, WEBHOOK_TIMEOUT_SECS=str(TIMEOUT_SECS), WEBHOOK_ENDPOINT_CONCURRENCY="1")
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], env=env, cwd=REPO_DIR, check=True)
    receiver = Receiver(now=None)
    with receiver.running():
        receiver.secrets.append(
            finished(node_process(env, "tests.webhooks.webhook_worker", "setup", receiver.url), WAIT_SECS).strip()
        )
        finished(node_process(env, "tests.webhooks.webhook_worker", "emit", str(EVENTS)), WAIT_SECS)
        receiver.replies.extend([Reply(), Reply(), Reply(hang_secs=30)])  # the third request hangs

        doomed = node_process(env, "tests.webhooks.webhook_worker", "deliver", "30")
        deadline = time.monotonic() + WAIT_SECS
        while len(receiver.received) < 3:
            assert doomed.poll() is None, (doomed.communicate(), receiver.refused, len(receiver.received))
            assert time.monotonic() < deadline, "the run never reached the request it is killed in"
            time.sleep(0.02)
        os.kill(doomed.pid, signal.SIGKILL)  # mid-request: the receiver holds its answer
        doomed.wait(timeout=WAIT_SECS)
        in_flight = receiver.received[2].webhook_id

        # The killed run's claim runs out after the request's timeout and the recording margin.
        time.sleep(TIMEOUT_SECS + WEBHOOK_RECORD_MARGIN_SECS + 0.5)
        delivered, retried, failed, _, ran = map(
            int, finished(node_process(env, "tests.webhooks.webhook_worker", "deliver", "5"), WAIT_SECS).split()
        )

    assert ran == 1 and (retried, failed) == (0, 0)
    assert delivered == EVENTS - 2  # all but the two the killed run had finished
    counts = collections.Counter(receiver.ids())
    assert len(counts) == EVENTS and receiver.refused == []
    assert {webhook_id for webhook_id, seen in counts.items() if seen > 1} == {in_flight}
    assert counts[in_flight] == 2
    players = [event["data"]["player_id"] for event in receiver.events()]
    assert players == ["p0", "p1", "p2", "p2", "p3", "p4", "p5"]  # in order, the retried one first
