"""Verifying the product's webhooks on the receiving side, as the Standard Webhooks
specification says (standardwebhooks.com). Standard library only.

Each request carries ``webhook-id`` (the event's id, the same on every retry), ``webhook-timestamp``
(unix seconds) and ``webhook-signature``: ``v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">``,
keyed by the base64-decoded part of the endpoint's secret after ``whsec_``; space-separated, one
per secret, while a rotated-out secret still signs.

    from leaderboard_client.webhooks import WebhookVerificationError, verify

    try:
        event = verify(os.environ["WEBHOOK_SECRET"], raw_body, request_headers)
    except WebhookVerificationError as e:
        answer(e.status)  # 400 or 401; never act on the body
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import hashlib
import hmac
import json
import re
import time
from collections.abc import Iterable, Mapping
from typing import Any, TypedDict, cast

from .errors import LeaderboardError

SECRET_PREFIX = "whsec_"
# The specification's tolerance: a request signed more than five minutes before (or after) now
# is refused, so a captured request cannot be replayed later.
DEFAULT_TOLERANCE_SECS = 300
SIGNATURE_VERSION = "v1"
_DIGITS = re.compile(r"[0-9]{1,15}")


class WebhookEvent(TypedDict):
    """The event envelope (docs/events.md): ``data`` holds the type's payload."""

    id: str
    type: str
    version: int
    created_at: str
    data: dict[str, Any]


class WebhookVerificationError(LeaderboardError):
    """A request that must not be acted on. ``status`` is what to answer it with (400: headers
    missing or malformed, or a body that is not an event; 401: a timestamp outside the tolerance,
    or no signature made with the secret(s)); ``code`` says which:
    ``missing_headers``, ``invalid_timestamp``, ``timestamp_out_of_tolerance``,
    ``no_matching_signature``, ``invalid_body``."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(status, code, message)


def _key(secret: str) -> bytes:
    encoded = secret.strip().removeprefix(SECRET_PREFIX)
    try:
        key = base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("not a webhook secret: expected whsec_ and base64") from None
    if not key:
        raise ValueError("not a webhook secret: it is empty")
    return key


def _keys(secret_or_secrets: str | Iterable[str]) -> list[bytes]:
    secrets = [secret_or_secrets] if isinstance(secret_or_secrets, str) else list(secret_or_secrets)
    if not secrets:
        raise ValueError("no webhook secret given")
    return [_key(secret) for secret in secrets]


def _signatures(header: str) -> list[bytes]:
    """The header's ``v1`` signatures, decoded; others (unknown versions, garbage) are skipped."""
    found = []
    for token in header.split():
        version, _, encoded = token.partition(",")
        if version != SIGNATURE_VERSION:
            continue
        try:
            found.append(base64.b64decode(encoded, validate=True))
        except (binascii.Error, ValueError):
            continue
    return found


def _now_secs(now: float | dt.datetime | None) -> float:
    if now is None:
        return time.time()
    if isinstance(now, dt.datetime):
        if now.tzinfo is None:
            raise ValueError("now must be an aware datetime (or unix seconds)")
        return now.timestamp()
    return float(now)


def verify(
    secret_or_secrets: str | Iterable[str],
    body: bytes | bytearray | memoryview,
    headers: Mapping[str, str],
    *,
    tolerance_secs: float = DEFAULT_TOLERANCE_SECS,
    now: float | dt.datetime | None = None,
) -> WebhookEvent:
    """The event of a webhook request, once its signature and timestamp check out.

    ``secret_or_secrets``: the endpoint's secret (``whsec_…``), or several while one is being
    rotated (any of them verifies). ``body``: the request's raw bytes, exactly as received (not
    parsed and serialized again). ``headers``: any mapping of header names to values, names in
    any case. ``now``: unix seconds or an aware datetime, for tests; the wall clock by default.

    Raises ``WebhookVerificationError`` for a request to refuse, ``ValueError`` for a secret that
    is not one (a configuration error, not the request's), ``TypeError`` for a body not bytes.
    """
    keys = _keys(secret_or_secrets)
    if not isinstance(body, bytes | bytearray | memoryview):
        raise TypeError("body must be the raw request body as bytes")
    body = bytes(body)
    named = {name.lower(): value for name, value in headers.items()}
    msg_id = named.get("webhook-id", "")
    stamp = named.get("webhook-timestamp", "").strip()
    signature = named.get("webhook-signature", "")
    missing = [
        name for name in ("webhook-id", "webhook-timestamp", "webhook-signature") if not named.get(name, "").strip()
    ]
    if missing:
        raise WebhookVerificationError(400, "missing_headers", "missing " + ", ".join(missing))
    if not _DIGITS.fullmatch(stamp):
        raise WebhookVerificationError(400, "invalid_timestamp", "webhook-timestamp is not unix seconds")
    timestamp = int(stamp)
    if abs(_now_secs(now) - timestamp) > tolerance_secs:
        raise WebhookVerificationError(
            401, "timestamp_out_of_tolerance", f"webhook-timestamp is more than {tolerance_secs:g} s from now"
        )

    signed = f"{msg_id}.{timestamp}.".encode() + body
    expected = [hmac.new(key, signed, hashlib.sha256).digest() for key in keys]
    given = _signatures(signature)
    # Every pair is compared, in constant time each: how long it takes does not depend on
    # which signature or how much of one matched.
    matched = False
    for mac in expected:
        for candidate in given:
            matched |= hmac.compare_digest(mac, candidate)
    if not matched:
        raise WebhookVerificationError(401, "no_matching_signature", "no v1 signature made with the secret(s)")

    try:
        event = json.loads(body)
    except ValueError:  # json.JSONDecodeError and UnicodeDecodeError both are
        raise WebhookVerificationError(400, "invalid_body", "the body is not JSON") from None
    if not isinstance(event, dict) or not isinstance(event.get("type"), str) or not isinstance(event.get("data"), dict):
        raise WebhookVerificationError(400, "invalid_body", "the body is not an event envelope")
    return cast(WebhookEvent, event)
