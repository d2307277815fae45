"""What the OpenAPI schema says beyond the endpoints' signatures: the headers a client sends
and reads, and the fixed vocabularies of path and query parameters.

django-ninja builds each operation from its view (parameters, body, response schemas);
``complete`` then adds, in one place for every operation, what the API does the same
way everywhere (core/api.py, leaderboard_site/middleware.py):

- ``X-Request-ID`` in and out of every request;
- on key-authorized operations, ``RateLimit-Policy`` and ``RateLimit`` on every answer
  after the key was recognised (``Authorization`` is the ``BearerKey`` security scheme);
- ``Retry-After`` on every 429 and 503;
- ``Idempotency-Key`` on the submissions, and ``Idempotent-Replayed`` on their 200;
- enums for the window (``period``) wherever it is a parameter, and patterns for the
  parameters the views check themselves (player ids, ``ids``, ``q``);
- an example of what each error status says (``ERROR_EXAMPLES``).
"""

from __future__ import annotations

import copy
from typing import Any

from . import models
from .errors import UNAVAILABLE_MESSAGE
from .schemas import SINGLE_LINE_PATTERN

# The windows a board can keep (games/periods.py), as they appear in URLs.
PERIODS = ["daily", "weekly", "monthly", "all-time", "custom"]
# One player id (models.PLAYER_ID_RE: 1-64 of these characters, not only dots), as a piece of
# a pattern: the lookahead bounds its length up to the next comma or the end.
_PLAYER_ID = "(?=[A-Za-z0-9_.:-]{1,64}(?:,|$))\\.*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*"
# Path parameters the views check themselves (422 with their own messages), by name.
PATH_SCHEMAS: dict[str, dict[str, Any]] = {
    "player_id": {"minLength": 1, "maxLength": 64, "pattern": models.PLAYER_ID_RE},
}
# Query parameters the views check themselves (with their own 422 messages), by name.
QUERY_SCHEMAS: dict[str, dict[str, Any]] = {
    # Comma-separated player ids (games/api.py player_ids_param): at least one, at most 100.
    "ids": {"pattern": f"^,*{_PLAYER_ID}(,+{_PLAYER_ID})*,*$", "maxLength": 100 * 65},
    # A name search: one line of text.
    "q": {"pattern": SINGLE_LINE_PATTERN},
}
# The operations that take an Idempotency-Key (games/api.py).
IDEMPOTENT_OPERATIONS = frozenset({"games_api_submit_score", "games_api_submit_batch"})

_REF = "#/components/{}/{}"

HEADERS: dict[str, dict[str, Any]] = {
    "X-Request-ID": {
        "description": "This request's id: the client's X-Request-ID when it sent a plain token, else a new one. "
        "Every log line of the request carries it.",
        "schema": {"type": "string", "maxLength": 128, "examples": ["3f2b9c0d6e8a4b1f9a7c5d3e1f0a2b4c"]},
    },
    "Retry-After": {
        "description": "Seconds to wait before retrying (a rate limit, or a brief outage).",
        "required": True,
        "schema": {"type": "string", "pattern": "^[0-9]+$", "examples": ["5"]},
    },
    "RateLimit-Policy": {
        "description": "The key's budgets (IETF draft): requests and items (scores, player ids) per window of seconds.",
        "schema": {"type": "string", "examples": ['"api-key";q=600;w=60, "items";q=60000;w=60']},
    },
    "RateLimit": {
        "description": "What is left of each budget and seconds until it is full again (IETF draft).",
        "schema": {"type": "string", "examples": ['"api-key";r=599;t=1, "items";r=59999;t=1']},
    },
    "Idempotent-Replayed": {
        "description": "'true' when this answer is the stored answer of an earlier request with the same "
        "Idempotency-Key (nothing was applied again).",
        "schema": {"type": "string", "enum": ["true"]},
    },
}

PARAMETERS: dict[str, dict[str, Any]] = {
    "XRequestID": {
        "in": "header",
        "name": "X-Request-ID",
        "required": False,
        "description": "Your own id for this request (a trace id): echoed back and in every log line. Any "
        "value is accepted; one that is not 1-128 letters, digits and ._:@/+=- is replaced by a new id.",
        "schema": {"type": "string", "examples": ["match-8812-final"]},
    },
    "IdempotencyKey": {
        "in": "header",
        "name": "Idempotency-Key",
        "required": False,
        "description": "Makes retries safe: a retry with the same key (and the same body) is applied once and "
        "answered again with Idempotent-Replayed: true; the same key with another body is refused "
        "(422 idempotency_mismatch). 1-255 printable ASCII characters, remembered for IDEMPOTENCY_TTL_SECS "
        "(a day by default).",
        "schema": {"type": "string", "pattern": "^[\\x20-\\x7e]{1,255}$", "examples": ["match-8812-ada"]},
    },
}


