"""The Celery app. Its beat schedule lives in schedule.py, the one place that holds it."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard_site.settings")

app = Celery("leaderboard_site")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_after_configure.connect
def _install_schedule(sender: Celery, **kwargs: object) -> None:
    from .schedule import BEAT_SCHEDULE

    sender.conf.beat_schedule = BEAT_SCHEDULE
