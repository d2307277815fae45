"""The Celery app. Its beat schedule lives in schedule.py, the one place that holds it.

Log lines of a task carry its task id and name, and the request id of the request that
queued it, if one did (the id travels in the message's headers).

The worker and beat leave heartbeats for their containers' health checks
(core/heartbeat.py): the worker from a timer in its main loop, beat each time it
sends a task (the ledger drain goes every few seconds).
"""

from __future__ import annotations

import os
from typing import Any

from celery import Celery, bootsteps
from celery.signals import after_task_publish, beat_init, before_task_publish, task_postrun, task_prerun

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard_site.settings")

app = Celery("leaderboard_site")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_after_configure.connect
def _install_schedule(sender: Celery, **kwargs: object) -> None:
    from .schedule import BEAT_SCHEDULE

    sender.conf.beat_schedule = BEAT_SCHEDULE


class _WorkerHeartbeat(bootsteps.StartStopStep):
    """A timer in the worker's main loop: it beats while that loop turns."""

    requires = ("celery.worker.components:Timer",)

    def __init__(self, worker: Any, **kwargs: Any) -> None:
        super().__init__(worker, **kwargs)
        self.timer_ref: Any = None

    def start(self, worker: Any) -> None:
        from core.heartbeat import HEARTBEAT_EVERY_SECS, heartbeat

        heartbeat("worker")
        self.timer_ref = worker.timer.call_repeatedly(HEARTBEAT_EVERY_SECS, heartbeat, ("worker",), priority=10)

    def stop(self, worker: Any) -> None:
        if self.timer_ref is not None:
            self.timer_ref.cancel()


app.steps["worker"].add(_WorkerHeartbeat)

# Set in the beat process only (beat_init): only its sends are beat's heartbeat.
_in_beat = False


@beat_init.connect
def _beat_started(**kwargs: object) -> None:
    from core.heartbeat import heartbeat

    global _in_beat
    _in_beat = True
    heartbeat("beat")


@after_task_publish.connect
def _beat_sent(**kwargs: object) -> None:
    if _in_beat:
        from core.heartbeat import heartbeat

        heartbeat("beat")


@before_task_publish.connect
def _carry_request_id(headers: dict[str, Any] | None = None, **kwargs: object) -> None:
    from core import logs

    request_id = logs.bound("request_id")
    if request_id and headers is not None:
        headers["request_id"] = request_id


@task_prerun.connect
def _bind_task(task_id: str = "", task: Any = None, **kwargs: object) -> None:
    from core import logs

    context = {"task_id": task_id, "task": getattr(task, "name", "")}
    request_id = getattr(getattr(task, "request", None), "request_id", None)
    if request_id:
        context["request_id"] = request_id
    logs.bind(**context)


@task_postrun.connect
def _unbind_task(**kwargs: object) -> None:
    from core import logs

    logs.clear()