# Any request can be one the server cannot take: a Host this site does not serve (JSON), or a
# request line or headers too large to parse (uvicorn answers those itself, in text).
MALFORMED: dict[str, Any] = {
    "description": "Bad Request: a Host this site does not serve, malformed JSON, or a request the HTTP server "
    "could not parse (a request line or headers over its limits; answered in plain text).",
    "content": {
        "application/json": {"schema": {"$ref": "#/components/schemas/ErrorOut"}},
        "text/plain": {"schema": {"type": "string"}},
    },
}


def _ref(kind: str, name: str) -> dict[str, str]:
    return {"$ref": _REF.format(kind, name)}


def _error(code: str, message: str, field: str | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "field": field}}


# What each error status says, as the API says it (docs/api.md lists every code).
ERROR_EXAMPLES: dict[int, dict[str, Any]] = {
    400: _error("malformed_json", "The request body is not valid JSON."),
    401: _error("missing_api_key", "Send the API key as 'Authorization: Bearer <key>'."),
    403: _error("revoked_api_key", "This API key has been revoked."),
    404: _error("game_not_found", "No game 'tetris'."),
    409: _error(
        "board_closed",
        "The leaderboard 'main' is closed: it takes no more scores; its standings stay readable.",
        "leaderboard",
    ),
    413: _error("body_too_large", "The request body is over 1 MiB."),
    422: _error("invalid", "This field is required.", "score"),
    429: _error("rate_limited", "This API key is limited to 600 requests per minute; retry in 1 s."),
    503: _error("unavailable", UNAVAILABLE_MESSAGE),
}


def _parameters(operation_id: str, operation: dict[str, Any]) -> None:
    parameters = operation.setdefault("parameters", [])
    for parameter in parameters:
        name, where = parameter.get("name"), parameter.get("in")
        if name == "period" and where in ("path", "query"):
            parameter["schema"] = {**parameter.get("schema", {}), "type": "string", "enum": PERIODS}
        elif where == "query" and name in QUERY_SCHEMAS:
            parameter["schema"] = {**parameter.get("schema", {}), **QUERY_SCHEMAS[name]}
        elif where == "path" and name in PATH_SCHEMAS:
            parameter["schema"] = {**parameter.get("schema", {}), **PATH_SCHEMAS[name]}
    parameters.append(_ref("parameters", "XRequestID"))
    if operation_id in IDEMPOTENT_OPERATIONS:
        parameters.append(_ref("parameters", "IdempotencyKey"))


def _responses(operation_id: str, operation: dict[str, Any]) -> None:
    responses = operation.setdefault("responses", {})
    if 400 not in responses and "400" not in responses:
        responses[400] = copy.deepcopy(MALFORMED)
    keyed = bool(operation.get("security"))
    for key, response in responses.items():
        status = int(key)
        headers = response.setdefault("headers", {})
        headers["X-Request-ID"] = _ref("headers", "X-Request-ID")
        if keyed and status != 401:
            headers["RateLimit-Policy"] = _ref("headers", "RateLimit-Policy")
            headers["RateLimit"] = _ref("headers", "RateLimit")
        if status in (429, 503):
            headers["Retry-After"] = _ref("headers", "Retry-After")
        if operation_id in IDEMPOTENT_OPERATIONS and status == 200:
            headers["Idempotent-Replayed"] = _ref("headers", "Idempotent-Replayed")
        body = response.get("content", {}).get("application/json")
        if body is not None and status in ERROR_EXAMPLES:
            body["example"] = ERROR_EXAMPLES[status]


def complete(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with the shared headers and vocabularies added (a copy; idempotent)."""
    schema = copy.deepcopy(schema)
    components = schema.setdefault("components", {})
    components.setdefault("headers", {}).update(copy.deepcopy(HEADERS))
    components.setdefault("parameters", {}).update(copy.deepcopy(PARAMETERS))
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            names = {p.get("$ref") or p.get("name") for p in operation.get("parameters", [])}
            if _REF.format("parameters", "XRequestID") not in names:
                _parameters(operation.get("operationId", ""), operation)
                _responses(operation.get("operationId", ""), operation)
    return schema
