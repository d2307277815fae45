"""Django's PostgreSQL backend, bounded in time for the processes that serve requests.

With ``OPTIONS["statement_timeout_secs"]`` (settings.DB_STATEMENT_TIMEOUT_SECS: the web and
websocket roles set it, every other process leaves it at 0, Django's unbounded backend), a
database that does not answer is an outage (503 + Retry-After) within seconds, not a hang:

- the server cancels a statement that runs longer (``statement_timeout``, sent with the connect);
- a statement, commit or rollback still without an answer ``CUT_GRACE_SECS`` after that is cut
  by the client: its socket is shut down, and the error says the database did not answer. A hung
  server cannot enforce its own timeout, and its kernel still acknowledges what is sent and
  answers keepalive probes, so neither statement_timeout nor TCP keepalives nor libpq's
  ``tcp_user_timeout`` end such a wait (measured through a paused proxy: still waiting after
  12 s with all three at 1 s); the cut ends it, as it ends a wait on a network path that lost
  the server. A connect is bounded by ``connect_timeout`` (settings.DB_CONNECT_TIMEOUT_SECS);
- after a connect failed or a statement was cut, the process opens no new connection for
  ``RETRY_AFTER_OUTAGE_SECS``: the requests meanwhile fail at once, instead of each waiting out
  a timeout of its own, one after another, on the one thread that runs the API's database work
  (leaderboard_site/asgi.py).

``long_statements()`` lifts both bounds for one transaction of work that legitimately takes long
on a web process (deleting a game with millions of ledger rows from admin).
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
from django.db import DEFAULT_DB_ALIAS, OperationalError, connections
from django.db import Error as DatabaseError
from django.db.backends.postgresql import base
from django.db.transaction import TransactionManagementError

from .. import clock

# The server's own statement_timeout normally answers first (the connection survives, and the
# error says why); no answer even this long after it means nothing answers at all.
CUT_GRACE_SECS = 0.5
# After the database failed a connect or a statement was cut, this process does not try to
# connect again for this long: a second is little to wait once it is back, and it keeps a
# request from paying a timeout that the request before it just paid.
RETRY_AFTER_OUTAGE_SECS = 1.0
# The backend's own OPTIONS key (not passed to libpq).
STATEMENT_TIMEOUT_OPTION = "statement_timeout_secs"


class _Outage:
    """When this process last found the database not answering (a failed connect, a cut)."""

    def __init__(self) -> None:
        self._retry_at = 0.0

    def began(self) -> None:
        self._retry_at = clock.monotonic() + RETRY_AFTER_OUTAGE_SECS

    def check(self) -> None:
        """Raise (as a connect that failed would) while the last failure is recent."""
        wait = self._retry_at - clock.monotonic()
        if wait > 0:
            raise psycopg.OperationalError(
                f"the database did not answer under {RETRY_AFTER_OUTAGE_SECS:g} s ago; not tried again for {wait:.1f} s"
            )


class _Watchdog:
    """One thread per process that cuts a statement past its deadline: it shuts its socket down,
    so that libpq's wait for the answer ends with "server closed the connection"."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._watched: dict[int, tuple[float, int]] = {}  # ticket: (deadline, socket's fd)
        self._cut: set[int] = set()
        self._tickets = 0
        self._thread: threading.Thread | None = None

    def watch(self, fd: int, seconds: float) -> int:
        with self._changed:
            if self._thread is None or not self._thread.is_alive():  # none yet, or a forked child
                self._thread = threading.Thread(target=self._run, name="db-deadlines", daemon=True)
                self._thread.start()
            self._tickets += 1
            self._watched[self._tickets] = (clock.monotonic() + seconds, fd)
            self._changed.notify()
            return self._tickets

    def release(self, ticket: int) -> bool:
        """Stop watching (the statement ended); whether it was cut. Once released, the ticket's
        socket is never touched: under the lock, so that a closed fd reused by another
        connection cannot be cut."""
        with self._changed:
            self._watched.pop(ticket, None)
            if ticket in self._cut:
                self._cut.discard(ticket)
                return True
            return False

    def _run(self) -> None:
        with self._changed:
            while True:
                now = clock.monotonic()
                for ticket, (deadline, fd) in list(self._watched.items()):
                    if deadline <= now:
                        del self._watched[ticket]
                        self._cut.add(ticket)
                        _shut_down(fd)
                soonest = min((deadline for deadline, _ in self._watched.values()), default=None)
                self._changed.wait(None if soonest is None else soonest - now)


