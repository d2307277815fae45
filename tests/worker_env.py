"""Gives each pytest-xdist worker of ``make test`` its own Redis and directories.

``leaderboard_site.devenv`` starts one Redis (or Redis Cluster) per worker and passes all of
their settings in TEST_WORKER_ENVS, a JSON list indexed by worker number; it loads this module
with ``-p``, so that it runs before pytest-django loads the settings, which read REDIS_URL and
the rest from the environment. The suite flushes its Redis before every test, so two workers
must never share one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path


def _apply() -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not worker.startswith("gw"):
        return  # the controller: it collects and reports, and runs no test
    envs = json.loads(os.environ["TEST_WORKER_ENVS"])
    own: dict[str, str] = envs[int(worker[2:])]
    os.environ.update(own)
    if "VAR_DIR" in own:
        Path(own["VAR_DIR"]).mkdir(parents=True, exist_ok=True)


_apply()
