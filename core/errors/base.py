"""The one error type the services raise. Build one through the catalogue
(core/errors/catalogue.py: ``errors.board_not_found(game=..., board=...)``), never directly:
the catalogue holds every code with its status."""

from __future__ import annotations


class ServiceError(Exception):
    """A refusal with its HTTP status and stable ``code``; the API renders it as
    ``{"error": {"code", "message", "field"}}`` with its status and ``headers``, pages as a message."""

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
