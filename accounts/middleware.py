"""Resolve the signed-in user before an async view runs.

``request.user`` is a lazy object that loads the session and the user on first
use, synchronously. Async views (the game pages) render templates that read it
(the site nav in base.html, the game page's link prompt), and that sync database
access inside the event loop raises SynchronousOnlyOperation, a 500 for every
signed-in visitor. Awaiting ``request.auser()`` here loads it the async way once
and puts the result in place of the lazy object.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import HttpRequest, HttpResponse

GetResponse = Callable[[HttpRequest], HttpResponse | Awaitable[HttpResponse]]


class AsyncUserMiddleware:
    """After AuthenticationMiddleware. In a sync stack (WSGI) an async view still runs
    in an event loop, so the lazy user is loaded there too, before the view."""

    async_capable = True
    sync_capable = True

    def __init__(self, get_response: GetResponse) -> None:
        self.get_response = get_response
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> HttpResponse | Awaitable[HttpResponse]:
        if iscoroutinefunction(self):
            return self._acall(request)
        request.user.is_authenticated  # noqa: B018 - loads the lazy user here, in sync code
        return self.get_response(request)

    async def _acall(self, request: HttpRequest) -> HttpResponse:
        request.user = await request.auser()  # type: ignore[attr-defined]
        return await self.get_response(request)  # type: ignore[misc]
