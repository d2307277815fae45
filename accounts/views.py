"""Account pages: sign-up, log-in, log-out, the account page and the link page.

Each view adapts a form post to a service and shows a ServiceError as a message
on the page, with the error's status (and Retry-After when it has one).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login, logout
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import UserCreationForm
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render, resolve_url
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods, require_POST

from core import errors
from core.errors import ServiceError

from . import selectors, services

# Usernames are at most this long in Django's user model; longer input is refused
# before it reaches the database.
USERNAME_MAX_CHARS = 150
# Room for a code typed with a dash or spaces (ABCD-2345, ABCD 2345).
LINK_CODE_INPUT_MAX_CHARS = 16


def _safe_next(request: HttpRequest) -> str:
    """The `next` of the form or query, if it stays on this site; else ''."""
    target = request.POST.get("next") or request.GET.get("next") or ""
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return ""


def _client_ip(request: HttpRequest) -> str:
    # uvicorn runs with --proxy-headers behind the trusted proxy (docker/entrypoint.sh),
    # so REMOTE_ADDR is already the client's address.
    return request.META.get("REMOTE_ADDR", "")


def _error_page(request: HttpRequest, template: str, context: dict[str, Any], error: ServiceError) -> HttpResponse:
    response = render(request, template, {**context, "error": error.message}, status=error.status)
    for name, value in error.headers.items():
        response[name] = value
    return response


def _not_found(request: HttpRequest, message: str) -> HttpResponse:
    return render(request, "not_found.html", {"message": message}, status=404)


class SignupForm(UserCreationForm):
    """Django's sign-up form with phone-friendly inputs and an optional e-mail (for resets)."""

    email = forms.EmailField(
        label="E-mail (optional)",
        required=False,
        max_length=254,
        help_text="Only for resetting your password if you forget it.",
        widget=forms.EmailInput(attrs={"autocomplete": "email"}),
    )

    class Meta(UserCreationForm.Meta):
        fields = ("username", "email")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["username"].widget.attrs.update(
            {"autocomplete": "username", "autocapitalize": "none", "spellcheck": "false", "autofocus": True}
        )
        for name in ("password1", "password2"):
            self.fields[name].widget.attrs.update({"autocomplete": "new-password"})


@require_http_methods(["GET", "POST"])
def signup(request: HttpRequest) -> HttpResponse:
    next_url = _safe_next(request)
    if request.user.is_authenticated:
        return redirect(next_url or resolve_url(settings.LOGIN_REDIRECT_URL))
    form = SignupForm(request.POST if request.method == "POST" else None)
    context: dict[str, Any] = {"form": form, "next": next_url}
    if request.method == "POST" and form.is_valid():
        try:
            services.signup_allowed(ip=_client_ip(request))
        except ServiceError as error:
            return _error_page(request, "accounts/signup.html", context, error)
        user = form.save()
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        messages.success(request, f"Welcome, {user.get_username()}! Your account is ready.")
        return redirect(next_url or resolve_url(settings.LOGIN_REDIRECT_URL))
    context["errors"] = _signup_errors(form)
    return render(request, "accounts/signup.html", context, status=422 if context["errors"] else 200)


def _signup_errors(form: SignupForm) -> list[str]:
    """One line per problem, labelled by what the user typed it into.

    Django hangs the password checks (too short, too common...) on the confirmation
    field; they are about the password, and say so once each.
    """
    lines: list[str] = []
    for field, field_errors in form.errors.as_data().items():
        for error in field_errors:
            for message in error.messages:
                if field == "password2" and error.code != "password_mismatch":
                    label = form.fields["password1"].label
                else:
                    label = form.fields[field].label if field in form.fields else None
                line = f"{label}: {message}" if label else message
                if line not in lines:
                    lines.append(line)
    return lines


