from __future__ import annotations

import sys
from pathlib import Path

from asgiref.sync import sync_to_async
from django.contrib.staticfiles import finders
from django.db import connection
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.utils.cache import patch_cache_control
from django.views import defaults as django_defaults

from core import errors, pages
from core.errors import is_unavailable
from core.redis import get_redis

from .middleware import API_PREFIX, error_json, exception_json, unavailable_json


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """handler400: Django's page, or the envelope on API paths (a foreign Host, say)."""
    if request.path.startswith(API_PREFIX):
        return exception_json(request, exception)
    return django_defaults.bad_request(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    """handler500: called while the error is being handled, so sys.exc_info() names it.

    Redis or the database unreachable is an outage, not a bug: 503 + Retry-After.
    API paths answer in the JSON envelope either way.
    """
    error = sys.exc_info()[1]
    api = request.path.startswith(API_PREFIX)
    if error is not None and is_unavailable(error):
        return unavailable_json() if api else pages.unavailable(request)
    if api:
        return error_json(errors.internal_error())
    return HttpResponse(render_to_string("500.html"), status=500)


def _database_ok() -> bool:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return True
    except Exception:
        return False


async def healthz(request: HttpRequest) -> JsonResponse:
    """200 when Redis and the database both answer, 503 with Retry-After otherwise."""
    try:
        redis_ok = bool(await get_redis().ping())
    except Exception:
        redis_ok = False
    database_ok = await sync_to_async(_database_ok)()
    ok = redis_ok and database_ok
    response = JsonResponse(
        {
            "status": "ok" if ok else "unavailable",
            "redis": "ok" if redis_ok else "unavailable",
            "database": "ok" if database_ok else "unavailable",
        },
        status=200 if ok else 503,
    )
    if not ok:  # as every other answer of an outage: a balancer may come back then
        response["Retry-After"] = str(errors.UNAVAILABLE_RETRY_AFTER_SECS)
    return response


# Browsers and feed readers ask for /favicon.ico whatever the pages link; a day is plenty.
FAVICON_CACHE_SECS = 86_400


def favicon(request: HttpRequest) -> HttpResponse:
    """The site icon at the root, where clients look for it (the pages link the SVG)."""
    found = finders.find("img/favicon.ico")
    if not found:
        raise Http404("no favicon")
    response = HttpResponse(Path(str(found)).read_bytes(), content_type="image/x-icon")
    patch_cache_control(response, public=True, max_age=FAVICON_CACHE_SECS)
    return response
