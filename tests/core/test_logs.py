"""Logs: a request id on every request and line, each event once, JSON on demand, no secrets."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path

import httpx
import pytest
from django.test import Client

from core import logs
from tests.real_server import node_env, setup_node, start_web, stop_all

pytestmark = pytest.mark.django_db


def test_it_echoes_the_clients_request_id() -> None:
    response = Client().get("/api/v1/games", HTTP_X_REQUEST_ID="game-server-7f3a")

    assert response["X-Request-ID"] == "game-server-7f3a"


def test_it_makes_a_request_id_when_there_is_none_or_it_is_not_a_token() -> None:
    made = Client().get("/api/v1/games")["X-Request-ID"]
    replaced = Client().get("/api/v1/games", HTTP_X_REQUEST_ID='bad id"\n{"level": "error"}')["X-Request-ID"]

    assert len(made) == 32 and int(made, 16) >= 0
    assert len(replaced) == 32 and replaced != made


def test_it_logs_a_refused_request_once_with_its_request_id(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO):
        Client().get("/no-such-page/", HTTP_X_REQUEST_ID="r-404")
        Client().get("/api/v1/no-such-endpoint", HTTP_X_REQUEST_ID="r-api-404")

    lines = [r for r in caplog.records if r.name in ("leaderboard_site.access", "django.request")]
    assert [r.name for r in lines] == ["leaderboard_site.access", "leaderboard_site.access"]
    # The access log's message is the line's fields (a dict), formatted as JSON by core.logs.
    fields = [r.msg for r in lines if isinstance(r.msg, dict)]
    assert [f["request_id"] for f in fields] == ["r-404", "r-api-404"]
    assert [f["status"] for f in fields] == [404, 404]


def test_it_binds_context_for_a_block_only() -> None:
    with logs.context(request_id="outer"):
        assert logs.bound("request_id") == "outer"
        with logs.context(request_id="inner"):
            assert logs.bound("request_id") == "inner"
        assert logs.bound("request_id") == "outer"
    assert logs.bound("request_id") is None


@pytest.mark.django_db(transaction=True)
def test_it_prints_one_json_line_per_event_with_request_ids_and_never_a_key(tmp_path: Path) -> None:
    node = setup_node(
        node_env(tmp_path, LOG_FORMAT="json", DEBUG="0", SECRET_KEY="x" * 50, SECURE_SSL_REDIRECT="0"), "logged"
    )
    log = tmp_path / "server.log"
    try:
        url = start_web(node, log=log)
        board = f"{url}/api/v1/games/logged/leaderboards/main"
        ok = httpx.post(
            f"{board}/scores",
            json={"player_id": "ada", "score": 10},
            headers={"Authorization": f"Bearer {node.raw_key}", "X-Request-ID": "submit-1"},
        )
        wrong_key = node.raw_key[:-4] + "zzzz"
        refused = httpx.post(
            f"{board}/scores", json={"player_id": "ada", "score": 11}, headers={"Authorization": f"Bearer {wrong_key}"}
        )
        missing = httpx.get(f"{url}/api/v1/games/logged/nothing-here", headers={"X-Request-ID": "lost-1"})
    finally:
        stop_all(node)

    assert (ok.status_code, refused.status_code, missing.status_code) == (200, 401, 404)
    assert ok.headers["X-Request-ID"] == "submit-1"
    text = log.read_text()
    assert node.raw_key not in text and wrong_key not in text
    assert node.raw_key.split("_")[-1] not in text  # not even the secret part alone
    events = [json.loads(line) for line in text.splitlines() if line.strip()]
    requests = [e for e in events if e["event"] == "request" and e["path"] != "/healthz"]
    assert [(e["method"], e["status"], e["request_id"]) for e in requests if e["request_id"] != refused_id(events)] == [
        ("POST", 200, "submit-1"),
        ("GET", 404, "lost-1"),
    ]
    assert sum("/nothing-here" in json.dumps(e) for e in events) == 1  # the 404, once
    assert all({"timestamp", "level", "logger"} <= e.keys() for e in events)


def refused_id(events: list[dict[str, object]]) -> object:
    """The made-up request id of the 401 (it sent none): its access line is there once too."""
    (refused,) = [e for e in events if e.get("status") == 401]
    assert isinstance(refused["request_id"], str) and len(refused["request_id"]) == 32
    return refused["request_id"]


@pytest.mark.parametrize("log_format", ["console", "json"])
def test_it_prints_no_local_variable_in_a_traceback(log_format: str) -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logs.formatter(log_format))
    logger = logging.getLogger("tests.locals")
    logger.addHandler(handler)
    try:
        secret_hash = "pbkdf2_sha256$secret-that-must-not-print"
        try:
            raise ValueError(f"no key here ({len(secret_hash)} chars)")
        except ValueError:
            logger.exception("failed")
    finally:
        logger.removeHandler(handler)
    printed = stream.getvalue()
    assert "ValueError: no key here" in printed
    assert "secret-that-must-not-print" not in printed
