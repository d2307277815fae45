"""``manage.py healthcheck ROLE``: exit 0 if this container's process is healthy, else 1
with the reason (the Dockerfile's HEALTHCHECK runs it for the role the container runs).

- ``web``, ``ws``: ``/healthz`` on this container answers 200 (Redis and the database reachable).
- ``worker``, ``beat``, ``broadcast``: the process's heartbeat (core/heartbeat.py) is
  fresh, and Redis, which each of them works through, answers.
- anything else (``migrate``, a one-off command): nothing to check.
"""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand

from core.heartbeat import HEARTBEAT_STALE_SECS, ROLES, heartbeat_age_secs
from core.redis import get_redis, run_sync

# Each probe gives up after this long (Docker's own timeout is a little longer).
PROBE_TIMEOUT_SECS = 4.0


class Command(BaseCommand):
    help = "Exit 0 if this container's role (web, ws, worker, beat, broadcast) is healthy, else 1 with the reason."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("role", help="web, ws, worker, beat or broadcast (anything else is healthy)")
        parser.add_argument("--url", help="web: the health URL (default http://127.0.0.1:$PORT/healthz)")

    def handle(self, *args: Any, role: str, url: str | None, **options: Any) -> None:
        if role in ("web", "ws"):
            problem = self._web(url or f"http://127.0.0.1:{os.environ.get('PORT', '8000')}/healthz")
        elif role in ROLES:
            problem = self._heartbeat(role)
        else:
            problem = None
        if problem:
            self.stderr.write(f"unhealthy: {problem}")
            sys.exit(1)
        self.stdout.write("healthy")

    def _web(self, url: str) -> str | None:
        try:
            with urllib.request.urlopen(url, timeout=PROBE_TIMEOUT_SECS) as response:
                return None if response.status == 200 else f"{url} answered {response.status}"
        except urllib.error.HTTPError as error:
            return f"{url} answered {error.code}"
        except OSError as error:
            return f"{url} did not answer ({error})"

    def _heartbeat(self, role: str) -> str | None:
        age = heartbeat_age_secs(role)
        if age is None:
            return f"{role} has not beaten yet"
        if age > HEARTBEAT_STALE_SECS:
            return f"{role} last beat {age:.0f} s ago (stale after {HEARTBEAT_STALE_SECS:.0f} s)"
        try:
            run_sync(lambda: get_redis().ping())
        except Exception as error:
            return f"Redis does not answer ({type(error).__name__}: {error})"
        return None
