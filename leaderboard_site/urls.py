from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.urls import include, path

from .api import api
from .metrics import metrics_view
from .views import favicon, healthz


def api_docs(request: HttpRequest) -> HttpResponse:
    """Swagger UI from the files django-ninja ships (no CDN)."""
    return api.docs.render_page(request, api)


handler400 = "leaderboard_site.views.bad_request"
handler500 = "leaderboard_site.views.server_error"

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("metrics", metrics_view, name="metrics"),
    path("favicon.ico", favicon, name="favicon"),
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
    path("api/docs", api_docs, name="api-docs"),
    path("", include("accounts.urls")),
    path("", include("archive.urls")),
    path("", include("embed.urls")),
    path("", include("live.urls")),
]
