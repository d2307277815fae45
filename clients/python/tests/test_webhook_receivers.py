"""The two example receivers (clients/python/examples/webhook_receiver.py and
clients/typescript/examples/webhook-receiver.ts), each started as a process the way their
docstrings say, and sent requests by the product's own sender (webhooks.services.sending: its
headers, its signatures, its HTTP client); the requests to refuse are the product's headers with
one thing wrong. Both examples are here, beside the Python client's tests, because this is the
client directory ``make test`` runs and because the product's signer is Python."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from core.outbox import EventEnvelope
from tests.conftest import free_port
from webhooks.services.enqueue import payload_of
from webhooks.services.sending import attempt_send, request_headers
from webhooks.signing import secret_new

pytestmark = pytest.mark.wall_clock

CLIENTS = Path(__file__).resolve().parents[2]
TS_CLIENT = CLIENTS / "typescript"
NPM_TIMEOUT_SECS = 300
STOP_TIMEOUT_SECS = 10

SETTLED: EventEnvelope = {
    "id": "evt_019cb8b81e0014be29dd1cca6c01",
    "type": "period.settled",
    "version": 1,
    "created_at": "2026-11-30T01:00:02.114Z",
    "data": {
        "game": "tetris",
        "leaderboard": "weekly-league",
        "window": "weekly",
        "period_id": "2026-W48",
        "entrants": 101,
        "cohorts": 4,
        "promoted": 20,
        "demoted": 15,
        "granted": 12,
        "settled_at": "2026-11-30T01:00:02.114Z",
        "settlement": "/api/v1/games/tetris/leaderboards/weekly-league/weekly/2026-W48/settlement",
    },
}
GRANTED: EventEnvelope = {
    "id": "evt_019cd2a8a1e000c0ffee00000001",
    "type": "reward.granted",
    "version": 1,
    "created_at": "2026-11-30T00:02:00.000Z",
    "data": {
        "game": "tetris",
        "leaderboard": "weekly-cup",
        "window": "weekly",
        "period_id": "2026-W48",
        "player_id": "zoë",
        "grant_id": "grant_h7Kq2XbN0vLw9RtYc3ZpEg",
        "cohort": "",
        "tier": "",
        "rank": 1,
        "reward": {"coins": 500, "badge": "cup-winner"},
        "granted_at": "2026-11-30T00:02:00.000Z",
        "expires_at": "2026-12-30T00:02:00.000Z",
    },
}
CLOSED: EventEnvelope = {
    "id": "evt_019cb8c0a1120000000000000000",
    "type": "board.closed",
    "version": 1,
    "created_at": "2026-11-24T09:30:00.000Z",
    "data": {"game": "tetris", "leaderboard": "beta-track", "closed_at": "2026-11-24T09:30:00.000Z"},
}


def _npm(*args: str) -> None:
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail("npm is not installed: the TypeScript receiver needs Node.js and npm")
    done = subprocess.run([npm, *args], cwd=TS_CLIENT, capture_output=True, text=True, timeout=NPM_TIMEOUT_SECS)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]


def _python_receiver() -> tuple[list[str], dict[str, str]]:
    example = CLIENTS / "python" / "examples" / "webhook_receiver.py"
    return [sys.executable, str(example)], {"PYTHONPATH": str(CLIENTS / "python"), "PYTHONIOENCODING": "utf-8"}


def _typescript_receiver() -> tuple[list[str], dict[str, str]]:
    if not (TS_CLIENT / "node_modules" / ".package-lock.json").exists():
        _npm("ci", "--no-audit", "--no-fund")
    _npm("run", "build")
    node = shutil.which("node")
    assert node is not None
    return [node, str(TS_CLIENT / "dist" / "examples" / "webhook-receiver.js")], {}


@dataclass
class Running:
    url: str
    process: subprocess.Popen[str]

    def stop(self) -> tuple[list[str], str]:
        """Its lines on stdout after the first ("listening on :port"), and its stderr."""
        if self.process.poll() is None:
            self.process.terminate()
        out, err = self.process.communicate(timeout=STOP_TIMEOUT_SECS)
        return out.splitlines(), err


@pytest.fixture(params=["python", "typescript"])
def receiver(request: pytest.FixtureRequest) -> Iterator[tuple[Running, list[str]]]:
    """The example running with two secrets (mid-rotation); it and them."""
    args, env = _python_receiver() if request.param == "python" else _typescript_receiver()
    secrets = [secret_new(), secret_new()]
    port = free_port()
    env = {**os.environ, **env, "WEBHOOK_SECRET": " ".join(secrets), "PORT": str(port)}
    process = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, encoding="utf-8")
    running = Running(f"http://127.0.0.1:{port}/hooks/leaderboard", process)
    assert process.stdout is not None
    first = process.stdout.readline()
    if first.strip() != f"listening on :{port}":
        _, err = running.stop()
        pytest.fail(f"the example did not start: {first!r} {err[-3000:]}")
    try:
        yield running, secrets
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


async def _send(url: str, event: EventEnvelope, signing: list[str]) -> int | None:
    async with httpx.AsyncClient() as http:
        answer = await attempt_send(
            http, url=url, msg_id=event["id"], payload=payload_of(event), signing=signing, now=dt.datetime.now(dt.UTC)
        )
    assert answer.status_code is not None, answer.error
    return answer.status_code


def _post(url: str, body: bytes, headers: dict[str, str]) -> int:
    return httpx.post(url, content=body, headers=headers).status_code


async def test_an_example_receiver_takes_what_the_product_sends_once_and_refuses_the_rest(
    receiver: tuple[Running, list[str]],
) -> None:
    running, (new, old) = receiver
    url = running.url

    # What the product sends, signed with both secrets while rotating, then with either alone.
    assert await _send(url, SETTLED, [new, old]) == 204
    assert await _send(url, GRANTED, [old]) == 204
    assert await _send(url, CLOSED, [new]) == 204  # a type it does not act on
    # A retry of a delivered event (same webhook-id and body, a new timestamp): answered, not redone.
    assert await _send(url, SETTLED, [new]) == 204
    assert await _send(url, GRANTED, [new, old]) == 204

    body = payload_of(GRANTED).encode()
    now = dt.datetime.now(dt.UTC)
    good = request_headers(msg_id=GRANTED["id"], payload=body, signing=[new], now=now)
    tampered = body.replace(b'"coins":500', b'"coins":50000')
    stale = request_headers(msg_id=GRANTED["id"], payload=body, signing=[new], now=now - dt.timedelta(hours=1))
    stranger = request_headers(msg_id=GRANTED["id"], payload=body, signing=[secret_new()], now=now)
    unsigned = {k: v for k, v in good.items() if k != "webhook-signature"}
    other_id = {**good, "webhook-id": "evt_019cd2a8a1e000c0ffee0000ffff"}
    assert _post(url, tampered, good) == 401
    assert _post(url, body, stale) == 401
    assert _post(url, body, stranger) == 401
    assert _post(url, body, other_id) == 401
    assert _post(url, body, unsigned) == 400
    assert _post(url, body, good) == 204  # the same request untampered: still good (and a repeat)

    lines, err = running.stop()
    # Each event acted on once, in the order it came.
    assert len(lines) == 2, (lines, err[-3000:])
    assert lines[0] == "period settled: tetris/weekly-league 2026-W48, 12 granted"
    assert lines[1].startswith("reward granted: zoë gets {") and lines[1].endswith("} (grant_h7Kq2XbN0vLw9RtYc3ZpEg)")
    assert "500" in lines[1] and "cup-winner" in lines[1]
    assert err.count("refused") == 5, err[-3000:]
