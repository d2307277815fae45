"""Reply checks the archive's script wrappers share: a value of another shape than the
script's header says is a bug between the two, so it raises instead of passing for an outcome."""

from __future__ import annotations

from typing import Any

from core.lua import ScriptReplyError


def flag(raw: Any, script: str) -> bool:
    """A reply of 1 (done) or 0 (refused)."""
    if type(raw) is not int or raw not in (0, 1):
        raise ScriptReplyError(f"{script} replied {raw!r}")
    return raw == 1


def count(value: Any, raw: Any, script: str) -> int:
    """A count or an instant (ms) in a reply: a Lua number, never negative."""
    if type(value) is not int or value < 0:
        raise ScriptReplyError(f"{script} replied {raw!r}")
    return value


def flat(raw: Any, width: int, script: str) -> list[Any]:
    """A reply of ``width``-tuples laid end to end."""
    if not isinstance(raw, list) or len(raw) % width:
        raise ScriptReplyError(f"{script} replied {raw!r}")
    return raw
