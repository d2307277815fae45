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
- for each error status of each operation, the codes it can answer (``OPERATION_ERRORS``, from the
  catalogue in core/errors/), in its description and with an example of each.
"""

from __future__ import annotations

import copy
import datetime as dt
from http import HTTPStatus
from typing import Any

from . import competition_rules, errors, models
from .errors import ServiceError
from .schemas import SINGLE_LINE_PATTERN

# The windows a board can keep (games/periods.py), as they appear in URLs.
PERIODS = ["daily", "weekly", "monthly", "all-time", "custom"]
# One player id (models.PLAYER_ID_RE: 1-64 of these characters, not only dots), as a piece of
# a pattern: the lookahead bounds its length up to the next comma or the end.
_PLAYER_ID = "(?=[A-Za-z0-9_.:-]{1,64}(?:,|$))\\.*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*"
# Path parameters the views check themselves (422 with their own messages), by name.
PATH_SCHEMAS: dict[str, dict[str, Any]] = {
    "player_id": {"minLength": 1, "maxLength": 64, "pattern": models.PLAYER_ID_RE},
    "grant_id": {"pattern": competition_rules.GRANT_ID_RE},
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


class _Tetris:
    name = "Tetris"


_SEASON_END = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)


# When the examples' weekly period closed its entry: an hour after it started.
_ENTRY_CLOSED = dt.datetime(2026, 11, 23, 1, 0, tzinfo=dt.UTC)
# When the examples' reward stopped being claimable: 30 days after the week settled.
_CLAIM_ENDED = dt.datetime(2026, 12, 30, 0, 2, tzinfo=dt.UTC)


def _samples() -> dict[str, ServiceError]:
    """One example of every code an API client can meet, as the API says it."""
    samples = [
        errors.malformed_json(),
        errors.bad_host(),
        errors.bad_request(),
        errors.missing_api_key(),
        errors.invalid_api_key(),
        errors.revoked_api_key(),
        errors.wrong_game(),
        errors.game_inactive(),
        errors.player_hidden(message="This player is hidden and cannot submit scores."),
        errors.scope(),
        errors.game_not_found(slug="tetris"),
        errors.board_not_found(game=_Tetris(), board="main"),
        errors.period_not_found("This leaderboard keeps no monthly window."),
        errors.not_found("Player 'ada' has no score on this board."),
        errors.reward_not_found(grant_id="grant_h7Kq2XbN0vLw9RtYc3ZpEg"),
        errors.webhook_not_found(what="endpoint 'ep_3kTq9XbN0vLw9RtYc3ZpEg'", field="endpoint_id"),
        errors.webhook_limit(limit=20),
        errors.webhook_disabled(reason="The endpoint answered 410 Gone."),
        errors.method_not_allowed(),
        errors.body_timeout(secs=10),
        errors.board_closed(board="main", active=True, ends_at=_SEASON_END),
        errors.board_has_scores(settings=["mode"]),
        errors.competition_running(settings=["max_entrants"], window="weekly", period_id="2026-W48", entrants=812),
        errors.board_limit(limit=200),
        errors.conflict("The board was created meanwhile; retry.", field="slug"),
        errors.not_competing(board="main"),
        errors.not_a_league(board="main"),
        errors.not_entered(board="weekly-cup", period_id="2026-W48"),
        errors.entry_closed(period_id="2026-W48", closed_at=_ENTRY_CLOSED),
        errors.board_full(period_id="2026-W48", max_entrants=100),
        errors.attempts_exhausted(period_id="2026-W48", used=3, allowed=3),
        errors.no_cohorts(board="main", message="This leaderboard has no cohorts."),
        errors.not_settled(period_id="2026-W48"),
        errors.not_endable(board="weekly-cup"),
        errors.cohort_not_found(cohort="9", period_id="2026-W48"),
        errors.reward_expired(grant_id="grant_h7Kq2XbN0vLw9RtYc3ZpEg", expires_at=_CLAIM_ENDED),
        errors.body_too_large(),
        errors.metadata_too_large(size=731, limit=512),
        errors.invalid("score", "This field is required."),
        errors.out_of_bounds(field="score", maximum=1000),
        errors.score_overflow(window="daily", limit=2**53 - 1),
        errors.idempotency_mismatch(),
        errors.rate_limited(
            "This API key is limited to 600 requests per minute; retry in 1 s.", retry_secs=1, headers={}
        ),
        errors.player_rate_limited(per_minute=60, retry_secs=12),
        errors.link_code_limit(per_player=3, minutes=10, retry_secs=312),
        errors.internal_error(),
        errors.unavailable(),
        errors.ledger_full(retry_secs=5),
        errors.not_replicated(timeout_ms=100),
        errors.link_code_unavailable(),
    ]
    return {sample.code: sample for sample in samples}


# An example of every code an API client can meet (tests/core/test_error_catalogue.py: all of them).
ERROR_SAMPLES: dict[str, ServiceError] = _samples()


def example_of(code: str) -> dict[str, Any]:
    return {"error": ERROR_SAMPLES[code].as_dict()}


# The codes every operation of a kind can answer (core/apikeys.py, core/api.py,
# leaderboard_site/middleware.py). Any request: a foreign Host or a request Django refuses
# (400), Redis or the database down (503).
ANY_ERRORS = ("bad_host", "bad_request", "unavailable")
# A request with a JSON body (one that is too large, or too slow to arrive, is refused before
# the view runs: leaderboard_site/asgi.py).
BODY_ERRORS = ("malformed_json", "body_too_large", "body_timeout", "invalid")
# A request authorized by an API key (@authorized).
KEY_ERRORS = (
    "missing_api_key",
    "invalid_api_key",
    "revoked_api_key",
    "wrong_game",
    "game_inactive",
    "game_not_found",
    "rate_limited",
)
# The webhook operations (webhooks/api.py), by function: every one takes a manage key.
_WEBHOOK_OPERATIONS: dict[str, tuple[str, ...]] = {
    "list_webhooks": (),
    "create_webhook": ("webhook_limit",),
    "event_log": ("invalid", "webhook_not_found"),
    "get_webhook": ("webhook_not_found",),
    "patch_webhook": ("webhook_not_found",),
    "delete_webhook": ("webhook_not_found",),
    "rotate_secret": ("webhook_not_found",),
    "test_webhook": ("webhook_not_found", "webhook_disabled"),
    "list_deliveries": ("webhook_not_found", "invalid"),
    "get_delivery": ("webhook_not_found",),
    "replay_delivery": ("webhook_not_found", "webhook_disabled"),
    "replay_failed": ("webhook_not_found", "webhook_disabled"),
}
# The operations only a manage key may call (@authorized(manage=True)).
MANAGE_OPERATIONS = frozenset(
    {
        "games_api_put_board",
        "games_api_patch_board",
        "archive_api_delete_board",
        "archive_api_end_competition",
        "competitions_api_grant_attempts",
        *(f"webhooks_api_{name}" for name in _WEBHOOK_OPERATIONS),
    }
)
_READ = ("game_not_found", "board_not_found", "period_not_found", "invalid")
_STANDING = (*_READ, "not_found")
# Reads that take scope=cohort, and the cohort reads (issue 22).
_COHORTS = (*_READ, "no_cohorts")
_COHORT_STANDING = (*_STANDING, "no_cohorts")
# What each operation can answer besides its kind's codes: its own. docs/api.md says the same
# per endpoint, and tests/contract/ checks every error the running server answers against it.
OPERATION_ERRORS: dict[str, tuple[str, ...]] = {
    **{f"webhooks_api_{name}": codes for name, codes in _WEBHOOK_OPERATIONS.items()},
    "games_api_submit_score": (
        "board_not_found",
        "board_closed",
        "invalid",
        "out_of_bounds",
        "metadata_too_large",
        "score_overflow",
        "idempotency_mismatch",
        "player_hidden",
        "player_rate_limited",
        "ledger_full",
        "not_replicated",
        "not_entered",
        "entry_closed",
        "board_full",
        "attempts_exhausted",
    ),
    "competitions_api_join": (
        "board_not_found",
        "board_closed",
        "not_competing",
        "invalid",
        "player_hidden",
        "entry_closed",
        "board_full",
        "ledger_full",
    ),
    "competitions_api_grant_attempts": ("board_not_found", "board_closed", "not_competing", "invalid", "ledger_full"),
    "competitions_rewards_api_player_rewards": ("invalid",),
    "competitions_rewards_api_claim_reward": ("invalid", "reward_not_found", "reward_expired"),
    "competitions_rewards_api_player_league": (
        "game_not_found",
        "board_not_found",
        "invalid",
        "not_found",
        "not_a_league",
    ),
    # Each item's refusal is inside the 200 (BATCH_ITEM_ERRORS); the request as a whole: its body.
    "games_api_submit_batch": ("invalid",),
    "games_api_put_board": ("invalid", "board_has_scores", "competition_running", "board_limit", "conflict"),
    "games_api_patch_board": ("board_not_found", "invalid", "board_has_scores", "competition_running", "conflict"),
    "archive_api_delete_board": ("board_not_found",),
    "games_api_list_games": ("invalid",),
    "games_api_get_game": ("game_not_found",),
    "games_api_list_boards": ("game_not_found", "invalid"),
    "games_api_get_board": ("game_not_found", "board_not_found"),
    "archive_api_archived_periods": ("game_not_found", "board_not_found", "invalid"),
    "games_api_recent": ("game_not_found", "invalid"),
    "games_api_find_players": ("game_not_found", "invalid"),
    "games_api_player_profile": ("game_not_found", "invalid", "not_found"),
    "presence_api_report_presence": ("invalid",),
    "presence_api_presence": ("game_not_found", "invalid"),
    "presence_api_player_presence": ("game_not_found", "invalid"),
    "accounts_api_link_code": ("invalid", "player_hidden", "link_code_limit", "link_code_unavailable"),
    "archive_api_leaderboard": _READ,
    "archive_api_leaderboard_named": _READ,
    "archive_api_export_period": _READ,
    "archive_api_friends": _COHORTS,
    "archive_api_friends_named": _COHORTS,
    "archive_api_standing": _STANDING,
    "archive_api_standing_named": _STANDING,
    "archive_api_around": _COHORT_STANDING,
    "archive_api_around_named": _COHORT_STANDING,
    "competitions_settlement_api_settlement_preview": (*_READ, "not_competing"),
    "competitions_settlement_api_settlement": (*_READ, "not_competing", "not_settled"),
    "archive_api_end_competition": ("board_not_found", "not_endable"),
    "competitions_cohorts_api_cohorts": _COHORTS,
    "competitions_cohorts_api_cohorts_named": _COHORTS,
    "competitions_cohorts_api_cohort": (*_COHORTS, "cohort_not_found"),
    "competitions_cohorts_api_cohort_named": (*_COHORTS, "cohort_not_found"),
}
# The codes an item of a batch can carry in its `error` (the single score's refusals).
BATCH_OPERATION = "games_api_submit_batch"
BATCH_ITEM_ERRORS = (
    "invalid",
    "out_of_bounds",
    "metadata_too_large",
    "score_overflow",
    "idempotency_mismatch",
    "player_hidden",
    "player_rate_limited",
    "ledger_full",
    "not_replicated",
    "board_not_found",
    "board_closed",
    "not_entered",
    "entry_closed",
    "board_full",
    "attempts_exhausted",
)


def operation_errors(operation_id: str, *, keyed: bool, body: bool) -> set[str]:
    """Every code the operation can answer: its kind's and its own (KeyError for an operation
    this module does not know: add it to OPERATION_ERRORS)."""
    codes = {*ANY_ERRORS, *OPERATION_ERRORS[operation_id]}
    if body:
        codes.update(BODY_ERRORS)
    if keyed:
        codes.update(KEY_ERRORS)
    if operation_id in MANAGE_OPERATIONS:
        codes.add("scope")
    return codes


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


def _error_bodies(operation_id: str, operation: dict[str, Any], responses: dict[Any, Any]) -> None:
    """Each error status: the codes the operation answers with it, described and with an example
    each; a status the operation cannot answer is dropped (ninja declares them by kind)."""
    if operation_id not in OPERATION_ERRORS:
        return  # as ninja declared them, until it is added (tests/core/test_error_catalogue.py fails meanwhile)
    codes = operation_errors(operation_id, keyed=bool(operation.get("security")), body="requestBody" in operation)
    by_status: dict[int, list[str]] = {}
    for code in sorted(codes, key=lambda c: (errors.CODES[c].status, c)):
        by_status.setdefault(errors.CODES[code].status, []).append(code)
    for key in list(responses):
        status = int(key)
        if status < 400:
            continue
        if status not in by_status:
            del responses[key]
            continue
        response = responses[key]
        listed = ", ".join(f"`{code}`" for code in by_status[status])
        response["description"] = f"{HTTPStatus(status).phrase}: {listed} (docs/api.md says when)."
        if status == 400:
            response["description"] += " A request the HTTP server itself cannot parse is answered in plain text."
        body = response.get("content", {}).get("application/json")
        if body is not None:
            body.pop("example", None)
            body["examples"] = {
                code: {"summary": errors.CODES[code].when, "value": example_of(code)} for code in by_status[status]
            }


def _responses(operation_id: str, operation: dict[str, Any]) -> None:
    responses = operation.setdefault("responses", {})
    if 400 not in responses and "400" not in responses:
        responses[400] = copy.deepcopy(MALFORMED)
    _error_bodies(operation_id, operation, responses)
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
        if operation_id == BATCH_OPERATION and status == 200:
            listed = ", ".join(f"`{code}`" for code in BATCH_ITEM_ERRORS)
            response["description"] = f"{response.get('description', 'OK')}: an item refused carries one of {listed}."


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
