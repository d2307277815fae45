"""``manage.py healthcheck ROLE`` and the heartbeats it reads (core/heartbeat.py)."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest
from celery.contrib.testing.worker import start_worker
from celery.signals import after_task_publish, beat_init
from django.core.management import call_command

from core import heartbeat as heartbeats
from core.heartbeat import HEARTBEAT_STALE_SECS, heartbeat
from leaderboard_site import celery as celery_app
from live import broadcaster
from tests.conftest import free_port
from tests.live_server import asgi_live_server  # noqa: F401 - a fixture

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def heartbeat_dir(settings, tmp_path: Path) -> Path:
    settings.HEARTBEAT_DIR = str(tmp_path)
    heartbeats._last_beat.clear()
    return tmp_path


def check(role: str, *args: str) -> int:
    """The command's exit status."""
    try:
        call_command("healthcheck", role, *args)
    except SystemExit as exit_:
        return int(exit_.code or 0)
    return 0


def test_it_is_healthy_with_a_fresh_heartbeat_and_redis(capsys):
    heartbeat("worker")

    assert check("worker") == 0
    assert "healthy" in capsys.readouterr().out


@pytest.mark.parametrize("age", [None, HEARTBEAT_STALE_SECS + 5])
def test_it_is_unhealthy_without_a_recent_heartbeat(heartbeat_dir, capsys, age):
    if age is not None:
        heartbeat("beat")
        past = time.time() - age
        os.utime(heartbeat_dir / "beat", (past, past))

    assert check("beat") == 1
    err = capsys.readouterr().err
    assert "has not beaten yet" in err if age is None else "last beat 65 s ago" in err


def test_it_is_unhealthy_when_redis_does_not_answer(capsys, redis_unreachable):
    heartbeat("broadcast")

    assert check("broadcast") == 1
    assert "Redis does not answer" in capsys.readouterr().err


def test_it_probes_the_web_servers_healthz(asgi_live_server, capsys):  # noqa: F811
    assert check("web", "--url", f"{asgi_live_server}/healthz") == 0
    assert check("ws", "--url", f"{asgi_live_server}/healthz") == 0  # the websocket workers serve it too
    closed = f"http://127.0.0.1:{free_port()}/healthz"
    assert check("web", "--url", closed) == 1
    assert "did not answer" in capsys.readouterr().err


def test_it_has_nothing_to_check_for_a_one_off_command():
    assert check("migrate") == 0


def test_the_broadcaster_beats_as_it_runs(heartbeat_dir):
    async def run_briefly() -> None:
        stop = asyncio.Event()
        asyncio.get_running_loop().call_later(0.3, stop.set)
        await broadcaster.run(tick_ms=50, stop=stop)

    asyncio.run(run_briefly())

    assert (heartbeat_dir / "broadcast").exists()


def test_beat_beats_as_it_sends_tasks_and_only_beat(heartbeat_dir, monkeypatch):
    after_task_publish.send(sender="archive.tasks.ledger_drain")
    assert not (heartbeat_dir / "beat").exists()  # a web process sending a task is no beat

    monkeypatch.setattr(celery_app, "_in_beat", False)
    beat_init.send(sender=None)
    (heartbeat_dir / "beat").unlink()
    heartbeats._last_beat.clear()
    after_task_publish.send(sender="archive.tasks.ledger_drain")

    assert (heartbeat_dir / "beat").exists()


def test_the_worker_beats_from_its_main_loop(heartbeat_dir):
    with start_worker(celery_app.app, pool="solo", perform_ping_check=False, shutdown_timeout=10):
        deadline = time.monotonic() + 10
        while not (heartbeat_dir / "worker").exists() and time.monotonic() < deadline:
            time.sleep(0.05)

    assert (heartbeat_dir / "worker").exists()
