"""Every websocket message is checked against its declaration in live/events.py.

As Zulip's event_schema.py does: the declarations are the protocol, so a message
that strays from them (a key added, dropped or of another type, a timestamp in
another format) fails the test that received it. The consumer tests' sockets
(live_helpers.CheckedCommunicator) and the browser tests' pages
(tests/live_server.py) call :func:`check_event` on every message.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import TypeAdapter

from live import events

ADAPTERS: dict[str, TypeAdapter[Any]] = {kind: TypeAdapter(shape) for kind, shape in events.PAYLOADS.items()}
# The one format of instants (core.clock.iso).
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
TIMESTAMP_FIELDS = frozenset({"resets_at", "last_seen", "at"})


def _timestamps(value: Any) -> list[str]:
    """Every value of a timestamp field anywhere in a message."""
    found: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key in TIMESTAMP_FIELDS and isinstance(item, str):
                found.append(item)
            else:
                found += _timestamps(item)
    elif isinstance(value, list):
        for item in value:
            found += _timestamps(item)
    return found


def check_event(message: Any) -> None:
    """Raise AssertionError unless ``message`` is exactly one of the declared payloads."""
    assert isinstance(message, dict), f"not a JSON object: {message!r}"
    kind = message.get("type")
    assert kind in ADAPTERS, f"undeclared message type {kind!r}: {message!r}"
    try:
        ADAPTERS[kind].validate_python(message, strict=True)
    except Exception as error:
        raise AssertionError(f"{kind} message does not match its declaration: {error}") from None
    for stamp in _timestamps(message):
        assert TIMESTAMP.match(stamp), f"{kind} message has a timestamp in another format: {stamp!r}"
