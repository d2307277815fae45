"""Bodies are bounded as they arrive, through a real server, on the API and on pages alike:

- over 1 MiB: refused (413) by its Content-Length before any of it is read, or as a chunked one
  streams past the limit, never spooled whole to disk first;
- slow: a body still incomplete BODY_READ_TIMEOUT_SECS after its headers (a client that stalls,
  or trickles a chunked body for ever) is cut (408), the server serving others meanwhile.

Either way the connection is closed after the answer: the rest of the body is never read.
"""

from __future__ import annotations

import json
import selectors
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from tests.real_server import Node, node_env, setup_node, start_web, stop_all

pytestmark = pytest.mark.wall_clock

READ_SECS = 10.0
# The servers' BODY_READ_TIMEOUT_SECS here: short, so that each slow body costs a test little.
DEADLINE_SECS = 2.0
# How late past the deadline the answer may come (the server's loop on a busy machine).
LATE_SECS = 2.0
# A trickling client sends a byte this often: always well within any per-read timeout.
TRICKLE_SECS = 0.1
PATH = "/api/v1/games/limits/leaderboards/main/scores"
PAGE_PATH = "/account/login/"


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    node = setup_node(node_env(tmp_path, BODY_READ_TIMEOUT_SECS=str(DEADLINE_SECS)), "limits")
    try:
        yield node
    finally:
        stop_all(node)


@pytest.fixture
def server(node: Node) -> tuple[str, int]:
    url = urlsplit(start_web(node))
    assert url.hostname is not None and url.port is not None
    return url.hostname, url.port


def _head(path: str, *, length: int | None = None, key: str = "nope", content_type: str = "application/json") -> bytes:
    """A POST's request line and headers: sized by ``length``, else chunked."""
    framing = f"Content-Length: {length}" if length is not None else "Transfer-Encoding: chunked"
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\n"
        f"Content-Type: {content_type}\r\n{framing}\r\n\r\n"
    ).encode()


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def _answer(connection: socket.socket) -> tuple[int, dict[bytes, bytes], bytes]:
    """The status, headers (lower-case names) and body of the server's answer (sized or chunked)."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += connection.recv(65536)
    head, _, rest = data.partition(b"\r\n\r\n")
    fields = dict(line.lower().split(b": ", 1) for line in head.split(b"\r\n")[1:])
    if b"content-length" in fields:
        while len(rest) < int(fields[b"content-length"]):
            rest += connection.recv(65536)
        body = rest
    else:  # chunked: read to the last chunk, then join the chunks
        while not rest.endswith(b"0\r\n\r\n"):
            rest += connection.recv(65536)
        body = b""
        while True:
            size, _, rest = rest.partition(b"\r\n")
            if int(size, 16) == 0:
                break
            body, rest = body + rest[: int(size, 16)], rest[int(size, 16) + 2 :]
    return int(head.split(b" ")[1]), fields, body


def _error(answer: tuple[int, dict[bytes, bytes], bytes]) -> tuple[int, str]:
    """The status and error code of a JSON error answer."""
    status, _, body = answer
    return status, json.loads(body)["error"]["code"]


def _closed(connection: socket.socket) -> bool:
    """Whether the server closed the connection after its answer (reset too: it left data unread)."""
    connection.settimeout(LATE_SECS)
    try:
        return connection.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def _score(server: tuple[str, int], player: str) -> int:
    """The status of the player's standing on the board: 404 while they have no score."""
    host, port = server
    return httpx.get(f"http://{host}:{port}/api/v1/games/limits/leaderboards/main/daily/players/{player}").status_code


def test_it_refuses_a_body_by_its_content_length_before_reading_it(server: tuple[str, int]) -> None:
    with socket.create_connection(server, timeout=READ_SECS) as connection:
        # 300 MB announced, none of it sent, and a key that is not one: the answer comes at once.
        connection.sendall(_head(PATH, length=300_000_000))
        answer = _answer(connection)
        assert _closed(connection)
    assert _error(answer) == (413, "body_too_large")


