"""Sign-up, log-in and log-out pages, and the log-in lock-outs."""

from __future__ import annotations

import datetime as dt

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import SESSION_KEY
from django.contrib.auth.models import User
from django.contrib.auth.signals import user_login_failed
from django.test import AsyncClient, Client

from accounts import services
from core.errors import ServiceError
from tests.conftest import clock_at

pytestmark = pytest.mark.django_db

LOGIN, SIGNUP, LOGOUT = "/account/login/", "/account/signup/", "/account/logout/"
PASSWORD = "correct-horse-battery"
IP = "203.0.113.9"


@pytest.fixture
def ann():
    return User.objects.create_user("ann", password=PASSWORD)


def signed_in_as(client: Client) -> str | None:
    user_id = client.session.get(SESSION_KEY)
    return User.objects.get(pk=user_id).username if user_id else None


def log_in(client: Client, username: str = "ann", password: str = PASSWORD, **extra):
    return client.post(LOGIN, {"username": username, "password": password, **extra})


@pytest.fixture
def failed_checks():
    """Password checks that failed: a locked-out attempt must not even make one."""
    seen: list[str] = []

    def record(sender, credentials, **kwargs):
        seen.append(credentials.get("username"))

    user_login_failed.connect(record)
    yield seen
    user_login_failed.disconnect(record)


# --------------------------------------------------------------------------- sign-up


def test_it_signs_up_and_logs_in():
    client = Client()
    response = client.post(SIGNUP, {"username": "newbie", "password1": PASSWORD, "password2": PASSWORD})
    assert response.status_code == 302
    assert response["Location"] == "/account/"
    assert signed_in_as(client) == "newbie"
    assert "Welcome, newbie!" in client.get("/account/").content.decode()


def test_it_signs_up_and_goes_on_to_a_safe_next():
    client = Client()
    response = client.post(
        SIGNUP, {"username": "newbie", "password1": PASSWORD, "password2": PASSWORD, "next": "/games/tetris/link/"}
    )
    assert response["Location"] == "/games/tetris/link/"


def test_it_shows_sign_up_errors_and_creates_nobody(ann):
    client = Client()
    response = client.post(SIGNUP, {"username": "newbie", "password1": PASSWORD, "password2": "something-else"})
    assert response.status_code == 422
    assert "The two password fields didn" in response.content.decode()
    response = client.post(SIGNUP, {"username": "ann", "password1": PASSWORD, "password2": PASSWORD})
    assert response.status_code == 422
    assert "A user with that username already exists." in response.content.decode()
    response = client.post(SIGNUP, {"username": "newbie", "password1": "123", "password2": "123"})
    assert response.status_code == 422
    assert list(User.objects.values_list("username", flat=True)) == ["ann"]
    assert signed_in_as(client) is None


def test_it_shows_the_forms():
    page = Client().get(SIGNUP).content.decode()
    assert 'autocomplete="new-password"' in page
    page = Client().get(LOGIN).content.decode()
    assert 'autocomplete="current-password"' in page
    assert 'autocomplete="username"' in page


# --------------------------------------------------------------------------- log-in and log-out


def test_it_logs_in_and_out(ann):
    client = Client()
    response = log_in(client)
    assert (response.status_code, response["Location"]) == (302, "/account/")
    assert signed_in_as(client) == "ann"
    page = client.get("/").content.decode()
    assert "ann" in page
    assert f'action="{LOGOUT}"' in page
    assert client.get(LOGOUT).status_code == 405
    assert signed_in_as(client) == "ann"
    response = client.post(LOGOUT)
    assert (response.status_code, response["Location"]) == (302, "/")
    assert signed_in_as(client) is None
    page = client.get("/").content.decode()
    # Each brings them back to the page they were on.
    assert f'href="{LOGIN}?next=/"' in page
    assert f'href="{SIGNUP}?next=/"' in page


def test_it_shows_a_wrong_password(ann):
    client = Client()
    response = log_in(client, password="wrong")
    assert response.status_code == 422
    page = response.content.decode()
    assert "Wrong username or password." in page
    assert 'value="ann"' in page
    assert signed_in_as(client) is None


def test_it_asks_for_both_fields_without_counting_a_failure(ann, failed_checks):
    response = log_in(Client(), password="")
    assert response.status_code == 422
    assert "Enter your username and password." in response.content.decode()
    assert failed_checks == []


def test_it_follows_a_safe_next(ann):
    response = log_in(Client(), next="/games/tetris/?period=daily")
    assert response["Location"] == "/games/tetris/?period=daily"


