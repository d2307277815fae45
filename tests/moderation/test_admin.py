"""Admin pages and actions, driven through the Django test client as a superuser."""

from __future__ import annotations

import datetime as dt
import html
import json
import re

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse

from accounts.models import PlayerLink
from archive import ledger
from core import apikeys
from core.audit import Actor, audit_record
from core.config import GameConfig
from core.errors import ServiceError
from core.models import ApiKey, AuditEntry, Game, Leaderboard, Player, hash_secret
from core.redis import run_sync
from games import selectors, services
from presence import services as presence_services
from tests.live.test_pages import text

# request_authorize reads the database from the Redis bridge thread: rows must be committed.
pytestmark = pytest.mark.django_db(transaction=True)

RAW_KEY_RE = re.compile(r"lbk_[0-9a-f]{8}_[A-Za-z0-9_-]+")


@pytest.fixture
def game(make_game) -> Game:
    return make_game("tetris", max_submissions_per_minute=0)


def config_of(game: Game) -> GameConfig:
    game.refresh_from_db()
    return GameConfig.from_model(game, "0")


def submit(game: Game, player_id: str, score: int, name: str | None = None) -> services.Submitted:
    config = config_of(game)
    return run_sync(
        lambda: services.score_submit(
            game=config, board=config.boards[0], player_id=player_id, score=score, display_name=name
        )
    )


def board(game: Game, period: str = "daily") -> list[tuple[int, str, str, int]]:
    config = config_of(game)
    page = run_sync(lambda: selectors.leaderboard_page(board=config.boards[0], period=period))
    return [(e.rank, e.player_id, e.display_name, e.score) for e in page.entries]


def authorize(raw_key: str, slug: str = "tetris") -> apikeys.Authorized:
    return run_sync(lambda: apikeys.request_authorize(raw_key=raw_key, game_slug=slug))


def _board_row(board: Leaderboard) -> dict[str, object]:
    def when(value: dt.datetime | None, part: int) -> str:
        return "" if value is None else value.strftime("%Y-%m-%d" if part == 0 else "%H:%M:%S")

    return {
        "id": board.pk or "",
        "slug": board.slug,
        "name": board.name,
        "description": board.description,
        "mode": board.mode,
        "order": board.order,
        "ties": board.ties,
        "windows": list(board.windows),
        "cron": board.cron,
        "timezone": board.timezone,
        "starts_at_0": when(board.starts_at, 0),
        "starts_at_1": when(board.starts_at, 1),
        "ends_at_0": when(board.ends_at, 0),
        "ends_at_1": when(board.ends_at, 1),
        "format": board.format,
        "min_score": "" if board.min_score is None else board.min_score,
        "max_score": "" if board.max_score is None else board.max_score,
        "competition_window": board.competition_window,
        "entry": board.entry,
        "max_entrants": "" if board.max_entrants is None else board.max_entrants,
        "entry_window_secs": "" if board.entry_window_secs is None else board.entry_window_secs,
        "max_attempts": "" if board.max_attempts is None else board.max_attempts,
        "cohort_size": "" if board.cohort_size is None else board.cohort_size,
        "cohort_fill": board.cohort_fill,
        "cohort_by": board.cohort_by,
        "tiers": json.dumps(board.tiers),
        "start_tier": board.start_tier,
        "min_scores": board.min_scores,
        "rewards": json.dumps(board.rewards),
        "claim_window_secs": board.claim_window_secs,
        "settle_delay_secs": board.settle_delay_secs,
        "active": "on" if board.active else "",
    }


def board_form(board: Leaderboard, **changes: object) -> dict[str, object]:
    """A board's own admin form (add or change) as the browser posts it; ``changes`` override."""
    data = {**_board_row(board), "game": board.game_id, **changes}
    del data["id"]
    return data


def board_url(board: Leaderboard) -> str:
    return reverse("admin:core_leaderboard_change", args=[board.pk])