def test_it_refuses_a_chunked_body_once_it_streams_past_the_limit(server: tuple[str, int]) -> None:
    chunk = b"x" * 65536
    with socket.create_connection(server, timeout=READ_SECS) as connection:
        connection.sendall(_head(PATH))
        # 1 MiB and one chunk more, then the body never ends: the answer does not wait for it.
        for _ in range(17):
            connection.sendall(_chunk(chunk))
        answer = _answer(connection)
        assert _closed(connection)
    assert _error(answer) == (413, "body_too_large")


def test_it_answers_408_to_a_body_that_stalls_and_serves_others_meanwhile(node: Node, server: tuple[str, int]) -> None:
    host, port = server
    document = json.dumps({"player_id": "stalled", "score": 5}).encode()
    with socket.create_connection(server, timeout=READ_SECS) as connection:
        # A whole score announced as 1,000 bytes, then silence: were what came taken for the body,
        # the score would be written.
        connection.sendall(_head(PATH, length=1000, key=node.raw_key) + document)
        started = time.monotonic()
        other = httpx.post(
            f"http://{host}:{port}{PATH}",
            json={"player_id": "other", "score": 1},
            headers={"Authorization": f"Bearer {node.raw_key}"},
            timeout=READ_SECS,
        )
        unanswered = not _readable(connection, 0)
        answer = _answer(connection)
        waited = time.monotonic() - started
        assert _closed(connection)
    assert (other.status_code, unanswered) == (200, True)
    assert _error(answer) == (408, "body_timeout")
    assert DEADLINE_SECS - 0.5 < waited < DEADLINE_SECS + LATE_SECS
    assert (_score(server, "stalled"), _score(server, "other")) == (404, 200)


def _readable(connection: socket.socket, timeout: float) -> bool:
    """Whether the server answered within ``timeout`` s. Not select.select: it refuses a socket
    whose descriptor is past 1,024, which a long run of the suite in one process reaches."""
    with selectors.DefaultSelector() as selector:
        selector.register(connection, selectors.EVENT_READ)
        return bool(selector.select(timeout))


def test_it_cuts_a_chunked_body_that_trickles_on_past_the_deadline(node: Node, server: tuple[str, int]) -> None:
    with socket.create_connection(server, timeout=READ_SECS) as connection:
        # A whole score first, then a byte of whitespace every TRICKLE_SECS, for ever.
        connection.sendall(_head(PATH, key=node.raw_key) + _chunk(b'{"player_id": "trickled", "score": 5}'))
        started = time.monotonic()
        while not _readable(connection, TRICKLE_SECS):
            assert time.monotonic() - started < DEADLINE_SECS + LATE_SECS, "the trickle was not cut"
            connection.sendall(_chunk(b" "))
        answer = _answer(connection)
        waited = time.monotonic() - started
        assert _closed(connection)
    assert _error(answer) == (408, "body_timeout")
    assert waited > DEADLINE_SECS - 0.5
    assert _score(server, "trickled") == 404


def test_it_bounds_the_bodies_of_pages_too(server: tuple[str, int]) -> None:
    form = "application/x-www-form-urlencoded"
    with socket.create_connection(server, timeout=READ_SECS) as connection:
        connection.sendall(_head(PAGE_PATH, length=300_000_000, content_type=form))
        too_big = _answer(connection)
        assert _closed(connection)
    with socket.create_connection(server, timeout=READ_SECS) as connection:
        connection.sendall(_head(PAGE_PATH, length=1000, content_type=form) + b"username=ada")
        stalled = _answer(connection)
        assert _closed(connection)
    for (status, fields, body), expected in ((too_big, 413), (stalled, 408)):
        # A page's answer is text: the message alone.
        assert (status, fields[b"content-type"].split(b";")[0]) == (expected, b"text/plain")
        assert body.startswith(b"The request body")