@pytest.mark.parametrize(
    "target", ["https://evil.example/", "//evil.example/x", "http://testserver.evil.example/", "javascript:alert(1)"]
)
def test_it_ignores_an_unsafe_next(ann, target):
    client = Client()
    assert log_in(client, next=target)["Location"] == "/account/"
    assert client.post(LOGOUT, {"next": target})["Location"] == "/"
    response = Client().post(
        SIGNUP, {"username": "newbie", "password1": PASSWORD, "password2": PASSWORD, "next": target}
    )
    assert response["Location"] == "/account/"
    assert target not in Client().get(f"{LOGIN}?next={target}").content.decode()


def test_it_locks_a_username_out_from_the_address_that_failed(ann, failed_checks):
    client = Client(REMOTE_ADDR=IP)
    for _ in range(services.LOGIN_FAILURES_PER_PAIR - 1):
        assert log_in(client, password="wrong").status_code == 422
    # The failure that fills the window already says so.
    assert log_in(client, password="wrong").status_code == 429
    checks = len(failed_checks)
    response = log_in(client)
    assert response.status_code == 429
    assert "Too many failed log-ins. Try again in 15 minutes." in response.content.decode()
    assert 0 < int(response["Retry-After"]) <= services.LOGIN_FAILURE_WINDOW_SECS
    assert signed_in_as(client) is None
    # Not even the password was checked.
    assert len(failed_checks) == checks
    # The account itself is not locked: its owner logs in from elsewhere; other names from here.
    assert log_in(Client(REMOTE_ADDR="198.51.100.3")).status_code == 302
    User.objects.create_user("bob", password=PASSWORD)
    assert log_in(client, username="bob").status_code == 302


def test_it_never_locks_a_known_user_out_of_their_own_account(ann, clock):
    """Someone guessing from many addresses slows the username down; its owner still gets in."""
    for i in range(40):
        attacker = Client(REMOTE_ADDR=f"198.51.100.{i}")
        assert log_in(attacker, password="wrong").status_code in (422, 429)
        clock.advance(1)
    owner = Client(REMOTE_ADDR=IP)
    response = log_in(owner)
    if response.status_code == 429:  # slowed down: one attempt per interval, never more than that to wait
        assert int(response["Retry-After"]) <= services.LOGIN_SLOWDOWN_INTERVAL_SECS
        clock.advance(services.LOGIN_SLOWDOWN_INTERVAL_SECS)
        response = log_in(owner)
    assert response.status_code == 302
    assert signed_in_as(owner) == "ann"


def test_it_slows_a_username_down_across_addresses(ann, clock):
    for i in range(services.LOGIN_SLOWDOWN_AFTER_FAILURES):
        assert log_in(Client(REMOTE_ADDR=f"198.51.100.{i}"), password="wrong").status_code == 422
    assert log_in(Client(REMOTE_ADDR="192.0.2.1"), password="wrong").status_code == 422  # takes the slot

    response = log_in(Client(REMOTE_ADDR="192.0.2.2"), password="wrong")

    assert response.status_code == 429
    assert f"one attempt every {services.LOGIN_SLOWDOWN_INTERVAL_SECS} seconds" in response.content.decode()
    assert int(response["Retry-After"]) == services.LOGIN_SLOWDOWN_INTERVAL_SECS
    clock.advance(services.LOGIN_SLOWDOWN_INTERVAL_SECS)
    assert log_in(Client(REMOTE_ADDR="192.0.2.2")).status_code == 302


def test_it_locks_an_address_out_across_usernames(ann):
    client = Client(REMOTE_ADDR=IP)
    per_pair = services.LOGIN_FAILURES_PER_PAIR
    for i in range(services.LOGIN_FAILURES_PER_IP - 1):
        assert log_in(client, username=f"guess{i // per_pair}", password="wrong").status_code in (422, 429)
    response = log_in(client, username="someone-else", password="wrong")
    assert response.status_code == 429
    response = log_in(client)
    assert response.status_code == 429
    assert "Too many failed log-ins." in response.content.decode()
    # Another address may still log in as ann.
    other = Client(REMOTE_ADDR="198.51.100.4")
    assert log_in(other).status_code == 302


