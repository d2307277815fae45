"""Signing as the Standard Webhooks specification says (standardwebhooks.com): a secret
``whsec_<base64 key>``, and ``v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`` per secret,
space-separated in one ``webhook-signature`` header while a rotated-out secret still signs."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Sequence

SECRET_PREFIX = "whsec_"
# The specification asks for 24 to 64 random bytes.
SECRET_BYTES = 32


def secret_new() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def signature(secret: str, *, msg_id: str, timestamp: int, body: bytes) -> str:
    key = base64.b64decode(secret.removeprefix(SECRET_PREFIX))
    mac = hmac.new(key, f"{msg_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode()


def signature_header(signing: Sequence[str], *, msg_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` value: one signature per secret, newest first."""
    return " ".join(signature(secret, msg_id=msg_id, timestamp=timestamp, body=body) for secret in signing)