def _shut_down(fd: int) -> None:
    try:
        # A duplicate of the fd, closed after: the connection's own fd stays libpq's to close.
        with socket.socket(fileno=os.dup(fd)) as sock:
            sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # closed already: nothing left to wait for


_outage = _Outage()
_watchdog = _Watchdog()


class DatabaseWrapper(base.DatabaseWrapper):
    def __init__(self, settings_dict: dict[str, Any], alias: str = DEFAULT_DB_ALIAS) -> None:
        super().__init__(settings_dict, alias)
        timeout = settings_dict.get("OPTIONS", {}).get(STATEMENT_TIMEOUT_OPTION) or 0
        self.statement_timeout_secs: int = timeout
        # How long a statement may go without an answer before it is cut; None: unbounded.
        self.answer_within: float | None = timeout + CUT_GRACE_SECS if timeout else None
        if timeout:
            self.execute_wrappers.append(self._execute_bounded)

    def get_connection_params(self) -> dict[str, Any]:
        params = super().get_connection_params()
        params.pop(STATEMENT_TIMEOUT_OPTION, None)
        if self.statement_timeout_secs:
            setting = f"-c statement_timeout={self.statement_timeout_secs * 1000}"
            params["options"] = f"{params.get('options', '')} {setting}".strip()
        return params

    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
        if self.answer_within is None:
            return super().get_new_connection(conn_params)
        _outage.check()
        try:
            return super().get_new_connection(conn_params)
        except psycopg.OperationalError:
            _outage.began()
            raise

    def init_connection_state(self) -> None:
        with self._answered():  # a time zone to set is a statement too
            super().init_connection_state()

    # Django's hooks under commit() and rollback() (missing from the stubs: they are private).
    def _commit(self) -> None:
        with self._answered():
            super()._commit()  # type: ignore[misc]  # as above

    def _rollback(self) -> None:
        with self._answered():
            super()._rollback()  # type: ignore[misc]  # as above

    def _execute_bounded(
        self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: dict[str, Any]
    ) -> Any:
        with self._answered():
            return execute(sql, params, many, context)

    @contextlib.contextmanager
    def _answered(self) -> Iterator[None]:
        """The block's statements answered within ``answer_within``, or cut (OperationalError)."""
        seconds = self.answer_within
        if seconds is None or self.connection is None or self.connection.closed:
            yield
            return
        ticket = _watchdog.watch(self.connection.pgconn.socket, seconds)
        try:
            yield
        except DatabaseError as error:
            if _watchdog.release(ticket):
                _outage.began()
                raise OperationalError(
                    f"the database did not answer within {seconds:g} s (the connection was cut): {error}"
                ) from error
            raise
        finally:
            _watchdog.release(ticket)

    @contextlib.contextmanager
    def unbounded(self) -> Iterator[None]:
        """No statement timeout and no cut for the rest of the current transaction's block."""
        if self.answer_within is None:
            yield
            return
        if not self.in_atomic_block:
            raise TransactionManagementError("long_statements() lifts the bounds of a transaction: open one first")
        with self.cursor() as cursor:
            cursor.execute("SET LOCAL statement_timeout = 0")
        bound, self.answer_within = self.answer_within, None
        try:
            yield
        finally:
            self.answer_within = bound


@contextlib.contextmanager
def long_statements(using: str = DEFAULT_DB_ALIAS) -> Iterator[None]:
    """Inside ``transaction.atomic()``: the statements of the block may take as long as they take,
    on a process whose statements are otherwise bounded (see the module). Anywhere else (SQLite,
    a process without bounds) it changes nothing."""
    wrapper = connections[using]
    if not isinstance(wrapper, DatabaseWrapper):
        yield
        return
    with wrapper.unbounded():
        yield