@require_http_methods(["GET", "POST"])
def login_view(request: HttpRequest) -> HttpResponse:
    next_url = _safe_next(request)
    if request.method == "GET" and request.user.is_authenticated:
        return redirect(next_url or resolve_url(settings.LOGIN_REDIRECT_URL))
    context: dict[str, Any] = {"next": next_url, "username": "", "username_max": USERNAME_MAX_CHARS}
    if request.method == "GET":
        return render(request, "accounts/login.html", context)
    username = request.POST.get("username", "")
    context["username"] = username[:USERNAME_MAX_CHARS]
    try:
        if len(username) > USERNAME_MAX_CHARS:
            raise errors.invalid_login()
        user = services.login_authenticate(
            username=username, password=request.POST.get("password", ""), ip=_client_ip(request)
        )
    except ServiceError as error:
        return _error_page(request, "accounts/login.html", context, error)
    login(request, user)
    return redirect(next_url or resolve_url(settings.LOGIN_REDIRECT_URL))


@require_POST
def logout_view(request: HttpRequest) -> HttpResponse:
    logout(request)
    return redirect(_safe_next(request) or resolve_url(settings.LOGOUT_REDIRECT_URL))


@login_required
@require_http_methods(["GET"])
def account(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "accounts/account.html",
        {
            "links": selectors.links_of(user=request.user),
            "games": selectors.linkable_games(),
            "code_length": services.LINK_CODE_LENGTH,
            "code_minutes": services.LINK_CODE_TTL_SECS // 60,
        },
    )


@login_required
@require_http_methods(["GET", "POST"])
def account_delete(request: HttpRequest) -> HttpResponse:
    """Asks for the password, then deletes the account and its links and logs out."""
    if request.method == "GET":
        return render(request, "accounts/delete.html", {})
    user = request.user
    name = user.get_username()
    try:
        services.account_delete(user=user, password=request.POST.get("password", ""))
    except ServiceError as error:
        return _error_page(request, "accounts/delete.html", {}, error)
    logout(request)
    return render(request, "accounts/deleted.html", {"name": name})


@login_required
@require_POST
def email_update(request: HttpRequest) -> HttpResponse:
    """Sets (or, empty, removes) the signed-in user's e-mail, the address resets go to."""
    raw = request.POST.get("email", "").strip()
    field = forms.EmailField(required=False, max_length=254)
    try:
        email = field.clean(raw)
    except forms.ValidationError:
        messages.error(request, "That is not an e-mail address; nothing was changed.")
        return redirect("accounts:account")
    user = request.user
    assert isinstance(user, User)  # login_required
    user.email = email
    user.save(update_fields=["email"])
    messages.success(request, "Your e-mail is saved." if email else "Your e-mail is removed.")
    return redirect("accounts:account")


@login_required
@require_POST
def unlink(request: HttpRequest, link_id: int) -> HttpResponse:
    try:
        link = services.link_delete(user=request.user, link_id=link_id)
    except ServiceError as error:
        messages.error(request, error.message)
    else:
        messages.success(request, f"You are no longer linked to {link.player_id} in {link.game.name}.")
    return redirect("accounts:account")


@login_required
@require_http_methods(["GET", "POST"])
def link(request: HttpRequest, game: str) -> HttpResponse:
    found = selectors.game_by_slug(slug=game)
    if found is None:
        return _not_found(request, f"There is no game “{game}”.")
    context: dict[str, Any] = {
        "game": found,
        "current": selectors.link_of(user=request.user, game_id=found.pk),
        "code": "",
        "code_max": LINK_CODE_INPUT_MAX_CHARS,
        "code_length": services.LINK_CODE_LENGTH,
        "code_minutes": services.LINK_CODE_TTL_SECS // 60,
    }
    if request.method == "GET":
        return render(request, "accounts/link.html", context)
    code = request.POST.get("code", "")
    context["code"] = code[:LINK_CODE_INPUT_MAX_CHARS]
    try:
        if len(code) > LINK_CODE_INPUT_MAX_CHARS:
            raise errors.invalid("code", "That is too long for a link code.")
        linked = services.link_code_redeem(user=request.user, game=found, code=code, ip=_client_ip(request))
    except ServiceError as error:
        return _error_page(request, "accounts/link.html", context, error)
    # Named as the game shows them: the name they play under, with the id for certainty.
    shown = selectors.link_of(user=request.user, game_id=found.pk)
    name = shown.display_name if shown is not None else linked.player_id
    who = f"player {linked.player_id}" if name == linked.player_id else f"{name} (player {linked.player_id})"
    messages.success(request, f"You are now linked to {who} in {found.name}.")
    return redirect("accounts:account")
