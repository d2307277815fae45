"""What every server-rendered page shares: the not-found page and query parsing."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string

from .errors import UNAVAILABLE_RETRY_AFTER_SECS

# Board pages list this many entries per page (live boards and archived periods alike).
PAGE_SIZE = 50


def not_found(request: HttpRequest, message: str) -> HttpResponse:
    return render(request, "not_found.html", {"message": message}, status=404)


def positive_int(raw: str | None, default: int) -> int:
    """A page number from a query string: junk means the default, and it stays in 1..10^6."""
    try:
        value = int(raw) if raw else default
    except ValueError:
        return default
    return max(1, min(value, 10**6))


def unavailable(request: HttpRequest | None = None) -> HttpResponse:
    """503 + Retry-After while Redis or the database is unreachable (a page that needs neither)."""
    html = render_to_string("unavailable.html", {"retry_after": UNAVAILABLE_RETRY_AFTER_SECS})
    response = HttpResponse(html, status=503)
    response["Retry-After"] = str(UNAVAILABLE_RETRY_AFTER_SECS)
    return response