def game_form(game: Game, *new_keys: dict[str, str], **changes: object) -> dict[str, object]:
    """The game change form as the browser posts it, with inline rows for ``new_keys`` beside
    the existing ones; ``changes`` override any field."""
    existing = list(game.api_keys.order_by("pk")) if game.pk else []
    data: dict[str, object] = {
        "name": game.name,
        "description": game.description,
        "timezone": game.timezone,
        "max_submissions_per_minute": game.max_submissions_per_minute,
        "presence_timeout_secs": game.presence_timeout_secs,
        "active": "on" if game.active else "",
        "api_keys-TOTAL_FORMS": len(existing) + len(new_keys),
        "api_keys-INITIAL_FORMS": len(existing),
        "api_keys-MIN_NUM_FORMS": 0,
        "api_keys-MAX_NUM_FORMS": 1000,
    }
    rows = [
        {
            "id": k.pk,
            "name": k.name,
            "scope": k.scope,
            "requests_per_minute": k.requests_per_minute,
            "items_per_minute": k.items_per_minute,
        }
        for k in existing
    ]
    rows += [{"id": "", "scope": "submit", **k} for k in new_keys]
    for i, row in enumerate(rows):
        data.update({f"api_keys-{i}-{field}": value for field, value in row.items()})
        data[f"api_keys-{i}-game"] = game.pk or ""
    data.update(changes)
    return data


def change_url(game: Game) -> str:
    return reverse("admin:core_game_change", args=[game.pk])


def shown_keys(response) -> list[str]:
    return RAW_KEY_RE.findall(response.content.decode())


# --------------------------------------------------------------------------- games


def test_it_lists_games_with_their_board_count(admin_client, game, make_game):
    make_game("snake", mode="increment", order="asc")
    response = admin_client.get(reverse("admin:core_game_changelist"), {"q": "snake"})
    assert response.status_code == 200
    assert b"snake" in response.content and b"/tetris/" not in response.content
    assert b'<td class="field-board_count">1</td>' in response.content


def test_it_edits_a_boards_windows_with_checkboxes_on_its_own_page(admin_client, game):
    main = game.leaderboards.get()
    response = admin_client.post(board_url(main), board_form(main, windows=["weekly", "daily"]))
    assert response.status_code == 302
    main.refresh_from_db()
    assert main.windows == ["daily", "weekly"]

    response = admin_client.post(board_url(main), board_form(main, windows=[]))
    assert response.status_code == 200 and b"This field is required." in response.content
    main.refresh_from_db()
    assert main.windows == ["daily", "weekly"]


def test_it_validates_the_games_timezone(admin_client, game):
    response = admin_client.post(change_url(game), game_form(game, timezone="Mars/Olympus"))
    assert response.status_code == 200
    assert "is not an IANA time zone name" in response.content.decode()
    game.refresh_from_db()
    assert game.timezone == "UTC"


def test_it_keeps_the_game_slug_and_order_of_an_existing_board(admin_client, game, make_game):
    other = make_game("snake")
    main = game.leaderboards.get()
    changes = {"game": other.pk, "slug": "other", "order": "asc", "name": "Main 2"}
    response = admin_client.post(board_url(main), board_form(main, **changes))
    assert response.status_code == 302
    main.refresh_from_db()
    assert (main.game_id, main.slug, main.order, main.name) == (game.pk, "main", "desc", "Main 2")


def test_it_edits_a_boards_competition_under_its_own_heading_with_the_models_rules(admin_client, game):
    main = game.leaderboards.get()
    page = admin_client.get(board_url(main)).content.decode()
    # The heading between the windows and the entry rules (the admin's navigation names the
    # Competitions app, with its rewards and leagues, before the form).
    windows = page.index("Windows")
    assert windows < page.index("Competition", windows) < page.index('name="max_attempts"')
    entry = {"entry": "join", "max_entrants": "50", "max_attempts": "3"}

    # The board keeps four windows: which one competes must be named.
    response = admin_client.post(board_url(main), board_form(main, **entry))
    assert response.status_code == 200 and "Name the window that competes" in html.unescape(response.content.decode())
    assert game.leaderboards.get().entry == "open"

    changes = {**entry, "competition_window": "weekly", "entry_window_secs": "3600"}
    response = admin_client.post(board_url(main), board_form(main, **changes))
    assert response.status_code == 302
    board = game.leaderboards.get()
    assert (board.competition_window, board.entry, board.max_entrants, board.entry_window_secs, board.max_attempts) == (
        "weekly",
        "join",
        50,
        3600,
        3,
    )


