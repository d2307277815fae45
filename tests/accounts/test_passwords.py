"""Passwords: reset by e-mail end to end (Django's locmem backend catches the mail), which also
lifts a log-in lock-out; change while signed in; the e-mail kept on the account; and which mail
backend the settings pick."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth import SESSION_KEY
from django.contrib.auth.models import User
from django.core import mail
from django.test import Client

from accounts import services
from accounts.models import PlayerLink
from core import services as core_services
from core.models import AuditEntry

pytestmark = pytest.mark.django_db

LOGIN, RESET, ACCOUNT = "/account/login/", "/account/password/reset/", "/account/"
OLD, NEW = "correct-horse-battery", "a-new-staple-of-mine"
REPO_DIR = Path(__file__).resolve().parents[2]


@pytest.fixture
def ann() -> User:
    return User.objects.create_user("ann", email="ann@example.com", password=OLD)


def log_in(client: Client, password: str):
    return client.post(LOGIN, {"username": "ann", "password": password})


def signed_in(client: Client) -> bool:
    return SESSION_KEY in client.session


def reset_by_mail(client: Client, new: str = NEW):
    """Asks for the mail, follows its link and sets ``new``; the last answer."""
    asked = client.post(RESET, {"email": "ann@example.com"})
    assert asked.status_code == 302 and asked["Location"] == "/account/password/reset/sent/"
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["ann@example.com"]
    assert mail.outbox[0].subject == "Reset your Leaderboard password"
    link = re.search(r"https?://[^/\s]+(/account/password/reset/\S+/)", str(mail.outbox[0].body))
    assert link is not None, mail.outbox[0].body
    opened = client.get(link.group(1))  # Django swaps the token for a session and redirects
    assert opened.status_code == 302
    form = client.get(opened["Location"])
    assert "Choose a new password" in form.content.decode()
    return client.post(opened["Location"], {"new_password1": new, "new_password2": new}, follow=True)


def test_it_resets_a_password_by_email_end_to_end(ann):
    client = Client()
    done = reset_by_mail(client)
    assert done.redirect_chain == [(LOGIN, 302)]
    assert "Your password is changed. Log in with the new one." in done.content.decode()

    assert log_in(Client(), OLD).status_code == 422
    fresh = Client()
    assert log_in(fresh, NEW).status_code == 302 and signed_in(fresh)


def test_it_refuses_a_used_reset_link(ann):
    client = Client()
    reset_by_mail(client)
    link = re.search(r"https?://[^/\s]+(/account/password/reset/\S+/)", str(mail.outbox[0].body))
    assert link is not None
    again = Client().get(link.group(1))
    assert "This link is expired or was already used." in again.content.decode()


def test_it_answers_an_unknown_address_alike_and_sends_nothing(ann):
    asked = Client().post(RESET, {"email": "nobody@example.com"})
    assert asked.status_code == 302 and asked["Location"] == "/account/password/reset/sent/"
    assert mail.outbox == []


def test_it_lifts_a_lock_out_with_a_reset(ann):
    client = Client()
    for _ in range(services.LOGIN_FAILURES_PER_PAIR):
        log_in(client, "wrong-password")
    locked = log_in(client, OLD)
    assert locked.status_code == 429 and "Too many failed log-ins" in locked.content.decode()

    reset_by_mail(client)

    assert log_in(client, NEW).status_code == 302 and signed_in(client)


def test_it_limits_reset_mails_from_one_address(ann):
    client = Client()
    for _ in range(services.PASSWORD_RESETS_PER_IP):
        assert client.post(RESET, {"email": "ann@example.com"}).status_code == 302
    refused = client.post(RESET, {"email": "ann@example.com"})
    assert refused.status_code == 429
    assert int(refused["Retry-After"]) > 0
    assert "Too many reset e-mails were asked for from your network lately." in refused.content.decode()
    assert len(mail.outbox) == services.PASSWORD_RESETS_PER_IP


def test_it_changes_a_password_while_signed_in_and_stays_signed_in(ann):
    client = Client()
    log_in(client, OLD)
    wrong = client.post("/account/password/", {"old_password": "nope", "new_password1": NEW, "new_password2": NEW})
    assert wrong.status_code == 200 and "Your old password was entered incorrectly." in wrong.content.decode()

    changed = client.post(
        "/account/password/", {"old_password": OLD, "new_password1": NEW, "new_password2": NEW}, follow=True
    )

    assert changed.redirect_chain == [(ACCOUNT, 302)]
    assert "Your password is changed." in changed.content.decode()
    assert signed_in(client)
    assert log_in(Client(), NEW).status_code == 302


def test_it_keeps_an_email_given_at_sign_up_or_on_the_account_page():
    client = Client()
    signup = {"username": "bea", "email": "bea@example.com", "password1": OLD, "password2": OLD}
    assert client.post("/account/signup/", signup).status_code == 302
    assert User.objects.get(username="bea").email == "bea@example.com"

    refused = client.post("/account/email/", {"email": "not an address"}, follow=True)
    assert "That is not an e-mail address; nothing was changed." in refused.content.decode()
    assert User.objects.get(username="bea").email == "bea@example.com"

    client.post("/account/email/", {"email": "bea@example.org"})
    assert User.objects.get(username="bea").email == "bea@example.org"
    removed = client.post("/account/email/", {"email": ""}, follow=True)
    assert "Your e-mail is removed." in removed.content.decode()
    assert User.objects.get(username="bea").email == ""


@pytest.mark.parametrize(
    ("email_url", "expected"),
    [
        ("", "django.core.mail.backends.console.EmailBackend None None"),
        (
            "smtp://mailer:secret@mail.example.com:587",
            "django.core.mail.backends.smtp.EmailBackend mail.example.com 587",
        ),
    ],
)
def test_it_mails_through_the_console_unless_email_url_names_a_server(email_url: str, expected: str) -> None:
    env = {**os.environ, "DEBUG": "1", "EMAIL_URL": email_url}
    code = (
        "import django; django.setup(); from django.conf import settings as s; "
        "print(s.EMAIL_BACKEND, getattr(s, 'EMAIL_HOST', None) if s.EMAIL_URL else None, "
        "getattr(s, 'EMAIL_PORT', None) if s.EMAIL_URL else None)"
    )
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO_DIR, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == expected


def test_it_deletes_an_account_confirmed_by_its_password_and_keeps_its_players(ann):
    game = core_services.game_create(slug="tetris", name="Tetris")
    PlayerLink.objects.create(user=ann, game=game, player_id="alice")
    client = Client()
    log_in(client, OLD)

    kept = client.post("/account/delete/", {"password": "not-mine"})
    assert kept.status_code == 422
    assert "That is not your password; your account is still here." in kept.content.decode()
    assert User.objects.filter(username="ann").exists()

    gone = client.post("/account/delete/", {"password": OLD})

    assert gone.status_code == 200
    assert "The account ann is deleted, and its players are unlinked." in gone.content.decode()
    assert not User.objects.filter(username="ann").exists()
    assert not PlayerLink.objects.exists()
    assert not signed_in(client)
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.actor_name, entry.game_slug, entry.player_id) == (
        "delete_account",
        "ann",
        "tetris",
        "alice",
    )
    assert client.get("/account/").status_code == 302  # to the log-in page
