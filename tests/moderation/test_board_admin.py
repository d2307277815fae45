"""Boards in admin: one list of every game's boards with a search, a page per board (linked from
its game's page, with a link to the board on the site and its files to export), and every
creation and change of a board in the audit trail, by admin, API or command."""

from __future__ import annotations

import csv
import datetime as dt
import io

import httpx
import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from archive.models import ArchivedPeriod
from core import apikeys
from core.clock import now as clock_now
from core.models import ApiKey, AuditEntry, Game, Leaderboard
from core.redis import run_sync
from tests.archive.test_archived_reads import archive_period, fill
from tests.conftest import auth
from tests.moderation.test_admin import board_form, board_url, change_url, submit

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def game(make_game) -> Game:
    return make_game("tetris", max_submissions_per_minute=0)


def downloaded(response) -> bytes:
    # The admin streams an async iterator (served chunk by chunk under ASGI); the sync test
    # client reads it whole through the response's own iterator.
    return b"".join(iter(response))


def test_it_lists_every_games_boards_with_a_search(admin_client, game, make_game):
    laps = make_game("snake", board="laps", name="Snake laps").leaderboards.get()
    main = game.leaderboards.get()
    listing = reverse("admin:core_leaderboard_changelist")

    everything = admin_client.get(listing).content.decode()
    found = admin_client.get(listing, {"q": "laps"}).content.decode()
    by_game = admin_client.get(listing, {"q": "tetris"}).content.decode()

    assert board_url(main) in everything and board_url(laps) in everything
    assert board_url(laps) in found and board_url(main) not in found
    assert board_url(main) in by_game and board_url(laps) not in by_game


def test_it_lists_a_games_boards_as_links_to_their_own_pages(admin_client, game):
    Leaderboard.objects.create(game=game, slug="old", name="Old", active=False)

    page = admin_client.get(change_url(game)).content.decode()

    for board in game.leaderboards.all():
        assert f'href="{board_url(board)}"' in page
    assert "out of play" in page
    assert 'name="mode"' not in page and "leaderboards-0" not in page  # no board forms on the game's page


def test_it_links_a_game_and_a_board_to_their_pages_on_the_site(admin_client, game, live_server):
    main = game.leaderboards.get()

    game_page = admin_client.get(change_url(game)).content.decode()
    board_page = admin_client.get(board_url(main)).content.decode()

    assert 'href="/games/tetris/" class="viewsitelink"' in game_page
    assert 'href="/games/tetris/?board=main" class="viewsitelink"' in board_page
    for path in ("/games/tetris/", "/games/tetris/?board=main"):
        assert httpx.get(live_server.url + path).status_code == 200


def test_it_audits_boards_made_and_changed_by_the_api_once_per_change(game):
    _, manage = apikeys.api_key_create(game=game, name="ops", scope=ApiKey.Scope.MANAGE)
    prefix = manage.split("_")[1]
    client = Client()
    url = "/api/v1/games/tetris/leaderboards/laps"
    settings = {"name": "Laps", "mode": "best", "order": "asc", "windows": ["weekly"]}

    made = client.put(url, settings, content_type="application/json", headers=auth(manage))
    same = client.put(url, settings, content_type="application/json", headers=auth(manage))
    patched = client.patch(url, {"name": "Laps!"}, content_type="application/json", headers=auth(manage))

    assert (made.status_code, same.status_code, patched.status_code) == (200, 200, 200)
    entries = list(AuditEntry.objects.order_by("pk").values_list("action", "actor_name", "game_slug", "detail"))
    assert entries == [
        (
            "create_board",
            f"API key lbk_{prefix}",
            "tetris",
            {"board": "laps", "changed": ["name", "order", "windows"]},
        ),
        ("change_board", f"API key lbk_{prefix}", "tetris", {"board": "laps", "changed": ["name"]}),
    ]


def test_it_audits_boards_made_and_changed_in_admin_and_by_the_command(admin_client, game):
    laps = Leaderboard(game=game, slug="laps", name="Laps", windows=["weekly"])
    assert admin_client.post(reverse("admin:core_leaderboard_add"), board_form(laps)).status_code == 302
    made = game.leaderboards.get(slug="laps")
    assert admin_client.post(board_url(made), board_form(made, name="Laps 2")).status_code == 302
    assert admin_client.post(board_url(made), board_form(made, name="Laps 2")).status_code == 302  # no change
    call_command("createleaderboard", "tetris", "sprint", stdout=io.StringIO())

    entries = list(AuditEntry.objects.order_by("pk").values_list("action", "actor_name", "detail"))
    assert entries[0][:2] == ("create_board", "admin") and entries[0][2]["board"] == "laps"
    assert entries[1:] == [
        ("change_board", "admin", {"board": "laps", "changed": ["name"]}),
        ("create_board", "manage.py createleaderboard", {"board": "sprint"}),
    ]


def test_it_exports_a_boards_current_period_and_an_archived_one_from_admin(admin_client, game):
    submit(game, "ada", 70, "Ada")
    submit(game, "bob", 50, "=Bob")
    main = game.leaderboards.get()
    page = admin_client.get(board_url(main)).content.decode()
    current = reverse("admin:archive_export", args=[main.pk, "daily", "current"])
    assert f'href="{current}?format=csv"' in page and f'href="{current}?format=jsonl"' in page

    response = admin_client.get(current, {"format": "csv"})

    assert response["Content-Type"] == "text/csv; charset=utf-8"
    rows = list(csv.reader(io.StringIO(downloaded(response).decode())))
    assert rows[1:] == [["1", "ada", "Ada", "70", "70", ""], ["2", "bob", "'=Bob", "50", "50", ""]]

    before = clock_now() - dt.timedelta(days=1)
    run_sync(lambda: fill(game, before, {"cy": 5}))
    yesterday = before.date().isoformat()
    run_sync(lambda: archive_period(game, "daily", yesterday))
    day = ArchivedPeriod.objects.get(period_id=yesterday)
    archived_page = admin_client.get(reverse("admin:archive_archivedperiod_change", args=[day.pk])).content.decode()
    archived = reverse("admin:archive_export", args=[main.pk, "daily", yesterday])
    assert f'href="{archived}?format=jsonl"' in archived_page
    line = downloaded(admin_client.get(archived, {"format": "jsonl"}))
    assert line == b'{"rank":1,"player_id":"cy","display_name":"cy","score":5,"shown":"5","metadata":null}\n'


def test_it_sends_an_export_of_a_window_the_board_does_not_keep_back_with_the_reason(admin_client, game):
    main = game.leaderboards.get()

    response = admin_client.get(reverse("admin:archive_export", args=[main.pk, "custom", "current"]), follow=True)

    assert response.redirect_chain[-1][0] == board_url(main)
    assert "This leaderboard keeps no custom window." in response.content.decode()


def test_it_lets_only_staff_with_the_right_export(client, game, django_user_model):
    main = game.leaderboards.get()
    url = reverse("admin:archive_export", args=[main.pk, "daily", "current"])
    client.force_login(django_user_model.objects.create_user("staff", password="pw", is_staff=True))

    assert client.get(url).status_code == 403
