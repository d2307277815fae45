"""Admin shows settlements read-only (issue 22): each settled period's totals, its first entries
on its page and every entry a page at a time in the entries' list, filtered to it."""

from __future__ import annotations

import datetime as dt

import pytest
from django.urls import reverse

from competitions import admin as competition_admin
from competitions.models import SettledEntry, Settlement
from core import apikeys
from core import services as core_services
from core.models import ApiKey
from tests.competitions.test_settlement import GRACE, LEAGUE, MONDAY, NEXT_MONDAY, close_jobs_at, ok, play
from tests.conftest import clock_at
from tests.live.test_pages import text

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def settlement() -> Settlement:
    """The league week of test_settlement.py settled: silver-1 (p1, p2, p3), silver-2 (p5, p4, p6)."""
    game = core_services.game_create(slug="lg", name="League game", max_submissions_per_minute=0)
    _, manage = apikeys.api_key_create(game=game, name="ops", scope=ApiKey.Scope.MANAGE)
    _, submit = apikeys.api_key_create(game=game, name="server")
    with clock_at(MONDAY + dt.timedelta(hours=1)):
        ok("put", "/league", manage, LEAGUE)
        play(submit, "league", {"p1": 30, "p2": 20, "p3": 10, "p4": 5, "p5": 50, "p6": None})
    assert close_jobs_at(NEXT_MONDAY + GRACE) == 1
    return Settlement.objects.get()


def test_it_lists_settlements_with_their_totals(admin_client, settlement):
    listing = admin_client.get(reverse("admin:competitions_settlement_changelist"))
    found = admin_client.get(reverse("admin:competitions_settlement_changelist"), {"q": "2026-W10"})
    missed = admin_client.get(reverse("admin:competitions_settlement_changelist"), {"q": "2026-W11"})

    assert listing.status_code == 200
    row = text(listing.content)
    assert "League (lg/league) weekly 2026-W10" in row
    assert '<td class="field-entrants">6</td>' in listing.content.decode()
    for column, value in (("cohorts", 2), ("promoted", 2), ("demoted", 2), ("granted", 2)):
        assert f'<td class="field-{column}">{value}</td>' in listing.content.decode(), column
    assert "2026-W10" in text(found.content) and "2026-W10" not in text(missed.content)


def test_it_shows_a_settlements_first_entries_and_pages_all_of_them(admin_client, settlement, monkeypatch):
    page = admin_client.get(reverse("admin:competitions_settlement_change", args=[settlement.pk]))
    monkeypatch.setattr(competition_admin, "SETTLEMENT_PEEK_SIZE", 2)
    peek = text(admin_client.get(reverse("admin:competitions_settlement_change", args=[settlement.pk])).content)
    entries_url = reverse("admin:competitions_settledentry_changelist")
    listed = admin_client.get(entries_url, {"settlement__id__exact": settlement.pk})
    silver_2 = admin_client.get(entries_url, {"settlement__id__exact": settlement.pk, "q": "silver-2"})

    assert page.status_code == 200
    shown = text(page.content)
    assert 'silver-1 1 p1 30 silver 1 gold {"coins": 100}' in shown
    assert "silver-2 — p6 — silver -1 bronze —" in shown
    assert "The first 6 of 6." in shown and 'name="_save"' not in page.content.decode()
    assert f"{entries_url}?settlement__id__exact={settlement.pk}" in page.content.decode()
    assert "The first 2 of 6." in peek and " p2 " in peek and " p5 " not in peek
    assert listed.status_code == 200
    assert all(f">{p}<" in listed.content.decode() for p in ("p1", "p2", "p3", "p4", "p5", "p6"))
    assert [p for p in ("p1", "p4", "p5", "p6") if f">{p}<" in silver_2.content.decode()] == ["p4", "p5", "p6"]


def test_it_offers_no_act_on_settlements_or_their_entries(admin_client, settlement):
    entry = SettledEntry.objects.get(player_id="p1")
    for model, row in (("settlement", settlement), ("settledentry", entry)):
        assert admin_client.get(reverse(f"admin:competitions_{model}_add")).status_code == 403
        page = admin_client.get(reverse(f"admin:competitions_{model}_change", args=[row.pk]))
        assert page.status_code == 200 and 'name="_save"' not in page.content.decode()
        assert admin_client.post(reverse(f"admin:competitions_{model}_delete", args=[row.pk])).status_code == 403
    assert (Settlement.objects.count(), SettledEntry.objects.count()) == (1, 6)
