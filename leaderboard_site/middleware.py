"""Async-native middleware of the JSON API (see asgi.py for why it has its own)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.middleware.security import SecurityMiddleware

API_PREFIX = "/api/v1/"
_MESSAGES = {404: ("not_found", "No such API endpoint."), 405: ("method_not_allowed", "Method not allowed here.")}

GetResponse = Callable[[HttpRequest], HttpResponse | Awaitable[HttpResponse]]


def _as_json(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    """The API's 404 and 405 for unmatched paths and methods, in the JSON error envelope."""
    if (
        response.status_code in _MESSAGES
        and request.path.startswith(API_PREFIX)
        and not response.get("Content-Type", "").startswith("application/json")
    ):
        code, message = _MESSAGES[response.status_code]
        body = {"error": {"code": code, "message": message, "field": None}}
        replacement = JsonResponse(body, status=response.status_code)
        if "Allow" in response:
            replacement["Allow"] = response["Allow"]
        return replacement
    return response


class ApiJsonErrorsMiddleware:
    """For the full middleware stack (pages, admin, tests' clients)."""

    async_capable = True
    sync_capable = True

    def __init__(self, get_response: GetResponse) -> None:
        self.get_response = get_response
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> HttpResponse | Awaitable[HttpResponse]:
        if iscoroutinefunction(self):
            return self._acall(request)
        return _as_json(request, self.get_response(request))  # type: ignore[arg-type]

    async def _acall(self, request: HttpRequest) -> HttpResponse:
        return _as_json(request, await self.get_response(request))  # type: ignore[misc]


class ApiSecurityMiddleware:
    """The API handler's one middleware: Django's SecurityMiddleware checks (HTTPS
    redirect, HSTS, nosniff, referrer policy) called inline, as they do no I/O,
    plus the JSON 404/405."""

    async_capable = True
    sync_capable = False

    def __init__(self, get_response: GetResponse) -> None:
        self.get_response = get_response
        self.security = SecurityMiddleware(get_response)
        markcoroutinefunction(self)

    async def __call__(self, request: HttpRequest) -> HttpResponse:
        redirect = self.security.process_request(request)
        if redirect is not None:
            return redirect
        response = await self.get_response(request)  # type: ignore[misc]
        return self.security.process_response(request, _as_json(request, response))
