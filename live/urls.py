from __future__ import annotations

from django.urls import path

from . import views

app_name = "live"

urlpatterns = [
    path("", views.home, name="home"),
    path("games/<slug:game>/", views.game_page, name="game"),
    path("games/<slug:game>/players/<str:player_id>/", views.player_page, name="player"),
]