def test_it_adds_a_board_with_a_cron_window_and_previews_its_next_resets(admin_client, game):
    laps = Leaderboard(
        game=game,
        slug="laps",
        name="Laps",
        mode="best",
        order="asc",
        windows=["custom"],
        cron="0 18 * * FRI",
        timezone="Europe/Paris",
        format="time_ms",
    )
    response = admin_client.post(reverse("admin:core_leaderboard_add"), board_form(laps), follow=True)
    assert response.status_code == 200
    board = game.leaderboards.get(slug="laps")
    assert (board.windows, board.cron, board.format) == (["custom"], "0 18 * * FRI", "time_ms")
    # The pinned clock is Wednesday 2026-03-04: the next Fridays at 18:00 in Paris.
    page = text(admin_client.get(board_url(board)).content)
    assert "At 18:00 on Friday (Europe/Paris): Fri 2026-03-06 18:00, Fri 2026-03-13 18:00, Fri 2026-03-20 18:00" in page

    bad = Leaderboard(game=game, slug="bad", name="Bad", windows=["custom"], cron="0 25 * * *")
    response = admin_client.post(reverse("admin:core_leaderboard_add"), board_form(bad))
    assert response.status_code == 200 and "is not a valid cron expression: Bad hour" in response.content.decode()
    assert not game.leaderboards.filter(slug="bad").exists()


def test_it_creates_a_game_with_a_key_then_adds_its_board_from_the_games_page(admin_client):
    data = game_form(Game(name="Snake"), {"name": "server"})
    response = admin_client.post(reverse("admin:core_game_add"), {**data, "slug": "snake"}, follow=True)
    assert response.status_code == 200
    game = Game.objects.get(slug="snake")
    [raw] = shown_keys(response)
    assert authorize(raw, "snake").game.slug == "snake"

    page = admin_client.get(change_url(game)).content.decode()
    add = reverse("admin:core_leaderboard_add") + f"?game={game.pk}"
    assert f'href="{add}"' in page
    form = admin_client.get(add).content.decode()
    assert f'<option value="{game.pk}" selected>' in form
    board = Leaderboard(game=game, slug="main", name="Main", order="asc", windows=["all-time"])
    assert admin_client.post(reverse("admin:core_leaderboard_add"), board_form(board)).status_code == 302
    created = game.leaderboards.get()
    assert (created.order, created.windows) == ("asc", ["all-time"])


def test_it_shows_a_key_added_inline_once_and_stores_only_its_hash(admin_client, game):
    response = admin_client.post(
        change_url(game),
        game_form(game, {"name": "eu"}),
        follow=True,
    )
    assert response.status_code == 200
    [raw] = shown_keys(response)
    assert f"New API key for tetris: {raw} — copy it now, it will not be shown again." in response.content.decode()

    api_key = ApiKey.objects.get()
    assert (api_key.name, api_key.scope, api_key.game_id) == ("eu", "submit", game.pk)
    assert raw.split("_")[1] == api_key.prefix
    assert api_key.secret_hash == hash_secret(raw.split("_", 2)[2]) and raw not in api_key.secret_hash
    assert authorize(raw).api_key.prefix == api_key.prefix

    # Never again: not on the next page, and saving the game keeps the key unchanged.
    page = admin_client.get(change_url(game)).content.decode()
    assert raw not in page and api_key.prefix in page
    response = admin_client.post(change_url(game), game_form(game), follow=True)
    assert shown_keys(response) == []
    assert ApiKey.objects.get().secret_hash == api_key.secret_hash


