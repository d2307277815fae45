"""The one error type the services raise; the API renders it as
``{"error": {"code", "message", "field"}}`` with its status, and pages as a message."""

from __future__ import annotations

from redis.exceptions import RedisError


class ServiceError(Exception):
    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        field: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.headers = headers or {}

    def as_dict(self) -> dict[str, object]:
        return {"code": self.code, "message": self.message, "field": self.field}


def not_found(what: str) -> ServiceError:
    return ServiceError(404, "not_found", what)


# What Redis being unreachable raises (a refused, reset or timed-out connection).
REDIS_ERRORS: tuple[type[BaseException], ...] = (RedisError, OSError)
# Admin shows this instead of a 500 when Redis is down.
REDIS_DOWN_MESSAGE = "Redis is unavailable, so nothing was changed. Try again in a moment."
