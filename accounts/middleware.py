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
from typing import Any

from asgiref.sync import iscoroutinefunction
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.utils.decorators import sync_and_async_middleware

from core import pages
from core.errors import DATABASE_ERRORS

Handler = Callable[[HttpRequest], Any]


@sync_and_async_middleware
def async_user_middleware(get_response: Handler) -> Handler:
    """After AuthenticationMiddleware. In a sync stack (WSGI) an async view still runs
    in an event loop, so the lazy user is loaded there too, before the view."""
    if iscoroutinefunction(get_response):

        async def load_async(request: HttpRequest) -> HttpResponseBase:
            try:
                request.user = await request.auser()
            except DATABASE_ERRORS:
                return pages.unavailable(request)  # the session or user tables are unreachable
            response: Awaitable[HttpResponseBase] = get_response(request)
            return await response

        return load_async

    def load_sync(request: HttpRequest) -> HttpResponseBase:
        request.user.is_authenticated  # noqa: B018 - loads the lazy user here, in sync code
        response: HttpResponseBase = get_response(request)
        return response

    return load_sync
