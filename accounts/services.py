"""Account writes: link codes (issued for game servers, redeemed by signed-in users),
links, and the log-in lock-out. Views and API endpoints adapt to these.

Link codes live only in Redis (accounts/lua/link_code_*.lua); a redeemed code becomes
a :class:`~accounts.models.PlayerLink` row. Guessing is bounded twice: a code is
one of 31^8 (about 8.5 * 10^11) strings, valid ten minutes and single-use, and
wrong guesses lock out the user and the client address for a while.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import secrets
import uuid
from dataclasses import dataclass
from typing import Any, Literal

from django.contrib.auth import authenticate
from django.db import IntegrityError, transaction
from django.db.models import Q

from core import clock, errors, keys, text
from core import services as core_services
from core.addresses import client_address
from core.audit import Actor, audit_record
from core.config import GameConfig
from core.errors import ServiceError
from core.models import PLAYER_ID_MESSAGE, AuditEntry, Game, is_player_id
from core.redis import get_redis, run_sync

from . import scripts
from .models import PlayerLink

# No 0/O, 1/I/L: a code is read off a game screen and typed on a phone.
LINK_CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
LINK_CODE_LENGTH = 8
# Long enough to walk from the game to a browser and sign up first; short enough
# that few codes are live at once for a guesser to hit.
LINK_CODE_TTL_SECS = 600
# Live codes per player (the window is the codes' lifetime): a player who lost a
# code can ask again, but a game server cannot flood Redis or the guess space.
LINK_CODES_PER_PLAYER = 3
# A fresh code colliding with a live one is rare (live codes / 31^8); after this
# many draws in a row something is wrong and the caller gets an error.
LINK_CODE_DRAWS_MAX = 5

# Wrong codes are counted over this sliding window...
LINK_GUESS_WINDOW_SECS = 900
# ...per site user: enough for a few typos, far too few to search 31^8 codes.
LINK_GUESSES_PER_USER = 5
# ...and per client address, which bounds an attacker with many accounts; higher
# than the user limit because households and offices share one address.
LINK_GUESSES_PER_IP = 20

# Failed log-ins are counted over this sliding window...
LOGIN_FAILURE_WINDOW_SECS = 900
# ...per username from one address: someone guessing one account from one place is
# locked out for the window, and only there;
LOGIN_FAILURES_PER_PAIR = 5
# ...per client address, which stops spraying common passwords across many
# usernames; higher because an address can be shared by many honest users;
LOGIN_FAILURES_PER_IP = 30
# ...and per username from anywhere: past this many, the username takes one attempt
# per interval, from any address. A slow-down, never a lock-out: nobody can lock a
# known user out of their own account, and spreading guesses over many addresses
# still yields about two a minute.
LOGIN_SLOWDOWN_AFTER_FAILURES = 10
LOGIN_SLOWDOWN_INTERVAL_SECS = 30

# Accounts created from one client address (IPv4, or an IPv6 /64) per hour: a
# household's worth, not a bot's.
SIGNUPS_PER_IP = 10
SIGNUP_WINDOW_SECS = 3600
# Password-reset mails asked for from one address an hour: enough for a forgetful household,
# too few to flood someone's inbox from one place.
PASSWORD_RESETS_PER_IP = 5
PASSWORD_RESET_WINDOW_SECS = 3600

_CODE = re.compile(f"^[{LINK_CODE_ALPHABET}]{{{LINK_CODE_LENGTH}}}$")


def _minutes(wait_ms: int) -> str:
    minutes = max(1, math.ceil(wait_ms / 60_000))
    return f"{minutes} minute{'s' if minutes != 1 else ''}"


# --------------------------------------------------------------------------- issuing codes


@dataclass(frozen=True)
class IssuedCode:
    code: str
    player_id: str
    expires_at: dt.datetime


def _new_code() -> str:
    return "".join(secrets.choice(LINK_CODE_ALPHABET) for _ in range(LINK_CODE_LENGTH))


async def link_code_issue(*, game: GameConfig, player_id: str) -> IssuedCode:
    """A new one-time code that links a site user to ``player_id`` when entered on the site.

    Raises ServiceError: 422 malformed player id, 403 hidden player, 429 when the
    player already has LINK_CODES_PER_PLAYER live codes (with Retry-After).
    """
    if not is_player_id(player_id):
        raise errors.invalid("player_id", PLAYER_ID_MESSAGE)
    now_ms = clock.now_ms()
    for _ in range(LINK_CODE_DRAWS_MAX):
        code = _new_code()
        issued = await scripts.link_code_issue(
            get_redis(),
            slug=game.slug,
            player_id=player_id,
            code=code,
            now_ms=now_ms,
            ttl_ms=LINK_CODE_TTL_SECS * 1000,
            limit=LINK_CODES_PER_PLAYER,
        )
        if isinstance(issued, scripts.Issued):
            return IssuedCode(code=code, player_id=player_id, expires_at=clock.from_ms(issued.expires_ms))
        if issued.code is scripts.IssueRefusal.HIDDEN:
            raise errors.player_hidden()
        if issued.code is scripts.IssueRefusal.LIMIT:
            raise errors.link_code_limit(
                per_player=LINK_CODES_PER_PLAYER,
                minutes=LINK_CODE_TTL_SECS // 60,
                retry_secs=math.ceil(issued.retry_ms / 1000),
            )
        # 'collision': the code is live for someone else; draw another.
    raise errors.link_code_unavailable()


# --------------------------------------------------------------------------- redeeming codes


def link_code_normalise(raw: str) -> str:
    """What the user typed, as a code: case, spaces and dashes do not matter."""
    return re.sub(r"[\s-]+", "", raw or "").upper()


async def _redeem(
    slug: str, user_id: int, address: str, code: str, now_ms: int
) -> scripts.Redeemed | scripts.RedeemRefused:
    return await scripts.link_code_redeem(
        get_redis(),
        slug=slug,
        user_id=user_id,
        address=address,
        code=code,
        now_ms=now_ms,
        window_ms=LINK_GUESS_WINDOW_SECS * 1000,
        user_limit=LINK_GUESSES_PER_USER,
        ip_limit=LINK_GUESSES_PER_IP,
        member=uuid.uuid4().hex,
    )


def link_code_redeem(*, user: Any, game: Game | GameConfig, code: str, ip: str) -> PlayerLink:
    """Link ``user`` to the player a code was issued for, replacing the user's link in
    this game and any other user's link to that player. The code is used up.

    Input that cannot be a code at all (wrong length, a letter not in the alphabet)
    is refused with 422 ``invalid`` and costs no attempt: it could never succeed, so
    it helps no guesser. Every well-formed wrong, expired or used code costs one.

    Raises ServiceError: 422 ``invalid`` / ``invalid_code``, 429 ``too_many_attempts``
    (with Retry-After), 403 ``player_hidden``.
    """
    normalised = link_code_normalise(code)
    if not _CODE.match(normalised):
        raise errors.invalid("code", f"A link code is {LINK_CODE_LENGTH} letters and digits, like ABCD2345.")
    outcome = run_sync(_redeem, game.slug, user.pk, client_address(ip), normalised, clock.now_ms())
    if isinstance(outcome, scripts.RedeemRefused):
        if outcome.code is scripts.RedeemRefusal.LOCKED:
            retry_ms = outcome.retry_ms
            raise errors.too_many_attempts(wait=_minutes(retry_ms), retry_secs=math.ceil(retry_ms / 1000))
        raise errors.invalid_code(attempts_left=outcome.attempts_left)
    if outcome.hidden:
        raise errors.player_hidden(field="code")
    return _link(user=user, game_id=game.id, player_id=outcome.player_id)


def _link(*, user: Any, game_id: int, player_id: str) -> PlayerLink:
    # Two redemptions for the same player or user at once can both pass the delete;
    # the loser of the unique constraints tries again, and the last one wins.
    for attempt in range(3):
        try:
            with transaction.atomic():
                PlayerLink.objects.filter(Q(user=user) | Q(player_id=player_id), game_id=game_id).delete()
                return PlayerLink.objects.create(user=user, game_id=game_id, player_id=player_id)
        except IntegrityError:
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def account_delete(*, user: Any, password: str) -> int:
    """Deletes a site user who confirmed with their password, and their links (their players
    stay, with their scores: they are the game's); returns how many links went. Each unlinked
    player, or the account alone if it had none, leaves an entry in the audit trail.

    Raises ServiceError: 422 ``invalid`` (the password is not theirs)."""
    if not password or not user.check_password(password):
        raise errors.invalid("password", "That is not your password; your account is still here.")
    by = Actor(name=user.get_username())  # the entries outlive the user
    with transaction.atomic():
        links = list(PlayerLink.objects.select_related("game").filter(user=user))
        for link in links:
            audit_record(
                action=AuditEntry.Action.DELETE_ACCOUNT, game_slug=link.game.slug, by=by, player_id=link.player_id
            )
        if not links:
            audit_record(action=AuditEntry.Action.DELETE_ACCOUNT, game_slug="", by=by, detail={"links": 0})
        PlayerLink.objects.filter(user=user).delete()
        user.delete()
    return len(links)


def link_delete(*, user: Any, link_id: int) -> PlayerLink:
    """Remove one of the user's own links; returns it (no longer saved)."""
    link = PlayerLink.objects.select_related("game").filter(pk=link_id, user=user).first()
    if link is None:
        raise errors.not_found("You have no such link.")
    link.delete()
    return link


# --------------------------------------------------------------------------- log-in


async def _login_failures(
    op: Literal["check", "fail", "clear"], username: str, address: str, now_ms: int
) -> scripts.LoginWait:
    return await scripts.login_failures(
        get_redis(),
        op=op,
        username=username,
        address=address,
        now_ms=now_ms,
        window_ms=LOGIN_FAILURE_WINDOW_SECS * 1000,
        pair_limit=LOGIN_FAILURES_PER_PAIR,
        address_limit=LOGIN_FAILURES_PER_IP,
        slow_after=LOGIN_SLOWDOWN_AFTER_FAILURES,
        slow_ms=LOGIN_SLOWDOWN_INTERVAL_SECS * 1000,
        member=uuid.uuid4().hex,
    )


def _wait_text(wait_ms: int) -> str:
    seconds = max(1, math.ceil(wait_ms / 1000))
    if seconds < 90:
        return f"{seconds} second{'s' if seconds != 1 else ''}"
    return _minutes(wait_ms)


def _too_many(wait: scripts.LoginWait) -> ServiceError:
    wait_ms = wait.wait_ms
    if wait.block is scripts.LoginBlock.SLOWED:
        message = (
            f"This account has had many failed log-ins lately, so it takes one attempt every "
            f"{LOGIN_SLOWDOWN_INTERVAL_SECS} seconds. Try again in {_wait_text(wait_ms)}."
        )
    else:
        message = f"Too many failed log-ins. Try again in {_wait_text(wait_ms)}."
    return errors.too_many_logins(message, retry_secs=math.ceil(wait_ms / 1000))


def login_authenticate(*, username: str, password: str, ip: str) -> Any:
    """The user with these credentials, unless this username from this address, or this
    address, is locked out, or the username is slowed down (see the limits above).

    A refused attempt does not even reach the password check. A success does not
    clear the failure windows: they age out on their own, and clearing them would
    let anyone with one working account reset the per-address count at will.

    Raises ServiceError: 422 ``invalid`` (a blank field), 422 ``invalid_login``,
    429 ``too_many_logins`` (with Retry-After).
    """
    if not username.strip() or not password:
        raise errors.invalid("username", "Enter your username and password.")
    if text.has_control_characters(username) or "\x00" in password:
        # Never a real account's (Django refuses them at sign-up), and a database may refuse the query.
        raise errors.invalid_login()
    address, now_ms = client_address(ip), clock.now_ms()
    wait = run_sync(_login_failures, "check", username, address, now_ms)
    if wait.block is not None:
        raise _too_many(wait)
    user = authenticate(None, username=username, password=password)
    if user is None:
        wait = run_sync(_login_failures, "fail", username, address, now_ms)
        if wait.block is not None:
            raise _too_many(wait)
        raise errors.invalid_login()
    return user


def login_failures_clear(*, username: str, ip: str) -> None:
    """A password reset by e-mail proves the account is theirs: the lock-out of this username
    from this address and its slow-down end (the address's own count, across names, stays)."""
    run_sync(_login_failures, "clear", username, client_address(ip), clock.now_ms())


def password_reset_allowed(*, ip: str) -> int:
    """Count one reset mail asked for from a client address: 0, or the ms to wait past
    PASSWORD_RESETS_PER_IP an hour."""
    key = keys.password_resets_ip(client_address(ip))
    return int(
        run_sync(
            lambda: core_services.limit_take(
                key=key, window_secs=PASSWORD_RESET_WINDOW_SECS, limit=PASSWORD_RESETS_PER_IP
            )
        )
    )


def wait_text(wait_ms: int) -> str:
    return _wait_text(wait_ms)


def signup_allowed(*, ip: str) -> None:
    """Count one sign-up of a client address; 429 (with Retry-After) past SIGNUPS_PER_IP an hour."""
    key = keys.signups_ip(client_address(ip))
    wait_ms = run_sync(lambda: core_services.limit_take(key=key, window_secs=SIGNUP_WINDOW_SECS, limit=SIGNUPS_PER_IP))
    if wait_ms:
        raise errors.too_many_signups(wait=_wait_text(wait_ms), retry_secs=math.ceil(wait_ms / 1000))