def test_it_shows_a_key_added_in_the_key_admin_once(admin_client, game):
    response = admin_client.post(
        reverse("admin:core_apikey_add"),
        {"game": game.pk, "name": "ops", "scope": "manage", "requests_per_minute": 50, "items_per_minute": 2000},
        follow=True,
    )
    assert response.status_code == 200
    [raw] = shown_keys(response)
    assert "copy it now, it will not be shown again" in response.content.decode()
    api_key = ApiKey.objects.get()
    assert api_key.scope == "manage"
    assert api_key.secret_hash != raw and api_key.secret_hash == hash_secret(raw.split("_", 2)[2])
    assert authorize(raw).api_key.requests_per_minute == 50

    page = admin_client.get(reverse("admin:core_apikey_change", args=[api_key.pk])).content.decode()
    assert api_key.secret_hash not in page and raw not in page and "secret_hash" not in page
    listing = admin_client.get(reverse("admin:core_apikey_changelist")).content.decode()
    assert api_key.prefix in listing and api_key.secret_hash not in listing


def test_it_revokes_keys_with_an_action(admin_client, game):
    api_key, raw = apikeys.api_key_create(game=game, name="server")
    _, other_raw = apikeys.api_key_create(game=game, name="other")
    authorize(raw)
    response = admin_client.post(
        reverse("admin:core_apikey_changelist"),
        {"action": "revoke_keys", "_selected_action": [api_key.pk]},
        follow=True,
    )
    assert b"Revoked 1 API key." in response.content
    with pytest.raises(ServiceError) as caught:
        authorize(raw)
    assert (caught.value.status, caught.value.code) == (403, "revoked_api_key")
    authorize(other_raw)
    assert ApiKey.objects.get(pk=api_key.pk).revoked


def test_it_shows_the_api_keys_first_on_the_game_page(admin_client, game):
    apikeys.api_key_create(game=game, name="server")
    html = admin_client.get(change_url(game)).content.decode()

    main = reverse("admin:core_leaderboard_change", args=[game.leaderboards.get().pk])
    assert html.index("API keys") < html.index('name="timezone"') < html.index(f'href="{main}"')


def test_it_deletes_a_game_after_saying_what_goes_and_a_confirmation(admin_client, game):
    submit(game, "alice", 70, "Alice")
    services.players_sync_pending()
    ledger.ledger_drain()
    url = reverse("admin:core_game_delete", args=[game.pk])

    page = admin_client.get(url).content.decode()
    assert "1 named player," in page
    assert "<li>1 score event;</li>" in page and "<li>1 player;</li>" in page and "<li>0 API keys.</li>" in page
    wrong = admin_client.post(url, {"confirm_slug": "snake", "reason": "gone"})
    assert wrong.status_code == 200 and b"Type tetris exactly." in wrong.content
    assert Game.objects.filter(pk=game.pk).exists()

    response = admin_client.post(url, {"confirm_slug": "tetris", "reason": "never released"}, follow=True)
    assert b"Deleted Tetris (tetris)" in response.content
    assert not Game.objects.filter(pk=game.pk).exists()
    assert AuditEntry.objects.get().detail["players"] == 1
    changelist = admin_client.get(reverse("admin:core_game_changelist")).content.decode()
    assert 'value="delete_selected"' not in changelist


# --------------------------------------------------------------------------- players


@pytest.fixture
def players(game) -> dict[str, Player]:
    submit(game, "alice", 70, "Alice")
    submit(game, "bob", 50, "Bob")
    submit(game, "bob", 40)
    submit(game, "carol", 30, "Carol")
    services.players_sync_pending()
    return {p.player_id: p for p in Player.objects.all()}


def act_on_players(admin_client, action: str, *chosen: Player, reason: str = "support ticket 7"):
    """An action as the browser runs it: the confirmation page, then the confirmed act."""
    url = reverse("admin:core_player_changelist")
    form = {"action": action, "_selected_action": [p.pk for p in chosen]}
    page = admin_client.post(url, form)
    assert page.status_code == 200
    for player in chosen:
        assert player.player_id in page.content.decode()
    assert b'name="reason"' in page.content
    return admin_client.post(url, {**form, "confirm": "yes", "reason": reason}, follow=True)


