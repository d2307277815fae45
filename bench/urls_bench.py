"""The product's URLs plus a bare async Django view: the framework reference of the benchmarks.

The view goes through the same server, middleware and URL resolver as the API
but does no work of its own, so requests/s through it is the most any endpoint
on this stack can reach: "the framework limit".
"""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt

from leaderboard_site.urls import urlpatterns as product_urlpatterns

BARE_VIEW_PATH = "bench/bare"


@csrf_exempt
async def bare(request: HttpRequest) -> JsonResponse:
    """POST: reads the body, answers a tiny JSON; what any JSON endpoint does at the least."""
    if request.method != "POST":
        return JsonResponse({"error": "POST only"}, status=405)
    return JsonResponse({"ok": True, "bytes": len(request.body)})


urlpatterns = [
    path(BARE_VIEW_PATH, bare, name="bench-bare"),
    *product_urlpatterns,
]
