"""schemathesis hooks for the contract run (tests/contract/schemathesis.toml)."""

from __future__ import annotations

import random
import re
import uuid
from typing import Any

import httpx
import schemathesis

from tests.contract import hostile

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


@schemathesis.hook
def filter_failure(ctx: Any, failure: Any, case: Any, response: Any) -> bool:
    """No negative-data verdict in the stateful phase, which draws valid data only: in
    schemathesis 4.32 a step could still be judged negative ("Invalid component: positive test
    case"), and `enabled = false` for the check there (schemathesis.toml) did not stop it."""
    stateful = case.meta is not None and case.meta.phase.name == "stateful"
    return not (stateful and getattr(failure, "code", "") == "ST201")


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
    problem = hostile.undocumented(case.operation.definition.raw["responses"], response.status_code, body)
    if problem is not None:
        raise AssertionError(problem)


# Each generated case of an operation carries this many of its catalogue requests along.
HOSTILE_PER_CASE = 4
_plans: dict[str, list[tuple[str, hostile.Maker]]] = {}
_sent: dict[str, int] = {}
_http: list[httpx.Client] = []


@schemathesis.check
def hostile_inputs_refused(ctx: Any, response: Any, case: Any) -> None:
    """The next few requests of the bad-input catalogue for this case's operation, derived from
    the case (tests/contract/hostile.py): no server error, a documented refusal in the envelope,
    the exact one where the catalogue says, and nothing changed."""
    if case.method.upper() != case.operation.method.upper():
        return
    raw = case.operation.definition.raw
    operation = hostile.Operation.of(case.operation.method, case.operation.path, raw)
    planned = _plans.setdefault(operation.operation_id, hostile.plan(operation))
    start = _sent.get(operation.operation_id, 0)
    batch = planned[start : start + HOSTILE_PER_CASE]
    if not batch:
        return
    _sent[operation.operation_id] = start + len(batch)
    if not _http:
        _http.append(hostile.client())
    http = _http[0]
    rng = random.Random(f"{operation.operation_id} {start}")
    before = hostile.snapshot(http) if operation.method != "GET" else None
    for name, make in batch:
        request = make(case.body if isinstance(case.body, dict | list) else None, rng)
        answer = hostile.send(http, request)
        hostile.log(operation, name, answer)
        problem = hostile.judge(raw["responses"], request, answer)
        if problem is None and before is not None and hostile.snapshot(http) != before:
            problem = "it was refused, but something changed"
        if problem is not None:
            raise AssertionError(f"{name}: {problem}\n{hostile.reproduce(request)}")
