"""``manage.py end_competition GAME BOARD``: a season's competition ended now from the command
line, through the service the API and admin use (audited as the command's act)."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from core import apikeys, clock
from core import services as core_services
from core.models import ApiKey, AuditEntry, Leaderboard
from tests.competitions.test_settlement import PLAIN, ok
from tests.conftest import T0

pytestmark = pytest.mark.django_db(transaction=True)

CUP = {
    "name": "Spring cup",
    "mode": "best",
    "order": "desc",
    "windows": ["all-time"],
    "starts_at": "2026-03-02T00:00:00Z",
    "ends_at": "2026-06-01T00:00:00Z",
    "entry": "join",
}


def end(*args: str) -> str:
    out = io.StringIO()
    call_command("end_competition", *args, stdout=out)
    return out.getvalue()


def test_it_ends_a_seasons_competition_from_the_command_line_and_audits_it():
    game = core_services.game_create(slug="lg", name="League game", max_submissions_per_minute=0)
    _, manage = apikeys.api_key_create(game=game, name="ops", scope=ApiKey.Scope.MANAGE)
    _, submit = apikeys.api_key_create(game=game, name="server")
    ok("put", "/cup", manage, CUP)
    ok("post", "/cup/entries", submit, {"player_id": "ada"})  # the season's board is in Redis now

    said = end("lg", "cup")

    assert said == (
        "Ended the competition of lg/cup: its season ended at 2026-03-04T12:00:00.000Z "
        "(was 2026-06-01T00:00:00.000Z); 1 close job(s) due, which settle it.\n"
    )
    assert Leaderboard.objects.get(slug="cup").ends_at == T0 == clock.now()
    entry = AuditEntry.objects.get(action="end_competition")
    assert (entry.action, entry.actor_name, entry.game_slug, entry.detail["leaderboard"]) == (
        "end_competition",
        "manage.py end_competition",
        "lg",
        "cup",
    )


def test_it_says_why_it_ends_nothing():
    game = core_services.game_create(slug="lg", name="League game", max_submissions_per_minute=0)
    _, manage = apikeys.api_key_create(game=game, name="ops", scope=ApiKey.Scope.MANAGE)
    ok("put", "/cup", manage, CUP)
    ok("put", "/weekly", manage, PLAIN)
    end("lg", "cup")

    refusals = {}
    for args in (("nope", "cup"), ("lg", "nope"), ("lg", "cup"), ("lg", "weekly")):
        with pytest.raises(CommandError) as refused:
            end(*args)
        refusals[args] = str(refused.value)

    assert refusals == {
        ("nope", "cup"): "There is no game 'nope'.",
        ("lg", "nope"): "lg has no leaderboard 'nope'.",
        ("lg", "cup"): "Nothing was ended: The season of 'cup' is not running: it has not begun, or it is over.",
        ("lg", "weekly"): "Nothing was ended: Only a competing season ends early; 'weekly' does not compete in its "
        "all-time window in a season (daily, weekly, monthly and custom periods end on their own).",
    }
    assert AuditEntry.objects.filter(action="end_competition").count() == 1
