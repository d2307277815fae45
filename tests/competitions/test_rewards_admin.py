"""Admin shows rewards, league tiers and settled entries as read-only lists (issue 22): they change
only by settlement, claims and the expiry sweep, so admin offers no act on them."""

from __future__ import annotations

import pytest
from django.urls import reverse

from competitions.models import Grant, LeagueStanding, SettledEntry
from competitions.services.league import TierMoveSpec
from competitions.services.rewards import GrantSpec
from tests.competitions.settled import competing_game, granted, settled

pytestmark = pytest.mark.django_db


def test_it_lists_rewards_found_by_player_and_filtered_by_status_and_board(admin_client) -> None:
    _, board, _ = competing_game()
    granted(board, GrantSpec("ada", 1, {"coins": 5}), GrantSpec("bob", 2, {"coins": 1}))
    url = reverse("admin:competitions_grant_changelist")

    everyone = admin_client.get(url).content.decode()
    ada = admin_client.get(url, {"q": "ada"}).content.decode()
    claimed = admin_client.get(url, {"status__exact": "claimed"}).content.decode()
    on_board = admin_client.get(url, {"board__id__exact": board.id, "status__exact": "pending"}).content.decode()

    ada_id, bob_id = (Grant.objects.get(player_id=p).grant_id for p in ("ada", "bob"))
    assert ada_id in everyone and bob_id in everyone
    assert ada_id in ada and bob_id not in ada
    assert ada_id not in claimed and bob_id not in claimed
    assert ada_id in on_board and bob_id in on_board


def test_it_offers_no_act_on_rewards_tiers_or_settled_entries(admin_client) -> None:
    _, board, _ = competing_game(board="league")
    granted(board, GrantSpec("ada", 1, {"coins": 5}))
    settled(board, TierMoveSpec("ada", "silver", "gold", 1, "silver-1", 1))
    grant, standing, entry = Grant.objects.get(), LeagueStanding.objects.get(), SettledEntry.objects.get()

    for model, row in (("grant", grant), ("leaguestanding", standing), ("settledentry", entry)):
        listing = admin_client.get(reverse(f"admin:competitions_{model}_changelist"))
        assert listing.status_code == 200 and "ada" in listing.content.decode()
        assert admin_client.get(reverse(f"admin:competitions_{model}_add")).status_code == 403
        page = admin_client.get(reverse(f"admin:competitions_{model}_change", args=[row.pk]))
        assert page.status_code == 200 and 'name="_save"' not in page.content.decode()
        assert admin_client.post(reverse(f"admin:competitions_{model}_delete", args=[row.pk])).status_code == 403
    assert (Grant.objects.count(), LeagueStanding.objects.count(), SettledEntry.objects.count()) == (1, 1, 1)
