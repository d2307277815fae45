"""The API's errors as exceptions: each carries the API's ``code``, ``message`` and ``field``
(docs/api.md lists the codes), the HTTP status and the request id to quote."""

from __future__ import annotations

from typing import Any


class LeaderboardError(Exception):
    """Any refusal from the API (a 4xx or 5xx with the error envelope)."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        field: str | None = None,
        request_id: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{status} {code}: {message}" + (f" ({field})" if field else ""))
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.request_id = request_id
        self.retry_after = retry_after


class BadRequest(LeaderboardError):
    """400: malformed JSON, or a request the server could not parse."""


class Unauthorized(LeaderboardError):
    """401: no API key, or an unknown one."""


class Forbidden(LeaderboardError):
    """403: a revoked key, another game's key, a submit key where a manage key is needed, ..."""


class NotFound(LeaderboardError):
    """404: no such game, board, period or player (on this board)."""


class Conflict(LeaderboardError):
    """409: a closed board, a concurrent change."""


class Gone(LeaderboardError):
    """410: a reward whose claim window has passed (``reward_expired``)."""


class Invalid(LeaderboardError):
    """422: a value the API refuses; ``field`` names it."""


class RateLimited(LeaderboardError):
    """429: over the key's or the player's budget; ``retry_after`` seconds until it may go again."""


class Unavailable(LeaderboardError):
    """503: Redis or the database is briefly unreachable (or the ledger is full); retry after
    ``retry_after`` seconds with the same Idempotency-Key."""


class TransportError(LeaderboardError):
    """No answer at all (connection refused or reset, timeout): status 0."""


_BY_STATUS: dict[int, type[LeaderboardError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: Gone,
    413: BadRequest,
    422: Invalid,
    429: RateLimited,
    503: Unavailable,
}


def error_for(status: int, body: Any, headers: Any) -> LeaderboardError:
    """The exception for an error answer (``headers``: a mapping with ``get``)."""
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        error = {"code": "http_error", "message": f"HTTP {status}", "field": None}
    retry = headers.get("Retry-After")
    cls = _BY_STATUS.get(status, LeaderboardError)
    return cls(
        status,
        str(error.get("code", "error")),
        str(error.get("message", "")),
        field=error.get("field"),
        request_id=headers.get("X-Request-ID"),
        retry_after=float(retry) if retry and retry.isdigit() else None,
    )
