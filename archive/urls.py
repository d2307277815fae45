from __future__ import annotations

from django.urls import path

from . import views

app_name = "archive"

urlpatterns = [
    path("games/<slug:game>/history/", views.history_page, name="history"),
    path("games/<slug:game>/history/<str:period>/<str:period_id>/", views.period_page, name="period"),
]
