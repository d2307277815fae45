"""Logging: one line per event, JSON for log pipelines or readable lines for a terminal,
each carrying the request id of the request (or socket, or task) it belongs to.

Every logger, the product's ``logging.getLogger(__name__)`` ones and Django's, Celery's
and uvicorn's, goes through structlog's ``ProcessorFormatter`` on the root handler
(``logging_config``), so that third-party lines get the same timestamp, level and
context as ours. The context lives in contextvars (``structlog.contextvars``): bound
once where a request, a socket or a task starts, it reaches every line logged while
it runs, including code it awaits and sync code it runs in a thread
(``asgiref.sync_to_async`` copies the context).

Nothing here logs request headers or bodies: API keys travel in ``Authorization`` and
never reach a log line (tests/core/test_logs.py greps a real run for one).
"""

from __future__ import annotations

import logging
import re
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import structlog

REQUEST_ID_HEADER = "X-Request-ID"
# What a client may send as its own request id: a proxy's or a game server's trace id
# (uuid, hex, base64url). Anything else is replaced, so that a header cannot forge
# log structure or grow every line.
_CLIENT_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:@/+=-]{1,128}$")

LOG_FORMATS = ("json", "console")

_SHARED: list[Any] = [
    structlog.contextvars.merge_contextvars,
    structlog.stdlib.add_log_level,
    structlog.stdlib.add_logger_name,
    structlog.processors.TimeStamper(fmt="iso", utc=True),
]


def request_id_from(header: str | None) -> str:
    """The client's ``X-Request-ID`` if it is a sane token, else a new one (32 hex digits)."""
    if header and _CLIENT_REQUEST_ID.match(header):
        return header
    return uuid.uuid4().hex


def bind(**values: Any) -> None:
    """Add context to every log line of the current request, socket or task."""
    structlog.contextvars.bind_contextvars(**values)


def clear() -> None:
    """Drop all bound context (a task ended: the next one on this thread starts clean)."""
    structlog.contextvars.clear_contextvars()


def bound(name: str) -> Any:
    """A value bound by ``bind`` in the current context (None if not)."""
    return structlog.contextvars.get_contextvars().get(name)


@contextmanager
def context(**values: Any) -> Iterator[None]:
    """``values`` bound for the duration of a block (a task, a socket), then unbound."""
    tokens = structlog.contextvars.bind_contextvars(**values)
    try:
        yield
    finally:
        structlog.contextvars.reset_contextvars(**tokens)


def get_logger(name: str) -> Any:
    """A structlog logger writing through the stdlib logger ``name`` (key-value events)."""
    return structlog.stdlib.get_logger(name)


def _renderer(log_format: str) -> Any:
    if log_format == "json":
        return structlog.processors.JSONRenderer()
    # Plain tracebacks: structlog's default where rich is installed prints every frame's local
    # variables, and a local may be a secret (an API key's hash was, in a review).
    return structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty(), exception_formatter=structlog.dev.plain_traceback)


def configure_structlog() -> None:
    """structlog's own loggers hand their events to the stdlib handlers (idempotent)."""
    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *_SHARED,
            structlog.stdlib.PositionalArgumentsFormatter(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )


def formatter(log_format: str) -> structlog.stdlib.ProcessorFormatter:
    """The root handler's formatter (named in ``logging_config``)."""
    final: list[Any] = [structlog.stdlib.ProcessorFormatter.remove_processors_meta]
    if log_format == "json":
        # A traceback becomes one "exception" string, so the event stays one line.
        final.append(structlog.processors.format_exc_info)
    final.append(_renderer(log_format))
    return structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[*_SHARED, structlog.stdlib.ExtraAdder(allow=["status_code"])],
        processors=final,
    )


class ServerErrorsOnly:
    """A filter for ``django.request``: the access line (leaderboard_site.middleware) already
    says every 4xx once; Django's own "Not Found: /x" would say it a second time. Its 5xx
    lines stay: they carry the traceback."""

    def filter(self, record: Any) -> bool:
        return int(getattr(record, "status_code", 500)) >= 500


def logging_config(*, log_format: str, level: str) -> dict[str, Any]:
    """Django's LOGGING: one root handler on stderr, formatted by structlog."""
    configure_structlog()
    # Python's warnings too become log lines (py.warnings), not bare text among the JSON.
    logging.captureWarnings(True)
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"structlog": {"()": f"{__name__}.formatter", "log_format": log_format}},
        "filters": {"server_errors_only": {"()": f"{__name__}.ServerErrorsOnly"}},
        "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "structlog"}},
        "root": {"handlers": ["console"], "level": level},
        "loggers": {
            # Each of these would otherwise keep a handler of its own (Django's while DEBUG
            # is on, uvicorn's from its default config): every line would come out twice,
            # once unformatted. One handler, the root's.
            "django": {"handlers": [], "level": "INFO", "propagate": True},
            "django.request": {"handlers": [], "filters": ["server_errors_only"], "propagate": True},
            "uvicorn": {"handlers": [], "level": "INFO", "propagate": True},
            "uvicorn.error": {"handlers": [], "level": "INFO", "propagate": True},
            # uvicorn runs with --no-access-log: the product's access line has the request id.
            "uvicorn.access": {"handlers": [], "level": "WARNING", "propagate": False},
            # Celery's own per-task chatter ("received", "succeeded", "sending due task" every
            # few seconds for the drain) is not an event worth a line; its warnings and
            # errors are. The tasks log what they did themselves.
            "celery": {"handlers": [], "level": "DEBUG" if level == "DEBUG" else "WARNING", "propagate": True},
        },
    }
