"""Redeeming link codes: single use, expiry, lock-outs against guessing, re-linking, and the page."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth.models import User
from django.test import Client

from accounts import services
from accounts.models import PlayerLink
from core import keys
from core.addresses import client_address
from core.clock import now as clock_now
from core.config import GameConfig
from core.errors import ServiceError
from core.models import Player
from core.redis import get_redis, run_sync
from games import services as game_services
from tests.conftest import clock_at

pytestmark = pytest.mark.django_db

T0 = dt.datetime(2026, 11, 22, 12, 0, tzinfo=dt.UTC)
IP = "203.0.113.7"
WRONG = "ZZZZ9999"  # well-formed, never issued: the codes below are drawn at random


@pytest.fixture
def game(make_game):
    return make_game("tetris")


@pytest.fixture
def ann():
    return User.objects.create_user("ann", password="ann-pass-12345")


@pytest.fixture
def bob():
    return User.objects.create_user("bob", password="bob-pass-12345")


def at(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


def issue(game, player_id="alice", seconds=0.0) -> str:
    config = GameConfig.from_model(game, "0")
    with clock_at(at(seconds)):
        issued = run_sync(lambda: services.link_code_issue(game=config, player_id=player_id))
    assert issued.code != WRONG
    return issued.code


def redeem(user, game, code, seconds=1.0, ip=IP):
    with clock_at(at(seconds)):
        return services.link_code_redeem(user=user, game=game, code=code, ip=ip)


def refused(user, game, code, seconds=1.0, ip=IP) -> ServiceError:
    with pytest.raises(ServiceError) as caught:
        redeem(user, game, code, seconds, ip)
    return caught.value


def links(game) -> set[tuple[str, str]]:
    return {(link.user.username, link.player_id) for link in PlayerLink.objects.filter(game=game)}


def test_it_links_the_user_to_the_codes_player(game, ann):
    link = redeem(ann, game, issue(game))
    assert (link.user, link.game, link.player_id) == (ann, game, "alice")
    assert links(game) == {("ann", "alice")}


def test_it_accepts_a_code_typed_loosely(game, ann):
    code = issue(game)
    redeem(ann, game, f"  {code[:4].lower()}-{code[4:6]} {code[6:].lower()} ")
    assert links(game) == {("ann", "alice")}


def test_it_is_single_use(game, ann, bob):
    code = issue(game)
    redeem(ann, game, code)
    error = refused(bob, game, code)
    assert (error.status, error.code) == (422, "invalid_code")
    assert "wrong, expired or already used" in error.message
    assert links(game) == {("ann", "alice")}
    assert run_sync(lambda: get_redis().exists(keys.link_code("tetris", code))) == 0


def test_it_refuses_an_expired_code(game, ann):
    code = issue(game)
    error = refused(ann, game, code, seconds=services.LINK_CODE_TTL_SECS)
    assert error.code == "invalid_code"
    assert links(game) == set()


def test_it_accepts_a_code_just_before_it_expires(game, ann):
    redeem(ann, game, issue(game), seconds=services.LINK_CODE_TTL_SECS - 0.01)
    assert links(game) == {("ann", "alice")}


def test_it_keeps_codes_to_their_game(game, ann, make_game):
    other = make_game("pong")
    code = issue(game)
    assert refused(ann, other, code).code == "invalid_code"
    redeem(ann, game, code)


@pytest.mark.parametrize("typed", ["", "ABC", "ABCD23456", "ABCD2O45", "ABCD1234", "ABCD!234"])
def test_it_refuses_what_cannot_be_a_code_without_costing_an_attempt(game, ann, typed):
    for _ in range(services.LINK_GUESSES_PER_USER + 1):
        error = refused(ann, game, typed)
        assert (error.status, error.code, error.field) == (422, "invalid", "code")
    redeem(ann, game, issue(game))


def test_it_says_how_many_attempts_are_left(game, ann):
    assert f"{services.LINK_GUESSES_PER_USER - 1} more attempts" in refused(ann, game, WRONG).message


def test_it_locks_a_user_out_after_too_many_wrong_codes_even_with_a_right_one(game, ann):
    for i in range(services.LINK_GUESSES_PER_USER):
        assert refused(ann, game, WRONG, seconds=10 * i).code == "invalid_code"
    code = issue(game, seconds=60)
    error = refused(ann, game, code, seconds=61)
    assert (error.status, error.code) == (429, "too_many_attempts")
    # The first wrong guess (at 0 s) leaves the window at 900 s.
    assert error.headers["Retry-After"] == str(services.LINK_GUESS_WINDOW_SECS - 61)
    assert "Try again in 14 minutes" in error.message
    assert links(game) == set()
    # A locked-out attempt does not use the code up.
    assert run_sync(lambda: get_redis().exists(keys.link_code("tetris", code))) == 1


def test_it_lifts_the_lock_out_when_the_window_passes(game, ann):
    for i in range(services.LINK_GUESSES_PER_USER):
        refused(ann, game, WRONG, seconds=i)
    window = services.LINK_GUESS_WINDOW_SECS
    code = issue(game, seconds=window - 1)
    assert refused(ann, game, code, seconds=window - 0.5).code == "too_many_attempts"
    redeem(ann, game, code, seconds=window)
    assert links(game) == {("ann", "alice")}


def test_it_locks_out_one_user_without_locking_out_another(game, ann, bob):
    for _ in range(services.LINK_GUESSES_PER_USER):
        refused(ann, game, WRONG, ip="198.51.100.1")
    redeem(bob, game, issue(game), ip="198.51.100.1")
    assert links(game) == {("bob", "alice")}


def test_it_locks_out_an_address_across_users(game):
    per_user, per_ip = services.LINK_GUESSES_PER_USER, services.LINK_GUESSES_PER_IP
    assert per_ip > per_user, "the address limit is the one that bounds many accounts"
    users = [User.objects.create_user(f"user{i}") for i in range(-(-per_ip // per_user) + 1)]
    guesses = 0
    for user in users:
        for _ in range(per_user):
            if guesses == per_ip:
                break
            refused(user, game, WRONG)
            guesses += 1
    fresh = users[-1]
    code = issue(game)
    error = refused(fresh, game, code)
    assert (error.status, error.code) == (429, "too_many_attempts")
    # The same user from another address is not locked out.
    redeem(fresh, game, code, ip="198.51.100.2")


def test_it_counts_an_ipv6_64_as_one_address():
    assert client_address("2001:db8:1:2::1") == client_address("2001:db8:1:2:ffff::9")
    assert client_address("2001:db8:1:2::1") != client_address("2001:db8:1:3::1")
    assert client_address("::ffff:203.0.113.7") == "203.0.113.7"
    assert client_address("") == client_address("not an address") == "unknown"


def test_it_replaces_the_users_old_link_and_the_players_old_user(game, ann, bob):
    redeem(ann, game, issue(game, "alice"))
    redeem(ann, game, issue(game, "alien"))
    assert links(game) == {("ann", "alien")}
    redeem(bob, game, issue(game, "alien"))
    assert links(game) == {("bob", "alien")}


def test_it_keeps_links_in_other_games(game, ann, make_game):
    other = make_game("pong")
    redeem(ann, other, issue(other, "alice"))
    redeem(ann, game, issue(game, "alice"))
    assert links(game) == links(other) == {("ann", "alice")}


def test_it_refuses_a_player_hidden_after_the_code_was_issued(game, ann):
    code = issue(game)
    game_services.player_set_hidden(game=game, player_id="alice", hidden=True)
    error = refused(ann, game, code)
    assert (error.status, error.code) == (403, "player_hidden")
    assert links(game) == set()


# --------------------------------------------------------------------------- pages


LINK = "/games/tetris/link/"


@pytest.fixture
def signed_in(ann) -> Client:
    client = Client(REMOTE_ADDR=IP)
    client.force_login(ann)
    return client


def test_it_sends_anonymous_visitors_to_log_in_first(game):
    response = Client().get(LINK)
    assert response.status_code == 302
    assert response["Location"] == f"/account/login/?next={LINK}"


def test_it_shows_the_link_form(game, signed_in):
    response = signed_in.get(LINK)
    assert response.status_code == 200
    page = response.content.decode()
    assert 'name="code"' in page
    assert 'autocomplete="one-time-code"' in page
    assert "csrfmiddlewaretoken" in page


def test_it_says_the_name_the_linked_player_plays_under(game, signed_in):
    Player.objects.create(game=game, player_id="alice", display_name="Alice Liddell", first_seen_at=clock_now())
    code = issue(game)
    response = signed_in.post(LINK, {"code": code}, follow=True)
    assert "You are now linked to Alice Liddell (player alice) in Tetris." in response.content.decode()


def test_it_links_from_the_page_and_says_so(game, signed_in):
    code = issue(game)
    response = signed_in.post(LINK, {"code": code.lower()}, follow=True)
    assert response.redirect_chain == [("/account/", 302)]
    page = response.content.decode()
    assert "You are now linked to player alice in Tetris." in page
    assert links(game) == {("ann", "alice")}
    # The account page lists the link with a form to undo it.
    assert "/account/links/" in page


def test_it_shows_a_wrong_code_on_the_page(game, signed_in):
    response = signed_in.post(LINK, {"code": WRONG})
    assert response.status_code == 422
    assert "This code is wrong, expired or already used." in response.content.decode()


def test_it_shows_a_malformed_code_on_the_page(game, signed_in):
    response = signed_in.post(LINK, {"code": "x" * 500})
    assert response.status_code == 422
    assert "too long" in response.content.decode()


def test_it_shows_the_lock_out_on_the_page(game, signed_in):
    for _ in range(services.LINK_GUESSES_PER_USER):
        signed_in.post(LINK, {"code": WRONG})
    response = signed_in.post(LINK, {"code": issue(game)})
    assert response.status_code == 429
    assert int(response["Retry-After"]) > 0
    assert "Too many wrong codes. Try again in 15 minutes." in response.content.decode()
    assert links(game) == set()


def test_it_says_when_the_game_does_not_exist(game, signed_in):
    response = signed_in.get("/games/nope/link/")
    assert response.status_code == 404


def test_it_unlinks_from_the_account_page(game, signed_in, ann):
    link = redeem(ann, game, issue(game))
    response = signed_in.post(f"/account/links/{link.pk}/unlink/", follow=True)
    assert "You are no longer linked to alice in Tetris." in response.content.decode()
    assert links(game) == set()


def test_it_does_not_unlink_someone_elses_player(game, signed_in, bob):
    link = redeem(bob, game, issue(game))
    response = signed_in.post(f"/account/links/{link.pk}/unlink/", follow=True)
    assert "You have no such link." in response.content.decode()
    assert links(game) == {("bob", "alice")}
    assert signed_in.get(f"/account/links/{link.pk}/unlink/").status_code == 405
