"""The Lua scripts of accounts (accounts/lua/), each with its one typed wrapper: link codes
(link_code_issue, link_code_redeem) and the log-in lock-out (login_failures). Each builds its
script's KEYS and ARGV from named arguments through the layouts bound to the script's header
(core/lua.py) and parses the reply into a typed result; nothing else reads these replies.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from redis.asyncio import Redis

from core import keys
from core.lua import ScriptReplyError, load

LINK_CODE_ISSUE = load(__file__, "link_code_issue")
LINK_CODE_REDEEM = load(__file__, "link_code_redeem")
LOGIN_FAILURES = load(__file__, "login_failures")


def _pair(raw: Any, script: str) -> tuple[str, Any]:
    """The ``{code, value}`` reply of a script."""
    if not isinstance(raw, list) or len(raw) != 2 or not isinstance(raw[0], str):
        raise ScriptReplyError(f"{script} replied {raw!r}")
    return raw[0], raw[1]


def _ms(value: Any, raw: Any, script: str) -> int:
    if not isinstance(value, int) or value < 0:
        raise ScriptReplyError(f"{script} replied {raw!r}")
    return value


# --------------------------------------------------------------------------- link_code_issue


class _IssueKeys(NamedTuple):
    issued: str
    code_key: str
    hidden: str


class _IssueArgs(NamedTuple):
    now_ms: int
    ttl_ms: int
    limit: int
    player: str
    code: str


LINK_CODE_ISSUE.bind(keys=_IssueKeys, args=_IssueArgs)


@dataclass(frozen=True)
class Issued:
    expires_ms: int  # epoch ms


class IssueRefusal(enum.StrEnum):
    """Why link_code_issue issued no code; anything else in a reply is a bug (ScriptReplyError)."""

    LIMIT = "limit"  # the player has the most live codes
    HIDDEN = "hidden"  # the player is hidden
    COLLISION = "collision"  # the code is live for someone else: draw another


@dataclass(frozen=True)
class IssueRefused:
    code: IssueRefusal
    retry_ms: int  # LIMIT: ms until the player's oldest live code expires; else 0


async def link_code_issue(
    client: Redis, *, slug: str, player_id: str, code: str, now_ms: int, ttl_ms: int, limit: int
) -> Issued | IssueRefused:
    """Store ``code`` for ``player_id``, live ``ttl_ms``, unless the player is hidden, has
    ``limit`` live codes already, or the code is taken."""
    call = LINK_CODE_ISSUE.flatten(
        _IssueKeys(keys.link_codes_issued(slug, player_id), keys.link_code(slug, code), keys.hidden(slug)),
        _IssueArgs(now_ms, ttl_ms, limit, player_id, code),
    )
    raw = await LINK_CODE_ISSUE(client, *call)
    outcome, value = _pair(raw, "link_code_issue")
    if outcome == "ok":
        return Issued(_ms(value, raw, "link_code_issue"))
    try:
        refusal = IssueRefusal(outcome)
    except ValueError:
        raise ScriptReplyError(f"link_code_issue replied an unknown refusal {raw!r}") from None
    return IssueRefused(refusal, _ms(value, raw, "link_code_issue"))


# --------------------------------------------------------------------------- link_code_redeem


class _RedeemKeys(NamedTuple):
    user_fails: str
    ip_fails: str
    code_key: str
    hidden: str


class _RedeemArgs(NamedTuple):
    now_ms: int
    window_ms: int
    user_limit: int
    ip_limit: int
    member: str


LINK_CODE_REDEEM.bind(keys=_RedeemKeys, args=_RedeemArgs)


@dataclass(frozen=True)
class Redeemed:
    """The code was right, and is used up."""

    player_id: str  # whom it was issued for
    hidden: bool  # that player is hidden (no link may be made)


class RedeemRefusal(enum.StrEnum):
    """Why link_code_redeem tried no code or found it wrong; anything else is a bug."""

    WRONG = "wrong"  # wrong, expired or used: one guess counted
    LOCKED = "locked"  # the user or the address is locked out: nothing tried


@dataclass(frozen=True)
class RedeemRefused:
    code: RedeemRefusal
    attempts_left: int  # WRONG: wrong guesses left before the lock-out; else 0
    retry_ms: int  # LOCKED: ms until a guess is allowed again; else 0


async def link_code_redeem(
    client: Redis,
    *,
    slug: str,
    user_id: int,
    address: str,
    code: str,
    now_ms: int,
    window_ms: int,
    user_limit: int,
    ip_limit: int,
    member: str,
) -> Redeemed | RedeemRefused:
    """Try ``code`` for site user ``user_id`` from client ``address`` (a lock-out's unit),
    counting a wrong guess (``member``, unique to this attempt) in both sliding windows."""
    call = LINK_CODE_REDEEM.flatten(
        _RedeemKeys(
            keys.link_failures_user(slug, user_id),
            keys.link_failures_ip(slug, address),
            keys.link_code(slug, code),
            keys.hidden(slug),
        ),
        _RedeemArgs(now_ms, window_ms, user_limit, ip_limit, member),
    )
    raw = await LINK_CODE_REDEEM(client, *call)
    outcome, value = _pair(raw, "link_code_redeem")
    if outcome in ("ok", "hidden") and isinstance(value, str):
        return Redeemed(value, outcome == "hidden")
    if outcome == RedeemRefusal.WRONG:
        return RedeemRefused(RedeemRefusal.WRONG, _ms(value, raw, "link_code_redeem"), 0)
    if outcome == RedeemRefusal.LOCKED:
        return RedeemRefused(RedeemRefusal.LOCKED, 0, _ms(value, raw, "link_code_redeem"))
    raise ScriptReplyError(f"link_code_redeem replied an unknown outcome {raw!r}")


# --------------------------------------------------------------------------- login_failures


class _LoginKeys(NamedTuple):
    pair: str
    address: str
    user: str
    next_attempt: str


class _LoginArgs(NamedTuple):
    op: str
    now_ms: int
    window_ms: int
    pair_limit: int
    address_limit: int
    slow_after: int
    slow_ms: int
    member: str


LOGIN_FAILURES.bind(keys=_LoginKeys, args=_LoginArgs)


class LoginBlock(enum.StrEnum):
    """Why a log-in attempt must wait; anything else in a reply is a bug (ScriptReplyError)."""

    LOCKED = "locked"  # the (username, address) pair or the address is locked out
    SLOWED = "slowed"  # the username takes one attempt per interval


@dataclass(frozen=True)
class LoginWait:
    wait_ms: int  # until an attempt may be made; 0: now
    block: LoginBlock | None  # None exactly when wait_ms is 0


_BLOCKS: dict[str, LoginBlock | None] = {"": None, "locked": LoginBlock.LOCKED, "slowed": LoginBlock.SLOWED}


async def login_failures(
    client: Redis,
    *,
    op: Literal["check", "fail", "clear"],
    username: str,
    address: str,
    now_ms: int,
    window_ms: int,
    pair_limit: int,
    address_limit: int,
    slow_after: int,
    slow_ms: int,
    member: str,
) -> LoginWait:
    """'check': may ``username`` try to log in from ``address`` now; 'fail': record a failed
    attempt (``member``, unique to it) and say whether it completed a lock-out; 'clear': forget
    the username's failures (after a password reset), except the address's own count."""
    call = LOGIN_FAILURES.flatten(
        _LoginKeys(
            keys.login_failures_pair(username, address),
            keys.login_failures_ip(address),
            keys.login_failures_user(username),
            keys.login_next_attempt(username),
        ),
        _LoginArgs(op, now_ms, window_ms, pair_limit, address_limit, slow_after, slow_ms, member),
    )
    raw = await LOGIN_FAILURES(client, *call)
    if not isinstance(raw, list) or len(raw) != 2 or not isinstance(raw[1], str) or raw[1] not in _BLOCKS:
        raise ScriptReplyError(f"login_failures replied {raw!r}")
    wait_ms, block = _ms(raw[0], raw, "login_failures"), _BLOCKS[raw[1]]
    if (wait_ms == 0) is not (block is None):
        raise ScriptReplyError(f"login_failures replied {raw!r}")
    return LoginWait(wait_ms, block)
