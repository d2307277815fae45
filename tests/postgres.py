"""A PostgreSQL of the tests' own, and a TCP proxy in front of it that a test pauses (a hung
database) or closes (a database down): tests of what a database outage does to the product.

``fresh_database()`` makes a database on the server the suite's PostgreSQL run uses (skipping
the test when none answers) and drops it after; ``TcpProxy`` forwards a loopback port to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from psycopg import sql

# The server the suite's PostgreSQL run uses (.ci/run), unless DATABASE_URL names another.
DEFAULT_POSTGRES_URL = "postgres://postgres@127.0.0.1:5432/test"
PROXY_CHUNK_BYTES = 65_536
SERVER_CHECK_TIMEOUT_SECS = 3


class TcpProxy:
    """A TCP proxy to ``upstream`` on a loopback port of its own, on an event loop in a thread.

    ``pause()``: connections are still accepted and kept, but no byte goes either way (a hung
    database: its kernel still accepts and acknowledges). ``refuse()``: the port stops listening
    and every connection through it is closed (a database down). ``resume()`` undoes either."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="tcp-proxy", daemon=True)
        self._server: asyncio.Server | None = None
        self._forwarding = asyncio.Event()
        self._writers: set[asyncio.StreamWriter] = set()

    def start(self) -> None:
        self._thread.start()
        self._call(self._listen)

    def pause(self) -> None:
        self._call(self._pause)

    def refuse(self) -> None:
        self._call(self._refuse)

    def resume(self) -> None:
        self._call(self._resume)

    def stop(self) -> None:
        self._call(self._refuse)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)

    def _call(self, action: Callable[[], object]) -> None:
        async def run() -> None:
            result = action()
            if asyncio.iscoroutine(result):
                await result

        asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout=10)

    async def _listen(self) -> None:
        self._forwarding.set()
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    def _pause(self) -> None:
        self._forwarding.clear()

    async def _refuse(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        for writer in list(self._writers):
            writer.transport.abort()  # a reset, as from a database that went away
        self._forwarding.set()

    async def _resume(self) -> None:
        self._forwarding.set()
        if self._server is None:
            await self._listen()

    async def _serve(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        self._writers.add(client_writer)
        try:
            await self._forwarding.wait()  # paused: accepted, but not a byte through
            upstream_reader, upstream_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            client_writer.transport.abort()
            self._writers.discard(client_writer)
            return
        self._writers.add(upstream_writer)
        await asyncio.gather(
            self._pump(client_reader, upstream_writer),
            self._pump(upstream_reader, client_writer),
            return_exceptions=True,
        )
        for writer in (client_writer, upstream_writer):
            writer.transport.abort()
            self._writers.discard(writer)

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(PROXY_CHUNK_BYTES):
            await self._forwarding.wait()
            writer.write(data)
            await writer.drain()
        writer.transport.abort()


@dataclass(frozen=True)
class Database:
    """A database of the test's own on the PostgreSQL server, and how to reach it through a proxy."""

    url: str  # on the server itself
    host: str
    port: int

    def through(self, port: int) -> str:
        """Its URL through a proxy on this loopback port."""
        parts = urlsplit(self.url)
        credentials, at, _ = parts.netloc.rpartition("@")
        return urlunsplit(parts._replace(netloc=f"{credentials}{at}127.0.0.1:{port}"))


def _monotonic_faked() -> bool:
    """Whether this process runs under libfaketime with its monotonic clock moved too (.ci/run's
    date-bomb run: time.sleep fails under DONT_FAKE_MONOTONIC=1, so that run can't set it)."""
    return "faketime" in os.environ.get("LD_PRELOAD", "") and os.environ.get("DONT_FAKE_MONOTONIC") != "1"


@contextlib.contextmanager
def fresh_database() -> Iterator[Database]:
    """A new database on the server the suite's PostgreSQL run uses, dropped after (the test
    is skipped when no server answers)."""
    if _monotonic_faked():
        pytest.skip(
            "libfaketime fakes the monotonic clock but not sem_clockwait, so a thread's timed wait "
            "(the statement watchdog's) never ends under it; this runs in every other suite"
        )
    url = os.environ.get("DATABASE_URL", "")
    server = url if url.startswith(("postgres://", "postgresql://")) else DEFAULT_POSTGRES_URL
    try:
        psycopg.connect(server, connect_timeout=SERVER_CHECK_TIMEOUT_SECS).close()
    except psycopg.Error as error:
        pytest.skip(f"no PostgreSQL answers at {urlsplit(server).netloc} ({error})")
    name = f"lb_outage_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server, autocommit=True) as connection:
        connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    parts = urlsplit(server)
    try:
        yield Database(urlunsplit(parts._replace(path=f"/{name}")), parts.hostname or "127.0.0.1", parts.port or 5432)
    finally:
        with psycopg.connect(server, autocommit=True) as connection:
            connection.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
