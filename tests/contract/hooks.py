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


_LISTED = re.compile(r"`([a-z_]+)`")


@schemathesis.check
def error_codes_documented(ctx: Any, response: Any, case: Any) -> None:
    """Every error the server answers carries a code the schema lists for that operation and status
    (core/openapi.py OPERATION_ERRORS, from the catalogue in core/errors/), and every refused item of
    a batch one of the codes its 200 lists."""
    if case.method.upper() != case.operation.method.upper():
        return  # a method the path does not have (405 method_not_allowed): no operation's error
    if response.status_code < 400 and case.operation.definition.raw.get("operationId") != "games_api_submit_batch":
        return
    try:
        body = response.json()
    except ValueError:
        return  # plain text (the HTTP server's own 400): no code to check
    declared = case.operation.definition.raw["responses"].get(str(response.status_code), {})
    if response.status_code >= 400:
        code = body["error"]["code"]
        listed = declared.get("content", {}).get("application/json", {}).get("examples", {})
        if code not in listed:
            raise AssertionError(f"{response.status_code} {code!r} is not documented here: {sorted(listed)}")
        return
    listed_items = set(_LISTED.findall(declared.get("description", "")))
    for result in body.get("results", []) if isinstance(body, dict) else []:
        if "error" in result and result["error"]["code"] not in listed_items:
            raise AssertionError(f"batch item code {result['error']['code']!r} is not documented: {listed_items}")
