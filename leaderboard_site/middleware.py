"""Give the API's 404 and 405 for unmatched paths and methods the JSON error envelope."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import HttpRequest, HttpResponse, JsonResponse

API_PREFIX = "/api/v1/"
_MESSAGES = {404: ("not_found", "No such API endpoint."), 405: ("method_not_allowed", "Method not allowed here.")}


def _as_json(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    if (
        response.status_code in _MESSAGES
        and request.path.startswith(API_PREFIX)
        and not response.get("Content-Type", "").startswith("application/json")
    ):
        code, message = _MESSAGES[response.status_code]
        replacement = JsonResponse(
            {"error": {"code": code, "message": message, "field": None}}, status=response.status_code
        )
        if "Allow" in response:
            replacement["Allow"] = response["Allow"]
        return replacement
    return response


class ApiJsonErrorsMiddleware:
    async_capable = True
    sync_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse | Awaitable[HttpResponse]]) -> None:
        self.get_response = get_response
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> HttpResponse | Awaitable[HttpResponse]:
        if iscoroutinefunction(self):
            return self._acall(request)
        return _as_json(request, self.get_response(request))  # type: ignore[arg-type]

    async def _acall(self, request: HttpRequest) -> HttpResponse:
        return _as_json(request, await self.get_response(request))  # type: ignore[misc]