def test_it_lists_and_searches_players(admin_client, players):
    response = admin_client.get(reverse("admin:core_player_changelist"), {"q": "Caro"})
    assert response.status_code == 200
    assert b"carol" in response.content and b"alice" not in response.content
    assert admin_client.get(reverse("admin:core_player_add")).status_code == 403


def test_it_hides_and_unhides_players_with_actions(admin_client, game, players):
    before = {period: board(game, period) for period in ("daily", "all-time")}
    response = act_on_players(admin_client, "hide_players", players["bob"], players["carol"])
    assert b"Hid 2 players from every board." in response.content
    assert board(game) == [(1, "alice", "Alice", 70)]
    assert Player.objects.filter(hidden=True).count() == 2
    with pytest.raises(ServiceError) as caught:
        submit(game, "bob", 99)
    assert (caught.value.status, caught.value.code) == (403, "player_hidden")

    response = act_on_players(admin_client, "unhide_players", players["bob"])
    assert b"Unhid 1 player on every board again." in response.content
    assert board(game) == [(1, "alice", "Alice", 70), (2, "bob", "Bob", 50)]
    act_on_players(admin_client, "unhide_players", players["carol"])
    assert {period: board(game, period) for period in before} == before
    assert not Player.objects.filter(hidden=True).exists()
    trail = list(AuditEntry.objects.order_by("id").values_list("action", "player_id", "actor_name", "reason"))
    assert trail == [
        ("hide", "bob", "admin", "support ticket 7"),
        ("hide", "carol", "admin", "support ticket 7"),
        ("unhide", "bob", "admin", "support ticket 7"),
        ("unhide", "carol", "admin", "support ticket 7"),
    ]


def test_it_asks_again_when_an_action_has_no_reason(admin_client, game, players):
    response = act_on_players(admin_client, "hide_players", players["bob"], reason="")

    assert b"This field is required." in response.content
    assert not Player.objects.filter(hidden=True).exists()
    assert not AuditEntry.objects.exists()


def test_it_renames_and_hides_through_the_change_form(admin_client, game, players):
    url = reverse("admin:core_player_change", args=[players["bob"].pk])
    page = admin_client.get(url)
    assert page.status_code == 200 and b'name="player_id"' not in page.content

    refused = admin_client.post(url, {"display_name": "Robert <3"})
    assert refused.status_code == 200 and b"Say why" in refused.content
    assert board(game)[1] == (2, "bob", "Bob", 50)

    response = admin_client.post(url, {"display_name": "Robert <3", "player_id": "mallory", "reason": "asked"})
    assert response.status_code == 302
    assert board(game)[1] == (2, "bob", "Robert <3", 50)
    bob = Player.objects.get(pk=players["bob"].pk)
    assert (bob.player_id, bob.display_name, bob.hidden) == ("bob", "Robert <3", False)

    admin_client.post(url, {"display_name": "Robert <3", "hidden": "on", "reason": "cheating"})
    assert [e[1] for e in board(game)] == ["alice", "carol"]
    assert Player.objects.get(pk=bob.pk).hidden

    admin_client.post(url, {"display_name": "Robert <3", "reason": "appeal upheld"})
    assert board(game)[1] == (2, "bob", "Robert <3", 50)
    # Renamed in the database already: the next sync has nothing to refresh.
    assert services.players_sync_pending() == 0
    trail = list(AuditEntry.objects.order_by("id").values_list("action", "reason", "detail"))
    assert trail == [
        ("rename", "asked", {"from": "Bob", "to": "Robert <3"}),
        ("hide", "cheating", {}),
        ("unhide", "appeal upheld", {}),
    ]
    # The player's page shows their trail.
    page = admin_client.get(url).content.decode()
    assert "appeal upheld" in page and "Every entry for bob" in page


