"""The game admin's competition part of a board (issue 22): its rules in words, a preview of the
current period, and "End this season's competition now" after a confirmation, audited."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse

from competitions.selectors import cohorts as cohort_reads
from core import apikeys
from core import services as core_services
from core.config import BoardConfig
from core.models import ApiKey, AuditEntry, Game, Leaderboard
from core.redis import run_sync
from tests.competitions.test_settlement import LEAGUE, PLAIN, ok, play
from tests.conftest import T0
from tests.live.test_pages import text

# The API's and the preview's reads cross the Redis bridge: rows must be committed.
pytestmark = pytest.mark.django_db(transaction=True)

CUP: dict[str, Any] = {
    "name": "Spring cup",
    "mode": "best",
    "order": "desc",
    "windows": ["all-time"],
    "starts_at": "2026-03-02T00:00:00Z",
    "ends_at": "2026-06-01T00:00:00Z",
    "entry": "join",
    "settle_delay_secs": 3600,
    "rewards": [{"from_rank": 1, "to_rank": 2, "reward": {"badge": "spring"}}],
}
# Balanced cohorts of two, drawn when entry closes at the week's end.
HELD = {**PLAIN, "cohort_fill": "balanced", "entry_window_secs": 7 * 86400, "rewards": []}


@pytest.fixture
def lg() -> tuple[Game, str, str]:
    game = core_services.game_create(slug="lg", name="League game", max_submissions_per_minute=0)
    _, manage = apikeys.api_key_create(game=game, name="ops", scope=ApiKey.Scope.MANAGE)
    _, submit = apikeys.api_key_create(game=game, name="server")
    return game, manage, submit


def board_url(slug: str) -> str:
    return reverse("admin:core_leaderboard_change", args=[Leaderboard.objects.get(slug=slug).pk])


def change_page(admin_client, slug: str) -> str:
    """A board's own admin page, as text."""
    response = admin_client.get(board_url(slug))
    assert response.status_code == 200
    return text(response.content)


def end_url(game: Game, board: str) -> str:
    return reverse("admin:core_game_end_competition", args=[game.pk, board])


def test_it_shows_a_competing_boards_rules_in_words_and_its_period(admin_client, lg):
    game, manage, submit = lg
    ok("put", "/league", manage, LEAGUE)
    play(submit, "league", {"p1": 30, "p2": 20, "p3": 10, "p4": 5, "p5": 50, "p6": None})
    ok("put", "/held", manage, HELD)
    play(submit, "held", {"q1": 1, "q2": 2, "q3": 3})
    ok("put", "/plain", manage, {"mode": "best", "order": "desc", "windows": ["weekly"]})

    page = change_page(admin_client, "league")

    # The league, in cohorts of three within tiers (tests/competitions/test_settlement.py's week).
    assert "ladder Bronze (bottom): top 1 of each cohort go up." in page
    assert "ladder Silver, where new players start: top 1 of each cohort go up; bottom 1 go down." in page
    assert 'rewards Rank 1: {"coins": 100}' in page
    assert "Period 2026-W10: 6 entrants; settles 2026-03-09 00:00 UTC." in page
    assert "2 cohorts: silver-1 with 3, silver-2 with 3." in page
    assert "If it ended now: 2 promoted, 2 demoted, 2 rewarded (6 entrants in 2 cohorts)." in page
    # Balanced cohorts still held: no settlement preview, and the page drew none of them early.
    page = change_page(admin_client, "held")
    assert "Period 2026-W10: 3 entrants; settles 2026-03-09 00:00 UTC. No cohorts yet (3 held for the split)." in page
    assert "Its cohorts are drawn at 2026-03-09 00:00 UTC; what it would settle shows from then." in page
    held = Leaderboard.objects.get(slug="held")
    listed = run_sync(lambda: cohort_reads.cohorts_list(board=BoardConfig.from_model(held, game), period="weekly"))
    assert (listed.held, listed.total) == (3, 0)
    # Weekly races end on their own: nothing to end early.
    assert "End this season's competition now" not in page + change_page(admin_client, "plain")


def test_it_ends_a_seasons_competition_after_a_confirmation_and_audits_it(admin_client, lg):
    game, manage, submit = lg
    ok("put", "/cup", manage, CUP)
    play(submit, "cup", {"ada": 3, "bob": 2})
    assert end_url(game, "cup") in admin_client.get(board_url("cup")).content.decode()

    asked = admin_client.get(end_url(game, "cup"))
    unconfirmed = admin_client.post(end_url(game, "cup"), {})
    assert Leaderboard.objects.get(slug="cup").ends_at != T0
    done = admin_client.post(end_url(game, "cup"), {"confirm": "yes"}, follow=True)
    again = admin_client.post(end_url(game, "cup"), {"confirm": "yes"}, follow=True)
    audit = admin_client.get(reverse("admin:core_auditentry_changelist"), {"action__exact": "end_competition"})

    assert asked.status_code == 200 and unconfirmed.status_code == 200
    question = text(asked.content)
    assert "End the competition of Spring cup now?" in question
    assert "moves its season's end from 2026-06-01 00:00 UTC to this moment" in question
    assert "after its review buffer of 1 hour" in question
    assert 'rewards Ranks 1 to 2: {"badge": "spring"}' in question
    assert done.redirect_chain[-1][0] == board_url("cup")
    assert "Ended the competition of Spring cup (cup) at 2026-03-04 12:00 UTC" in text(done.content)
    assert "End this season's competition now" not in text(done.content)  # over now
    assert Leaderboard.objects.get(slug="cup").ends_at == T0
    assert "The season of 'cup' is not running" in text(again.content)
    entry = AuditEntry.objects.get(action="end_competition")
    assert (entry.action, entry.actor_name, entry.detail["leaderboard"]) == ("end_competition", "admin", "cup")
    assert "admin ended a season's competition now lg" in text(audit.content)  # who, what, which game


def test_it_refuses_to_end_what_is_no_season_and_asks_for_the_right_to_change_the_game(
    admin_client, client, lg, django_user_model
):
    game, manage, _ = lg
    ok("put", "/weekly", manage, PLAIN)
    ok("put", "/cup", manage, CUP)
    viewer = django_user_model.objects.create_user("viewer", password="pw", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_game"))
    client.force_login(viewer)

    weekly = admin_client.post(end_url(game, "weekly"), {"confirm": "yes"}, follow=True)
    missing = admin_client.get(end_url(game, "nope"))
    forbidden = client.post(end_url(game, "cup"), {"confirm": "yes"})

    assert "Only a competing season ends early" in text(weekly.content)
    assert missing.status_code == 404 and forbidden.status_code == 403
    assert Leaderboard.objects.get(slug="cup").ends_at != T0
    assert not AuditEntry.objects.filter(action="end_competition").exists()
