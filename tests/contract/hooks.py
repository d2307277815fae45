"""schemathesis hooks for the contract run (tests/contract/schemathesis.toml)."""

from __future__ import annotations

import re
import uuid
from typing import Any

import schemathesis

_VALID_KEY = re.compile(r"^[\x20-\x7e]{1,255}$")


@schemathesis.hook
def before_call(ctx: Any, case: Any, **kwargs: Any) -> None:
    """A fresh Idempotency-Key per generated request, as a client makes one per logical
    submission: schemathesis would otherwise send one key with different bodies, which the API
    refuses by design (422 idempotency_mismatch). A key that breaks the schema is left as drawn."""
    headers = case.headers or {}
    key = headers.get("Idempotency-Key")
    if isinstance(key, str) and _VALID_KEY.match(key):
        headers["Idempotency-Key"] = uuid.uuid4().hex
        case.headers = headers
