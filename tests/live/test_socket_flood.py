"""A client that floods its socket past the message budget and never reads: the server closes it
with 1008 once, through a real uvicorn, and logs no ASGI error for a second close."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed
from websockets.typing import Origin

from live.sockets.base import CLOSE_POLICY, MESSAGE_BURST, REFUSED_MESSAGES_MAX
from tests.real_server import node_env, setup_node, start_web, stop_all

pytestmark = pytest.mark.wall_clock

GAME = "flood"
WAIT_SECS = 10.0


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    node = setup_node(node_env(tmp_path), GAME)
    log = tmp_path / "web.log"
    try:
        yield start_web(node, log=log), log
    finally:
        stop_all(node)


async def test_it_closes_a_flooding_client_once_without_an_asgi_error(server: tuple[str, Path]) -> None:
    url, log = server
    ws = await connect(url.replace("http://", "ws://") + f"/ws/games/{GAME}/", origin=Origin(url), max_queue=None)
    frame = json.dumps({"action": "presence"})
    sent = 0
    try:
        # Twice what it takes to be closed, without reading a reply: the refusals past the
        # limit keep arriving after the close was decided.
        for _ in range(2 * (MESSAGE_BURST + REFUSED_MESSAGES_MAX)):
            await ws.send(frame)
            sent += 1
    except ConnectionClosed:
        pass
    await asyncio.wait_for(ws.wait_closed(), WAIT_SECS)
    assert ws.close_code == CLOSE_POLICY
    assert sent > MESSAGE_BURST
    await asyncio.sleep(0.5)  # the server logs what it does after the close, if anything
    printed = log.read_text()
    assert "Unexpected ASGI message" not in printed
    assert "Traceback" not in printed
