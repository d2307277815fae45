"""The JSON API's middleware (see asgi.py for why it has a handler of its own).

Whatever goes wrong on an API path answers in the error envelope, with the
status a client can act on: 400 for a Host outside ALLOWED_HOSTS (checked before
anything runs), JSON 404 / 405 for unknown paths and methods, 503 + Retry-After
while Redis or the database is unreachable, and a JSON 500 for a bug (logged),
DEBUG or not. HEAD is answered on every read, as HTTP says: the GET's headers,
no body.

Both handlers (the API's and the site's) also start with the request context
(request_context_middleware: the request id, the one access line, the HTTP
metrics) and CORS for the public reads (ReadOnlyCorsMiddleware).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import async_to_sync, iscoroutinefunction, markcoroutinefunction
from corsheaders.middleware import CorsMiddleware
from django.core.exceptions import DisallowedHost, RequestDataTooBig, SuspiciousOperation
from django.http import Http404, HttpRequest, JsonResponse
from django.http.response import HttpResponseBase
from django.middleware.security import SecurityMiddleware
from django.utils.decorators import sync_and_async_middleware

from core import config, errors, logs, metrics, pages
from core.errors import ServiceError, is_unavailable, report_unavailable

API_PREFIX = "/api/v1/"
# What an unmatched path (404) or method (405) answers, in the envelope.
_UNMATCHED: dict[int, Callable[[], ServiceError]] = {
    404: lambda: errors.not_found("No such API endpoint."),
    405: errors.method_not_allowed,
}

logger = logging.getLogger("leaderboard_site.api")
access_log = logs.get_logger("leaderboard_site.access")

# Probes poll these every few seconds: their lines are debug, not info.
_QUIET_PATHS = ("/healthz", "/metrics")
_READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_KNOWN_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE"})

Handler = Callable[[HttpRequest], Any]


def error_json(error: ServiceError) -> JsonResponse:
    """The error in the envelope, with its status and headers (core.errors builds it)."""
    response = JsonResponse({"error": error.as_dict()}, status=error.status)
    for name, value in error.headers.items():
        response[name] = value
    return response


def unavailable_json() -> JsonResponse:
    return error_json(errors.unavailable())


def exception_json(request: HttpRequest, error: Exception) -> JsonResponse:
    """The envelope for an exception that escaped an API view (ninja's handlers take most first)."""
    if isinstance(error, DisallowedHost):
        return error_json(errors.bad_host())
    if isinstance(error, RequestDataTooBig):
        return error_json(errors.body_too_large())
    if isinstance(error, SuspiciousOperation):
        return error_json(errors.bad_request())
    if isinstance(error, Http404):
        return error_json(_UNMATCHED[404]())
    if is_unavailable(error):
        report_unavailable(error, during=f"{request.method} {request.path}")
        return unavailable_json()
    logger.error("%s %s: internal error", request.method, request.path, exc_info=error)
    return error_json(errors.internal_error())


def as_json(request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
    """The API's 404 and 405 for unmatched paths and methods, in the JSON error envelope."""
    if (
        response.status_code in _UNMATCHED
        and request.path.startswith(API_PREFIX)
        and not response.get("Content-Type", "").startswith("application/json")
    ):
        replacement = error_json(_UNMATCHED[response.status_code]())
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


class UnavailableMiddleware:
    """Pages and admin (the full stack): 503 + Retry-After, not a 500, when a view finds
    Redis or the database unreachable. Errors outside views reach handler500
    (leaderboard_site/views.py), which answers the same way."""

    async_capable = True
    sync_capable = True

    def __init__(self, get_response: Handler) -> None:
        self.get_response = get_response
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponseBase | None:
        if not is_unavailable(exception):
            return None
        report_unavailable(exception, during=f"{request.method} {request.path}")
        return unavailable_json() if request.path.startswith(API_PREFIX) else pages.unavailable(request)


def _head_as_get(request: HttpRequest) -> bool:
    """A HEAD on the API is answered by its GET (the body dropped after); True if it was one."""
    if request.method == "HEAD" and request.path.startswith(API_PREFIX):
        request.method = "GET"
        return True
    return False


@sync_and_async_middleware
def api_json_errors_middleware(get_response: Handler) -> Handler:
    """The API's behaviour on the full middleware stack, which the tests' clients (and any
    deployment that routes /api/v1/ through it) reach the API by: JSON 404/405 and HEAD.
    A foreign Host is refused earlier (CommonMiddleware), in the envelope too (handler400)."""
    if iscoroutinefunction(get_response):

        async def respond_async(request: HttpRequest) -> HttpResponseBase:
            head = _head_as_get(request)
            response: Awaitable[HttpResponseBase] = get_response(request)
            answer = as_json(request, await response)
            return _as_head(answer) if head else answer

        return respond_async

    def respond(request: HttpRequest) -> HttpResponseBase:
        head = _head_as_get(request)
        answer = as_json(request, get_response(request))
        return _as_head(answer) if head else answer

    return respond


def api_middleware(get_response: Callable[[HttpRequest], Awaitable[HttpResponseBase]]) -> Handler:
    """The API handler's one middleware: the Host check, Django's SecurityMiddleware
    checks (HTTPS redirect, HSTS, nosniff, referrer policy) called inline as they do no
    I/O, HEAD, and the JSON envelope for every error."""
    security = SecurityMiddleware(get_response)

    async def respond(request: HttpRequest) -> HttpResponseBase:
        head = False
        try:
            request.get_host()  # DisallowedHost before anything runs
            redirect = security.process_request(request)
            if redirect is not None:
                return redirect
            head = _head_as_get(request)
            response = as_json(request, await get_response(request))
        except Exception as error:
            response = exception_json(request, error)
        response = security.process_response(request, response)  # type: ignore[arg-type]  # stubs: HttpResponse only
        return _as_head(response) if head else response

    return respond


def _begin(request: HttpRequest) -> tuple[str, float]:
    request_id = logs.request_id_from(request.headers.get(logs.REQUEST_ID_HEADER))
    return request_id, time.perf_counter()


def _finish(request: HttpRequest, response: HttpResponseBase, request_id: str, started: float) -> None:
    """The response's request id header, the request's one access line, its HTTP metrics."""
    seconds = time.perf_counter() - started
    response[logs.REQUEST_ID_HEADER] = request_id
    # Said here, once: Django's own "Not Found"/"Service Unavailable" line would repeat it
    # (an exception's traceback is logged where it was caught, before this).
    response._has_been_logged = True  # type: ignore[attr-defined]  # read by django.utils.log.log_response
    match = getattr(request, "resolver_match", None)
    route = str(match.route) if match is not None and match.route else "unmatched"
    status = response.status_code
    # A label value per method a client may invent would grow without bound.
    method = request.method if request.method in _KNOWN_METHODS else "other"
    metrics.HTTP_REQUESTS.labels(method=method, route=route, status=str(status)).inc()
    metrics.HTTP_SECONDS.labels(method=method, route=route).observe(seconds)
    quiet = request.path in _QUIET_PATHS and status < 400
    level = "warning" if status >= 500 else "debug" if quiet else "info"
    getattr(access_log, level)(
        "request", method=request.method, path=request.path, status=status, duration_ms=round(seconds * 1000, 2)
    )


@sync_and_async_middleware
def request_context_middleware(get_response: Handler) -> Handler:
    """Outermost, in both handlers: every request gets a request id (the client's
    X-Request-ID if sane, else a new one) bound to every log line it causes and echoed in
    the response, one access line, and the HTTP metrics."""
    if iscoroutinefunction(get_response):

        async def respond_async(request: HttpRequest) -> HttpResponseBase:
            request_id, started = _begin(request)
            with logs.context(request_id=request_id):
                response = await get_response(request)
                _finish(request, response, request_id, started)
            return response

        return respond_async

    def respond(request: HttpRequest) -> HttpResponseBase:
        request_id, started = _begin(request)
        with logs.context(request_id=request_id):
            response = get_response(request)
            _finish(request, response, request_id, started)
        return response

    return respond


class ReadOnlyCorsMiddleware(CorsMiddleware):
    """django-cors-headers for the public reads only: a write (POST, PUT, PATCH, DELETE)
    never gets CORS headers, so a browser on another origin cannot read its answer, and a
    preflight for one is told only GET and HEAD are allowed (CORS_ALLOW_METHODS).

    Beside CORS_ALLOWED_ORIGINS, a game's reads answer the game's own embed origins (its
    widget on the studio's site, docs/embed.md), and only that game's."""

    def __call__(self, request: HttpRequest) -> Any:
        if self.async_mode:
            return self.__acall__(request)
        request._embed_origins = async_to_sync(_embed_origins)(request)  # type: ignore[attr-defined]
        return super().__call__(request)

    async def __acall__(self, request: HttpRequest) -> HttpResponseBase:
        request._embed_origins = await _embed_origins(request)  # type: ignore[attr-defined]
        return await super().__acall__(request)

    def check_signal(self, request: HttpRequest) -> bool:
        origin = request.headers.get("origin")
        return origin in getattr(request, "_embed_origins", ()) or super().check_signal(request)

    def add_response_headers(self, request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
        if request.method not in _READ_METHODS:
            return response
        return super().add_response_headers(request, response)


_GAME_API_PATH = re.compile(r"^/api/v1/games/([a-z0-9-]{1,50})(?:/|$)")


async def _embed_origins(request: HttpRequest) -> tuple[str, ...]:
    """The embed origins of the game a read is about, when a browser on another origin asks
    (the config cache answers: no query per request). Unknown while Redis or the database is
    down: the read itself then answers 503."""
    found = _GAME_API_PATH.match(request.path_info)
    if found is None or "origin" not in request.headers or request.method not in _READ_METHODS:
        return ()
    try:
        game = await config.get_game(found.group(1))
    except Exception as error:
        if not is_unavailable(error):
            raise
        return ()
    return game.embed_origins if game is not None else ()
