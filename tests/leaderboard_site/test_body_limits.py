"""A body over the API's 1 MiB is refused as it arrives, through a real server: by its
Content-Length before any of it is read, or as a chunked one streams past the limit, never
spooled whole to disk first."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.real_server import node_env, setup_node, start_web, stop_all

pytestmark = pytest.mark.wall_clock

READ_SECS = 10.0
PATH = "/api/v1/games/limits/leaderboards/main/scores"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, int]]:
    node = setup_node(node_env(tmp_path), "limits")
    try:
        url = urlsplit(start_web(node))
        assert url.hostname is not None and url.port is not None
        yield url.hostname, url.port
    finally:
        stop_all(node)


def _answer(connection: socket.socket) -> tuple[int, dict[str, object]]:
    """The status and JSON body of the server's answer (sized or chunked)."""
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
    return int(head.split(b" ")[1]), json.loads(body)


def test_it_refuses_a_body_by_its_content_length_before_reading_it(server: tuple[str, int]) -> None:
    with socket.create_connection(server, timeout=READ_SECS) as connection:
        # 300 MB announced, none of it sent, and a key that is not one: the answer comes at once.
        connection.sendall(
            f"POST {PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer nope\r\n"
            "Content-Type: application/json\r\nContent-Length: 300000000\r\n\r\n".encode()
        )
        status, body = _answer(connection)
    assert (status, body["error"]["code"]) == (413, "body_too_large")  # type: ignore[index]


def test_it_refuses_a_chunked_body_once_it_streams_past_the_limit(server: tuple[str, int]) -> None:
    chunk = b"x" * 65536
    with socket.create_connection(server, timeout=READ_SECS) as connection:
        connection.sendall(
            f"POST {PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\n\r\n".encode()
        )
        # 1 MiB and one chunk more, then the body never ends: the answer does not wait for it.
        for _ in range(17):
            connection.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        status, body = _answer(connection)
    assert (status, body["error"]["code"]) == (413, "body_too_large")  # type: ignore[index]
