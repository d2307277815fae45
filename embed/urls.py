from __future__ import annotations

from django.urls import path

from . import views

app_name = "embed"

urlpatterns = [
    path("embed/games/<slug:game>/<slug:board>/", views.board_frame, name="board"),
    # core.branding.logo_path builds these URLs for the API and the pages.
    path("games/<slug:game>/logo", views.logo, name="logo"),
]
