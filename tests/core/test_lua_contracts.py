"""Every Lua script against its typed wrapper: its header is the machine-readable contract
core/lua.py describes, a wrapper bound NamedTuples to it, and they still agree; a reply a
wrapper does not know raises ScriptReplyError instead of passing for another outcome."""

from __future__ import annotations

import hashlib
import importlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from core import lua
from core.lua import ContractError, Script, ScriptReplyError, parse_contract
from core.redis import get_redis

REPO = Path(__file__).resolve().parents[2]

# Every app's scripts module: importing them registers every script (core.lua.REGISTERED).
SCRIPT_MODULES = (
    "core.scripts",
    "games.scripts",
    "accounts.scripts",
    "presence.scripts",
    "archive.scripts",
    "archive.ledger.board_scripts",
    "moderation.scripts",
    "live.scripts",
)


def _registered() -> dict[str, Script]:
    for module in SCRIPT_MODULES:
        importlib.import_module(module)
    by_name: dict[str, Script] = {}
    for script in lua.REGISTERED:
        assert script.name not in by_name, f"two scripts are named {script.name}"
        by_name[script.name] = script
    return by_name


def test_it_registers_every_lua_file_of_every_app() -> None:
    files = {path.stem for path in REPO.glob("*/lua/*.lua") if not path.is_relative_to(REPO / ".venv")}
    assert files - set(_registered()) == set(), "a script no scripts module loads"


@pytest.mark.parametrize("name", sorted(_registered()))
def test_it_binds_every_script_to_layouts_that_match_its_header(name: str) -> None:
    script = _registered()[name]
    parse_contract(script.own_source, name)  # raises ContractError on a header it cannot read
    assert script.layouts is not None, f"{name} has no wrapper bound to it (Script.bind in its scripts module)"
    keys, args, key_groups, arg_groups = script.layouts
    # The check bind() ran at import, on the header as it is now.
    script.bind(keys=keys, args=args, key_groups=key_groups, arg_groups=arg_groups)


def test_it_refuses_a_layout_that_differs_from_the_header() -> None:
    script = _registered()["sliding_window"]
    assert script.layouts is not None
    keys, args, _, _ = script.layouts
    with pytest.raises(ContractError, match="ARGV"):
        script.bind(keys=keys, args=keys)
    script.bind(keys=keys, args=args)


# --------------------------------------------------------------------------- unknown replies


def _impostor(script: Script, body: str) -> Script:
    """A script with ``script``'s header and layouts but another body: the real Redis runs it."""
    lines = script.own_source.splitlines()
    header = lines[: next(i for i, line in enumerate(lines) if not line.startswith("--"))]
    source = "\n".join([*header, "", body, ""])
    fake = Script(script.name, source, hashlib.sha1(source.encode()).hexdigest())
    fake.layouts = script.layouts
    return fake


async def _issue() -> object:
    from accounts import scripts

    return await scripts.link_code_issue(
        get_redis(), slug="g", player_id="p", code="ABCD2345", now_ms=1, ttl_ms=600_000, limit=3
    )


async def _redeem() -> object:
    from accounts import scripts

    return await scripts.link_code_redeem(
        get_redis(),
        slug="g",
        user_id=1,
        address="10.0.0.1",
        code="ABCD2345",
        now_ms=1,
        window_ms=900_000,
        user_limit=5,
        ip_limit=20,
        member="m",
    )


async def _login() -> object:
    from accounts import scripts

    return await scripts.login_failures(
        get_redis(),
        op="check",
        username="u",
        address="10.0.0.1",
        now_ms=1,
        window_ms=900_000,
        pair_limit=5,
        address_limit=30,
        slow_after=10,
        slow_ms=30_000,
        member="m",
    )


async def _rate() -> object:
    from core import scripts

    return await scripts.rate_limit(
        get_redis(),
        slug="g",
        prefix="abcdefgh",
        now_ms=1,
        window_ms=60_000,
        requests_per_window=10,
        items_per_window=10,
        items=1,
    )


async def _page_leave() -> object:
    from presence import scripts

    return await scripts.presence_page_leave(
        get_redis(), slug="g", player_id="p", socket_id="s", now_ms=1, timeout_ms=60_000, announce_ms=60_000
    )


async def _close_fail() -> object:
    from archive import scripts

    return await scripts.close_fail(
        get_redis(),
        ref="g.main",
        job="daily:2026-11-20",
        token=1,
        now_ms=1,
        backoff_ms=30_000,
        backoff_cap_ms=1_800_000,
        max_attempts=5,
        error="e",
    )


async def _close_reap() -> object:
    from archive import scripts

    return await scripts.close_reap(get_redis(), ref="g.main", now_ms=1, max_attempts=5, limit=100, error="e")


async def _close_lock() -> object:
    from archive import scripts

    return await scripts.close_lock(
        get_redis(), ref="g.main", period="daily", period_id="2026-11-20", op="release", token="run", lifetime_ms=1
    )


async def _close_sweep() -> object:
    from archive import scripts

    return await scripts.close_sweep(get_redis(), refs=["g.main"], now_ms=1)


async def _ledger_trim() -> object:
    from archive import scripts

    return await scripts.ledger_trim(get_redis(), ref="g.main", group="ledger-db")


@pytest.mark.parametrize(
    ("module", "constant", "body", "call"),
    [
        ("accounts.scripts", "LINK_CODE_ISSUE", "return {'banned', 0}", _issue),
        ("accounts.scripts", "LINK_CODE_REDEEM", "return {'expired', 3}", _redeem),
        ("accounts.scripts", "LOGIN_FAILURES", "return {5, 'banned'}", _login),
        ("core.scripts", "RATE_LIMIT", "return {0, 'bytes', 5, 0, 0, 0, 0, '0'}", _rate),
        ("presence.scripts", "PRESENCE_UPDATE", "return 'vanished'", _page_leave),
        ("archive.scripts.close_jobs", "CLOSE_FAIL", "return {'vanished', 0, 0}", _close_fail),
        ("archive.scripts.close_jobs", "CLOSE_REAP", "return {'daily:2026-11-20', 'gone'}", _close_reap),
        ("archive.scripts.period_archive", "CLOSE_LOCK", "return 2", _close_lock),
        ("archive.scripts.close_jobs", "CLOSE_SWEEP", "return {0, '', 0, 'daily:2026-11-20', 2}", _close_sweep),
        ("archive.scripts.ledger", "LEDGER_TRIM", "return 'trimmed'", _ledger_trim),
    ],
    ids=[
        "link_code_issue",
        "link_code_redeem",
        "login_failures",
        "rate_limit",
        "presence_update",
        "close_fail",
        "close_reap",
        "close_lock",
        "close_sweep",
        "ledger_trim",
    ],
)
async def test_it_raises_on_an_unknown_refusal_code(
    monkeypatch: pytest.MonkeyPatch,
    module: str,
    constant: str,
    body: str,
    call: Callable[[], Awaitable[Any]],
) -> None:
    await call()  # the real script's reply is one the wrapper knows
    scripts = importlib.import_module(module)
    monkeypatch.setattr(scripts, constant, _impostor(getattr(scripts, constant), body))
    with pytest.raises(ScriptReplyError):
        await call()