def test_it_lifts_the_lock_out_when_the_window_passes(ann):
    t0 = dt.datetime(2026, 11, 22, 12, 0, tzinfo=dt.UTC)
    for i in range(services.LOGIN_FAILURES_PER_PAIR):
        with pytest.raises(ServiceError), clock_at(t0 + dt.timedelta(seconds=i)):
            services.login_authenticate(username="ann", password="wrong", ip=IP)
    window = services.LOGIN_FAILURE_WINDOW_SECS
    with pytest.raises(ServiceError) as locked, clock_at(t0 + dt.timedelta(seconds=window - 0.5)):
        services.login_authenticate(username="ann", password=PASSWORD, ip=IP)
    assert (locked.value.status, locked.value.headers["Retry-After"]) == (429, "1")
    # The first failure has left the window: four remain, under the limit.
    with clock_at(t0 + dt.timedelta(seconds=window)):
        user = services.login_authenticate(username="ann", password=PASSWORD, ip=IP)
    assert user == ann


def test_it_limits_the_admin_log_in_like_the_sites(ann):
    """Once, 40 wrong passwords and then the right one logged in to admin."""
    User.objects.create_superuser("boss", password=PASSWORD)
    client = Client(REMOTE_ADDR=IP)
    for _ in range(services.LOGIN_FAILURES_PER_PAIR - 1):
        response = client.post("/admin/login/", {"username": "boss", "password": "wrong"})
        assert response.status_code == 200 and "correct username and password for a staff" in response.content.decode()
    client.post("/admin/login/", {"username": "boss", "password": "wrong"})  # fills the window

    response = client.post("/admin/login/?next=/admin/", {"username": "boss", "password": PASSWORD})

    assert response.status_code == 200
    assert "Too many failed log-ins." in response.content.decode()
    assert signed_in_as(client) is None
    assert (
        Client(REMOTE_ADDR="198.51.100.7").post("/admin/login/", {"username": "boss", "password": PASSWORD}).status_code
        == 302
    )


def test_it_limits_sign_ups_from_one_address():
    client = Client(REMOTE_ADDR=IP)
    for i in range(services.SIGNUPS_PER_IP):
        response = Client(REMOTE_ADDR=IP).post(
            SIGNUP, {"username": f"u{i}", "password1": PASSWORD, "password2": PASSWORD}
        )
        assert response.status_code == 302

    response = client.post(SIGNUP, {"username": "one-more", "password1": PASSWORD, "password2": PASSWORD})

    assert response.status_code == 429
    assert "Too many accounts were created from your network lately." in response.content.decode()
    assert not User.objects.filter(username="one-more").exists()
    assert (
        Client(REMOTE_ADDR="198.51.100.8")
        .post(SIGNUP, {"username": "elsewhere", "password1": PASSWORD, "password2": PASSWORD})
        .status_code
        == 302
    )


def test_it_labels_password_problems_as_the_passwords_once_each():
    response = Client().post(SIGNUP, {"username": "newbie", "password1": "123", "password2": "123"})

    page = response.content.decode()
    assert response.status_code == 422
    assert "Password confirmation" not in page.split("<form")[0]
    assert page.count("Password: This password is too short.") == 1
    assert page.count("Password: This password is entirely numeric.") == 1


# --------------------------------------------------------------------------- CSRF


def csrf_token_of(client: Client, url: str) -> str:
    client.get(url)
    return client.cookies["csrftoken"].value


def test_it_enforces_csrf_on_every_form(ann, make_game):
    make_game("tetris")
    client = Client(enforce_csrf_checks=True)
    assert log_in(client).status_code == 403
    assert client.post(SIGNUP, {"username": "x", "password1": PASSWORD, "password2": PASSWORD}).status_code == 403
    assert signed_in_as(client) is None
    assert not User.objects.filter(username="x").exists()

    token = csrf_token_of(client, LOGIN)
    assert log_in(client, csrfmiddlewaretoken=token).status_code == 302
    assert client.post("/games/tetris/link/", {"code": "ABCD2345"}).status_code == 403
    assert client.post(LOGOUT).status_code == 403
    assert signed_in_as(client) == "ann"
    token = csrf_token_of(client, "/account/")
    assert client.post(LOGOUT, {"csrfmiddlewaretoken": token}).status_code == 302
    assert signed_in_as(client) is None


# --------------------------------------------------------------------------- async pages


@pytest.mark.django_db(transaction=True)
async def test_it_renders_the_async_pages_for_a_signed_in_user(make_game):
    await sync_to_async(make_game)("tetris")
    await sync_to_async(User.objects.create_user)("ann", password=PASSWORD)
    client = AsyncClient()
    assert await client.alogin(username="ann", password=PASSWORD)
    for url in ("/", "/games/tetris/", "/games/tetris/players/alice/", "/games/nope/"):
        response = await client.get(url)
        assert response.status_code in (200, 404)
        assert f'action="{LOGOUT}"' in response.content.decode()
