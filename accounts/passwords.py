"""Password pages: change (signed in), and reset by e-mail (Django's own views and tokens, in
the site's templates). A reset request is limited per client address, and a reset lifts the
log-in lock-out of that username from the address it was made from."""

from __future__ import annotations

import math
from typing import Any

from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import SetPasswordForm
from django.http import HttpRequest, HttpResponse
from django.urls import reverse_lazy

from . import services


def _client_ip(request: HttpRequest) -> str:
    # uvicorn runs with --proxy-headers behind the trusted proxy, so REMOTE_ADDR is the client's.
    return request.META.get("REMOTE_ADDR", "")


class PasswordResetRequest(auth_views.PasswordResetView):
    """Asks for the account's e-mail and mails a one-hour link (PASSWORD_RESET_TIMEOUT). The
    answer is the same whether or not an account has that address, so it tells nobody which do."""

    template_name = "accounts/password_reset.html"
    email_template_name = "accounts/password_reset_email.txt"
    subject_template_name = "accounts/password_reset_subject.txt"
    success_url = reverse_lazy("accounts:password_reset_done")

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        wait_ms = services.password_reset_allowed(ip=_client_ip(request))
        if wait_ms:
            context = self.get_context_data(form=self.get_form())
            context["error"] = (
                f"Too many reset e-mails were asked for from your network lately. "
                f"Try again in {services.wait_text(wait_ms)}."
            )
            response = self.render_to_response(context, status=429)
            response["Retry-After"] = str(math.ceil(wait_ms / 1000))
            return response
        return super().post(request, *args, **kwargs)


class PasswordResetSent(auth_views.PasswordResetDoneView):
    template_name = "accounts/password_reset_done.html"


class PasswordResetSet(auth_views.PasswordResetConfirmView):
    template_name = "accounts/password_reset_confirm.html"
    success_url = reverse_lazy("accounts:login")

    def form_valid(self, form: SetPasswordForm) -> HttpResponse:
        response = super().form_valid(form)
        services.login_failures_clear(username=form.user.get_username(), ip=_client_ip(self.request))
        messages.success(self.request, "Your password is changed. Log in with the new one.")
        return response


class PasswordChange(auth_views.PasswordChangeView):
    template_name = "accounts/password_change.html"
    success_url = reverse_lazy("accounts:account")

    def form_valid(self, form: Any) -> HttpResponse:
        response = super().form_valid(form)  # keeps this session signed in, ends the others
        messages.success(self.request, "Your password is changed.")
        return response
