"""The TypeScript client's tests (clients/typescript/test/, Node's test runner) against the
real server: this starts the server, installs the client's tools from its lockfile when they
are missing (npm ci), builds it and runs `npm test` with the server's address and keys."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.competitions.settled import node_grants
from tests.real_server import REPO_DIR, manage, node_env, setup_node, start_web, stop_all

pytestmark = pytest.mark.wall_clock

CLIENT_DIR = REPO_DIR / "clients" / "typescript"
GAME = "tssdk"
NPM_TIMEOUT_SECS = 300


def _npm(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail("npm is not installed: the TypeScript client's tests need Node.js and npm")
    return subprocess.run(
        [npm, *args], cwd=CLIENT_DIR, env=env, capture_output=True, text=True, timeout=NPM_TIMEOUT_SECS
    )


def _settled_season(node_env: dict[str, str], url: str, submit_key: str, manage_key: str) -> None:
    """A season board, "spring", ended by its manage key and settled as its close job would
    settle it (archive_period: no worker runs here): sam 3, tom 2, uma 1, the top two rewarded
    (players of their own: the rewards test counts ada's)."""
    now = dt.datetime.now(dt.UTC)
    boards = f"{url}/api/v1/games/{GAME}/leaderboards"
    spring = {
        "name": "Spring cup",
        "mode": "best",
        "order": "desc",
        "windows": ["all-time"],
        "starts_at": (now - dt.timedelta(hours=1)).isoformat(),
        "ends_at": (now + dt.timedelta(days=1)).isoformat(),
        "entry": "join",
        "rewards": [{"from_rank": 1, "to_rank": 2, "reward": {"badge": "spring"}}],
    }
    manage_auth, submit_auth = {"Authorization": f"Bearer {manage_key}"}, {"Authorization": f"Bearer {submit_key}"}
    answers = [httpx.put(f"{boards}/spring", json=spring, headers=manage_auth)]
    for player, score in (("sam", 3), ("tom", 2), ("uma", 1)):
        answers.append(httpx.post(f"{boards}/spring/entries", json={"player_id": player}, headers=submit_auth))
        answers.append(
            httpx.post(f"{boards}/spring/scores", json={"player_id": player, "score": score}, headers=submit_auth)
        )
    answers.append(httpx.post(f"{boards}/spring/end", headers=manage_auth))
    # A score is a heartbeat: gone again, so that the presence test sees only its own players.
    offline = {"offline": ["sam", "tom", "uma"]}
    answers.append(httpx.post(f"{url}/api/v1/games/{GAME}/presence", json=offline, headers=submit_auth))
    assert all(a.status_code in (200, 201) for a in answers), [a.text for a in answers]
    manage(node_env, "archive_period", GAME, "all-time", "all-time", "--board", "spring")


def _installed() -> None:
    if not (CLIENT_DIR / "node_modules" / ".package-lock.json").exists():
        installed = _npm("ci", "--no-audit", "--no-fund")
        assert installed.returncode == 0, installed.stdout + installed.stderr


@pytest.mark.django_db
def test_it_types_the_client_from_the_apis_current_schema(tmp_path: Path) -> None:
    from leaderboard_site.api import api

    _installed()
    current = api.get_openapi_schema()
    committed = json.loads((CLIENT_DIR / "openapi.json").read_text())
    assert committed == json.loads(json.dumps(current)), "the API changed: run make client-types"
    generated = tmp_path / "schema.d.ts"
    made = _npm("exec", "--", "openapi-typescript", "openapi.json", "--output", str(generated))
    assert made.returncode == 0, made.stderr
    assert generated.read_text() == (CLIENT_DIR / "src" / "schema.d.ts").read_text(), "run make client-types"


def test_it_passes_the_typescript_clients_tests_against_the_real_server(tmp_path: Path) -> None:
    _installed()
    node = setup_node(node_env(tmp_path), GAME)
    manage(node.env, "createleaderboard", GAME, "kills", "--mode", "increment")
    slow_key = manage(node.env, "createapikey", GAME, "--name", "slow", "--requests-per-minute", "60").strip()
    manage_key = manage(node.env, "createapikey", GAME, "--name", "ops", "--scope", "manage").strip()
    # Rewards as a settlement will grant them: ada's this week, bob's past its claim window.
    node_grants(node.env, game=GAME, board="prizes", grants=[("ada", 0, {"coins": 500}), ("bob", 31, {"coins": 5})])
    try:
        url = start_web(node)
        _settled_season(node.env, url, node.raw_key, manage_key)
        keys = {"LB_SUBMIT_KEY": node.raw_key, "LB_SLOW_KEY": slow_key, "LB_MANAGE_KEY": manage_key}
        env = {**os.environ, "LB_URL": url, "LB_GAME": GAME, **keys}
        finished = _npm("test", env=env)
    finally:
        stop_all(node)

    assert finished.returncode == 0, finished.stdout[-8000:] + finished.stderr[-4000:]
    assert "# fail 0" in finished.stdout and "# pass 13" in finished.stdout, finished.stdout[-3000:]


def test_it_passes_the_typescript_clients_webhook_verification_tests() -> None:
    """verifyWebhook against the vector the product's signer and the standardwebhooks library
    make (clients/typescript/test-webhooks/), and its refusals."""
    _installed()
    finished = _npm("run", "test:webhooks")
    assert finished.returncode == 0, finished.stdout[-8000:] + finished.stderr[-4000:]
    assert "# fail 0" in finished.stdout and "# pass 0" not in finished.stdout, finished.stdout[-3000:]
