"""Account pages. Mounted at the site root (leaderboard_site/urls.py, before the
games pages) so that the link page sits beside its game at /games/<slug>/link/."""

from __future__ import annotations

from django.urls import path

from . import passwords, views

app_name = "accounts"

urlpatterns = [
    path("account/", views.account, name="account"),
    path("account/signup/", views.signup, name="signup"),
    path("account/login/", views.login_view, name="login"),
    path("account/logout/", views.logout_view, name="logout"),
    path("account/links/<int:link_id>/unlink/", views.unlink, name="unlink"),
    path("account/email/", views.email_update, name="email"),
    path("account/delete/", views.account_delete, name="delete"),
    path("account/password/", passwords.PasswordChange.as_view(), name="password_change"),
    path("account/password/reset/", passwords.PasswordResetRequest.as_view(), name="password_reset"),
    path("account/password/reset/sent/", passwords.PasswordResetSent.as_view(), name="password_reset_done"),
    path(
        "account/password/reset/<uidb64>/<token>/",
        passwords.PasswordResetSet.as_view(),
        name="password_reset_confirm",
    ),
    path("games/<slug:game>/link/", views.link, name="link"),
]
