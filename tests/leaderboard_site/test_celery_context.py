"""A task queued while a request runs logs with that request's id (and its own task id)."""

from __future__ import annotations

import threading

import pytest
from celery.contrib.testing.worker import start_worker

from core import logs
from leaderboard_site.celery import app

pytestmark = pytest.mark.wall_clock

seen: dict[str, object] = {}
ran = threading.Event()


@app.task(bind=True, name="tests.probe_context")
def probe_context(self: object) -> None:
    seen.update(logs_request_id=logs.bound("request_id"), logs_task_id=logs.bound("task_id"))
    ran.set()


# How long the task may take to come round: a bound on liveness, not a measure of speed.
RUN_WAIT_SECS = 30


def test_it_carries_the_request_id_into_the_task_it_queues() -> None:
    # Tasks earlier tests queued (event deliveries after their commits) would run first, one by
    # one, in this solo worker: the queue starts empty.
    app.control.purge()
    with start_worker(app, perform_ping_check=False, pool="solo", loglevel="WARNING"):
        with logs.context(request_id="req-42"):
            queued = probe_context.delay()
        assert ran.wait(timeout=RUN_WAIT_SECS), "the worker did not run the task"

    assert seen == {"logs_request_id": "req-42", "logs_task_id": queued.id}
    assert logs.bound("request_id") is None  # nothing leaks into the caller after the block
