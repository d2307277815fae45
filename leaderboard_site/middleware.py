"""The JSON API's middleware (see asgi.py for why it has a handler of its own).

Whatever goes wrong on an API path answers in the error envelope, with the
status a client can act on: 400 for a Host outside ALLOWED_HOSTS (checked before
anything runs), JSON 404 / 405 for unknown paths and methods, 503 + Retry-After
while Redis or the database is unreachable, and a JSON 500 for a bug (logged),
DEBUG or not. HEAD is answered on every read, as HTTP says: the GET's headers,
no body.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import iscoroutinefunction
from django.core.exceptions import DisallowedHost, RequestDataTooBig, SuspiciousOperation
from django.http import Http404, HttpRequest, JsonResponse
from django.http.response import HttpResponseBase
from django.middleware.security import SecurityMiddleware
from django.utils.decorators import sync_and_async_middleware

from core.errors import UNAVAILABLE_MESSAGE, UNAVAILABLE_RETRY_AFTER_SECS, is_unavailable

API_PREFIX = "/api/v1/"
_MESSAGES = {404: ("not_found", "No such API endpoint."), 405: ("method_not_allowed", "Method not allowed here.")}

logger = logging.getLogger("leaderboard_site.api")

Handler = Callable[[HttpRequest], Any]


def error_json(status: int, code: str, message: str, field: str | None = None) -> JsonResponse:
    return JsonResponse({"error": {"code": code, "message": message, "field": field}}, status=status)


def unavailable_json() -> JsonResponse:
    response = error_json(503, "unavailable", UNAVAILABLE_MESSAGE)
    response["Retry-After"] = str(UNAVAILABLE_RETRY_AFTER_SECS)
    return response


def exception_json(request: HttpRequest, error: Exception) -> JsonResponse:
    """The envelope for an exception that escaped an API view (ninja's handlers take most first)."""
    if isinstance(error, DisallowedHost):
        return error_json(400, "bad_host", "This host name is not served here.")
    if isinstance(error, RequestDataTooBig):
        return error_json(413, "body_too_large", "The request body is over 1 MiB.")
    if isinstance(error, SuspiciousOperation):
        return error_json(400, "bad_request", "The request was refused.")
    if isinstance(error, Http404):
        return error_json(404, *_MESSAGES[404])
    if is_unavailable(error):
        logger.warning("%s %s: unavailable (%s: %s)", request.method, request.path, type(error).__name__, error)
        return unavailable_json()
    logger.error("%s %s: internal error", request.method, request.path, exc_info=error)
    return error_json(500, "internal_error", "Something went wrong on our side; it has been logged.")


def as_json(request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
    """The API's 404 and 405 for unmatched paths and methods, in the JSON error envelope."""
    if (
        response.status_code in _MESSAGES
        and request.path.startswith(API_PREFIX)
        and not response.get("Content-Type", "").startswith("application/json")
    ):
        replacement = error_json(response.status_code, *_MESSAGES[response.status_code])
        if "Allow" in response:
            replacement["Allow"] = response["Allow"] if "HEAD" in response["Allow"] else _with_head(response["Allow"])
        return replacement
    return response


def _with_head(allow: str) -> str:
    methods = [m.strip() for m in allow.split(",")]
    return ", ".join([*methods, "HEAD"]) if "GET" in methods else allow


def _as_head(response: HttpResponseBase) -> HttpResponseBase:
    """A GET's response as HEAD's: the same headers (Content-Length included), no body."""
    if not response.streaming:
        body = response.content  # type: ignore[attr-defined]  # not streaming: HttpResponse
        response["Content-Length"] = str(len(body))
        response.content = b""  # type: ignore[attr-defined]  # as above
    return response


@sync_and_async_middleware
def api_json_errors_middleware(get_response: Handler) -> Handler:
    """For the full middleware stack (pages, admin and the tests' clients reach /api/v1/ through it)."""
    if iscoroutinefunction(get_response):

        async def respond_async(request: HttpRequest) -> HttpResponseBase:
            response: Awaitable[HttpResponseBase] = get_response(request)
            return as_json(request, await response)

        return respond_async

    def respond(request: HttpRequest) -> HttpResponseBase:
        return as_json(request, get_response(request))

    return respond


def api_middleware(get_response: Callable[[HttpRequest], Awaitable[HttpResponseBase]]) -> Handler:
    """The API handler's one middleware: the Host check, Django's SecurityMiddleware
    checks (HTTPS redirect, HSTS, nosniff, referrer policy) called inline as they do no
    I/O, HEAD, and the JSON envelope for every error."""
    security = SecurityMiddleware(get_response)

    async def respond(request: HttpRequest) -> HttpResponseBase:
        head = request.method == "HEAD"
        try:
            request.get_host()  # DisallowedHost before anything runs
            redirect = security.process_request(request)
            if redirect is not None:
                return redirect
            if head:
                request.method = "GET"  # the read's handler answers; its body is dropped below
            response = as_json(request, await get_response(request))
        except Exception as error:
            response = exception_json(request, error)
        response = security.process_response(request, response)  # type: ignore[arg-type]  # stubs: HttpResponse only
        return _as_head(response) if head else response

    return respond
