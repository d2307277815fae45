"""The API against its own OpenAPI schema: schemathesis drives the real server (every
operation, with a manage key for the authorized ones, all four phases and every check)
and must find no server error and no answer outside the schema.

Run by `make test-api` (CI runs it after the suites); about a minute.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.conftest import auth
from tests.real_server import REPO_DIR, manage, node_env, setup_node, start_web, stop_all

pytestmark = [pytest.mark.contract, pytest.mark.wall_clock]

CONFIG = Path(__file__).with_name("schemathesis.toml")
# The whole run's budget: the limit is 3 minutes.
RUN_TIMEOUT_SECS = 170
# A fixed seed: CI runs the same cases every time (SCHEMATHESIS_SEED=N explores others).
DEFAULT_SEED = "20261124"
SCORES = [("ada", 1200), ("bob", 900), ("cy", 1500), ("dee", 700)]


def _fill(url: str, raw_key: str) -> None:
    """A few scores and players online, so that reads have rows to answer with."""
    with httpx.Client(base_url=f"{url}/api/v1/games/contract", headers=auth(raw_key), timeout=10) as client:
        for player_id, score in SCORES:
            client.post("/leaderboards/main/scores", json={"player_id": player_id, "score": score}).raise_for_status()
        client.post("/presence", json={"online": ["ada", "bob"]}).raise_for_status()


def test_it_answers_every_generated_request_within_its_schema_and_never_with_a_server_error(tmp_path: Path) -> None:
    node = setup_node(node_env(tmp_path), "contract")
    manage(node.env, "createleaderboard", "contract", "speedrun", "--mode", "best", "--order", "asc")
    manage_key = manage(node.env, "createapikey", "contract", "--name", "schemathesis", "--scope", "manage").strip()
    report = tmp_path / "schemathesis.txt"
    try:
        url = start_web(node, log=tmp_path / "server.log")
        _fill(url, node.raw_key)
        command = [str(Path(sys.executable).with_name("schemathesis")), "--config-file", str(CONFIG), "run"]
        seed = os.environ.get("SCHEMATHESIS_SEED", DEFAULT_SEED)
        command += [f"{url}/api/v1/openapi.json", "--checks", "all", "--seed", seed]
        with report.open("w") as out:
            finished = subprocess.run(
                command,
                cwd=REPO_DIR,
                env={
                    **os.environ,
                    "ST_API_KEY": manage_key,
                    "ST_PERIOD_ID": dt.datetime.now(dt.UTC).date().isoformat(),
                    "PYTHONPATH": str(REPO_DIR),
                    "NO_COLOR": "1",
                },
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=RUN_TIMEOUT_SECS,
            )
    finally:
        stop_all(node)

    text = report.read_text()
    assert finished.returncode == 0, text[-20000:]
    assert re.search(r"Selected: (\d+)/\1\b", text), text[-3000:]  # every operation was tested
    server_log = (tmp_path / "server.log").read_text()
    assert "Traceback" not in server_log, server_log[-5000:]