def test_it_erases_a_player_from_their_page_after_a_confirmation(admin_client, game, players):
    page = admin_client.get(reverse("admin:core_player_change", args=[players["bob"].pk])).content.decode()
    erase_url = reverse("admin:core_player_erase", args=[players["bob"].pk])
    assert f'href="{erase_url}"' in page

    confirmation = admin_client.get(erase_url)
    assert b"Erase 1 player" in confirmation.content and b"deleted player" in confirmation.content
    response = admin_client.post(erase_url, {"confirm": "yes", "reason": "GDPR request #3"}, follow=True)

    assert b"Erased 1 player." in response.content
    assert [e[1] for e in board(game)] == ["alice", "carol"]
    assert not Player.objects.filter(player_id="bob").exists()
    assert AuditEntry.objects.get().action == "erase"


def test_it_erases_players_with_an_action_and_never_deletes_them_plainly(admin_client, game, players):
    response = act_on_players(admin_client, "erase_players", players["alice"], players["carol"], reason="GDPR")

    assert b"Erased 2 players." in response.content
    assert [e[1] for e in board(game)] == ["bob"]
    changelist = admin_client.get(reverse("admin:core_player_changelist")).content.decode()
    assert 'value="delete_selected"' not in changelist
    assert admin_client.get(reverse("admin:core_player_delete", args=[players["bob"].pk])).status_code == 403


def test_it_needs_the_delete_permission_to_erase(client, game, players, django_user_model):
    staff = django_user_model.objects.create_user("mod", password="pw-123456789", is_staff=True)
    staff.user_permissions.add(*Permission.objects.filter(codename__in=["view_player", "change_player"]))
    client.force_login(staff)

    assert client.get(reverse("admin:core_player_erase", args=[players["bob"].pk])).status_code == 403
    changelist = client.get(reverse("admin:core_player_changelist")).content.decode()
    assert "erase_players" not in changelist and "hide_players" in changelist


# --------------------------------------------------------------------------- presence and links


def test_it_shows_each_players_linked_user_and_presence(admin_client, game, players, django_user_model):
    user = django_user_model.objects.create_user("ada", password="pw-123456789")
    PlayerLink.objects.create(user=user, game=game, player_id="bob")
    config = config_of(game)
    run_sync(lambda: presence_services.presence_report(game=config, online=[], offline=["carol"]))

    listing = admin_client.get(reverse("admin:core_player_changelist")).content.decode()
    bob = admin_client.get(reverse("admin:core_player_change", args=[players["bob"].pk])).content.decode()
    carol = admin_client.get(reverse("admin:core_player_change", args=[players["carol"].pk])).content.decode()

    bob_row = re.search(r"<tr[^>]*>(?:(?!</tr>).)*>bob<(?:(?!</tr>).)*</tr>", listing, re.S)
    assert bob_row is not None and "ada" in bob_row.group(0)
    assert "ada" in bob and "online now" in bob
    assert "last seen" in carol
    # The player's ledger is one click away, and the link opens their events only.
    ledger.ledger_drain()
    link = re.search(r'href="([^"]+)">Score events of bob<', bob)
    assert link is not None
    events = admin_client.get(html.unescape(link.group(1)))
    assert events.status_code == 200  # an invalid lookup would redirect to ?e=1
    listed = {e.player_id for e in events.context["cl"].result_list}
    assert listed == {"bob"}


def test_it_counts_the_audit_trail_in_entries(admin_client, game):
    for player in ("alice", "bob"):
        audit_record(action=AuditEntry.Action.HIDE, game_slug=game.slug, by=Actor(name="ops"), player_id=player)

    page = admin_client.get(reverse("admin:core_auditentry_changelist")).content.decode()

    assert "2 audit entries" in page
    assert "2 audit trail" not in page


def test_it_writes_every_time_in_one_form(admin_client, game):
    apikeys.api_key_create(game=game, name="server")
    for player in ("alice",):
        audit_record(action=AuditEntry.Action.HIDE, game_slug=game.slug, by=Actor(name="ops"), player_id=player)
    for url in (reverse("admin:core_auditentry_changelist"), reverse("admin:core_apikey_changelist")):
        page = admin_client.get(url).content.decode()
        assert re.search(r"\b\d{4}-\d\d-\d\d \d\d:\d\d UTC\b", page), url
        assert not re.search(r"\b(a\.m\.|p\.m\.|noon|midnight)\b|March 4, 2026", page), url
