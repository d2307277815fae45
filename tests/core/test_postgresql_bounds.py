"""core.postgresql: the time bounds of a process that serves requests, on a real PostgreSQL (a
database of the test's own, reached directly or through a proxy the test pauses). Skipped when
no PostgreSQL answers, but for the test of what a process without bounds is given."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import dj_database_url
import pytest
from django.db import OperationalError, connections, transaction

from core.postgresql.base import CUT_GRACE_SECS, RETRY_AFTER_OUTAGE_SECS, DatabaseWrapper, long_statements
from tests.postgres import Database, TcpProxy, fresh_database

pytestmark = pytest.mark.wall_clock

ALIAS = "bounded"
TIMEOUT_SECS = 1
# Longer than the statement timeout and the cut after it.
LONG_SLEEP_SECS = TIMEOUT_SECS + CUT_GRACE_SECS + 0.3
# How late an answer may come on a busy machine.
SLACK_SECS = 0.5


def _wrapper(url: str, *, timeout: int) -> DatabaseWrapper:
    options = {"connect_timeout": 2, "statement_timeout_secs": timeout}
    parsed: dict[str, Any] = {**dj_database_url.parse(url), "ENGINE": "core.postgresql", "OPTIONS": options}
    filled = connections.configure_settings({"default": parsed})["default"]  # Django's defaults
    return DatabaseWrapper(filled, ALIAS)


@pytest.fixture(scope="module")
def database() -> Iterator[Database]:
    with fresh_database() as database:
        yield database


@pytest.fixture
def bounded(django_db_blocker: Any) -> Iterator[Any]:
    """Opens a bounded connection (as ``connections[ALIAS]``) to a URL; closes it after."""
    opened: list[DatabaseWrapper] = []

    def open_bounded(url: str) -> DatabaseWrapper:
        wrapper = _wrapper(url, timeout=TIMEOUT_SECS)
        connections[ALIAS] = wrapper
        opened.append(wrapper)
        return wrapper

    with django_db_blocker.unblock():
        yield open_bounded
        for wrapper in opened:
            wrapper.close()
    del connections[ALIAS]


def _run(wrapper: DatabaseWrapper, statement: str) -> float:
    """Seconds ``statement`` took."""
    started = time.monotonic()
    with wrapper.cursor() as cursor:
        cursor.execute(statement)
    return time.monotonic() - started


def _failure(wrapper: DatabaseWrapper, statement: str) -> tuple[str, float]:
    """What ``statement`` failed with, and when."""
    started = time.monotonic()
    with pytest.raises(OperationalError) as failed:
        _run(wrapper, statement)
    return str(failed.value), time.monotonic() - started


def test_it_leaves_a_process_without_a_timeout_unbounded():
    wrapper = _wrapper("postgres://postgres@127.0.0.1:5432/test", timeout=0)
    params = wrapper.get_connection_params()
    assert "options" not in params and "statement_timeout_secs" not in params
    assert (wrapper.answer_within, wrapper.execute_wrappers) == (None, [])


def test_it_has_the_server_cancel_a_long_statement_and_keeps_the_connection(database, bounded):
    wrapper = bounded(database.url)
    assert "-c statement_timeout=1000" in wrapper.get_connection_params()["options"]

    message, seconds = _failure(wrapper, f"SELECT pg_sleep({LONG_SLEEP_SECS})")

    assert "statement timeout" in message
    assert TIMEOUT_SECS <= seconds < TIMEOUT_SECS + SLACK_SECS
    _run(wrapper, "SELECT 1")  # the same connection: the server cancelled, nothing was cut


def test_it_lets_the_statements_of_a_transaction_that_asks_run_long(database, bounded):
    wrapper = bounded(database.url)
    with transaction.atomic(using=ALIAS), long_statements(ALIAS):
        assert _run(wrapper, f"SELECT pg_sleep({LONG_SLEEP_SECS})") >= LONG_SLEEP_SECS

    message, _ = _failure(wrapper, f"SELECT pg_sleep({LONG_SLEEP_SECS})")  # bounded again after
    assert "statement timeout" in message


def test_it_cuts_a_statement_a_hung_database_never_answers_and_does_not_wait_on_it_again(database, bounded):
    proxy = TcpProxy((database.host, database.port))
    proxy.start()
    try:
        wrapper = bounded(database.through(proxy.port))
        _run(wrapper, "SELECT 1")
        proxy.pause()
        message, seconds = _failure(wrapper, "SELECT 1")
        wrapper.close()
        reconnect, reconnect_seconds = _failure(wrapper, "SELECT 1")
        proxy.resume()
        time.sleep(RETRY_AFTER_OUTAGE_SECS)
        _run(wrapper, "SELECT 1")
    finally:
        proxy.stop()

    assert "did not answer within 1.5 s" in message
    assert TIMEOUT_SECS + CUT_GRACE_SECS <= seconds < TIMEOUT_SECS + CUT_GRACE_SECS + SLACK_SECS
    # A new connection is not even tried for a second: not another timeout to wait out.
    assert "not tried again" in reconnect and reconnect_seconds < SLACK_SECS
