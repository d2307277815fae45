"""The API against its own OpenAPI schema: schemathesis drives the real server (every
operation, with a manage key for the authorized ones, all four phases and every check)
and must find no server error and no answer outside the schema. Along with its cases goes
the review's bad-input catalogue (tests/bad_inputs.py), derived from them (tests/contract/hostile.py):
each request of it refused, in the error envelope, changing nothing.

Run by `make test-api` (CI runs it after the suites); about a minute.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import auth
from tests.contract import hostile
from tests.real_server import REPO_DIR, manage, node_env, setup_node, start_web, stop_all

pytestmark = [pytest.mark.contract, pytest.mark.wall_clock]

CONFIG = Path(__file__).with_name("schemathesis.toml")
# The whole run's budget: the limit is 3 minutes.
RUN_TIMEOUT_SECS = 170
# A fixed seed: CI runs the same cases every time (SCHEMATHESIS_SEED=N explores others).
DEFAULT_SEED = "20261124"
SCORES = [("ada", 1200), ("bob", 900), ("cy", 1500), ("dee", 700)]
# The game holds as many boards as it may (main and speedrun), so that a PUT of a new one is
# refused (409 board_limit), and keeps its players online an hour, so that a hostile request's
# check reads the same online list before and after it.
LIMITS = (
    "from core.models import Game; game = Game.objects.get(slug='contract'); "
    "game.max_boards = 2; game.presence_timeout_secs = 3600; game.save()"
)


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
    manage(node.env, "shell", "-c", LIMITS)
    report, sent = tmp_path / "schemathesis.txt", tmp_path / "hostile.jsonl"
    try:
        url = start_web(node, log=tmp_path / "server.log")
        _fill(url, node.raw_key)
        schema = httpx.get(f"{url}/api/v1/openapi.json", timeout=10).json()
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
                    "ST_BASE_URL": url,
                    "ST_HOSTILE_LOG": str(sent),
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
    server_log = (tmp_path / "server.log").read_text()
    # With the server's first traceback: schemathesis's report does not say what broke.
    assert finished.returncode == 0, text[-20000:] + _first_traceback(server_log)
    assert re.search(r"Selected: (\d+)/\1\b", text), text[-3000:]  # every operation was tested
    assert "Traceback" not in server_log, server_log[-5000:]
    unsent = _unsent(schema, sent)
    assert not unsent, f"too few cases carried these (raise hooks.HOSTILE_PER_CASE): {unsent}"


def _first_traceback(log: str) -> str:
    at = log.find("Traceback")
    return "" if at < 0 else "\n\nThe server's log:\n" + log[max(0, at - 2000) : at + 6000]


def _unsent(schema: dict[str, Any], log: Path) -> dict[str, list[str]]:
    """Per operation, the catalogue requests the hooks planned and did not send."""
    sent: dict[str, set[str]] = {}
    for line in log.read_text().splitlines() if log.exists() else []:
        entry = json.loads(line)
        sent.setdefault(entry["operation"], set()).add(entry["name"])
    unsent = {}
    for path, methods in schema["paths"].items():
        for method, raw in methods.items():
            operation = hostile.Operation.of(method, path, raw)
            names = [name for name, _ in hostile.plan(operation)]
            missing = [name for name in names if name not in sent.get(operation.operation_id, set())]
            if missing:
                unsent[operation.operation_id] = missing
    return unsent
