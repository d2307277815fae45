"""A league made through the API for the page tests (tests/competitions/test_league_pages*.py):
one settled week behind it (the close job run on a moved pinned clock), the current week under
way with cohorts in every tier, a reward claimed and one pending, a cup with cohorts but no
tiers beside it, and a site user linked to a player."""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass
from typing import Any

import httpx
from django.contrib.auth import get_user_model
from django.test import Client

from accounts.models import PlayerLink
from archive import services as archive_services
from competitions.models import Grant
from core import apikeys
from core import services as core_services
from core.models import ApiKey, Game
from tests.conftest import auth, clock_at

GAME = "lg"
BOARD = "league"
API = f"/api/v1/games/{GAME}/leaderboards"
# T0 (tests/conftest.py) is Wednesday 2026-03-04 12:00 UTC, in 2026-W10; the week before is settled.
LAST_MONDAY = dt.datetime(2026, 2, 23, 0, 0, tzinfo=dt.UTC)  # 2026-W09 begins
MONDAY = dt.datetime(2026, 3, 2, 0, 0, tzinfo=dt.UTC)  # 2026-W10 begins
GRACE = dt.timedelta(seconds=121)  # past ARCHIVE_GRACE_SECS: the close job is due
LADDER = [
    {"slug": "bronze", "name": "Bronze", "promote": "2"},
    {"slug": "silver", "name": "Silver", "promote": "2", "demote": "20%"},
    {"slug": "gold", "name": "Gold", "demote": "1"},
]
LEAGUE: dict[str, Any] = {
    "name": "Weekly league",
    "mode": "best",
    "order": "desc",
    "windows": ["weekly"],
    "entry": "join",
    "cohort_size": 5,
    "cohort_by": "tier",
    "tiers": LADDER,
    "start_tier": "silver",
    "rewards": [
        {"from_rank": 1, "reward": {"coins": 100}},
        {"tier": "silver", "from_rank": 2, "to_rank": 2, "reward": {"coins": 20}},
    ],
    "settle_delay_secs": 3600,
}
# The week before, everyone in silver: silver-1 ranks p5, p1 (both up to gold, with coins 100 and
# 20), p2, p3, p4 (down to bronze); silver-2 is p6 alone, who never scores (and stays: 20% of one
# is nobody).
LAST_WEEK = {"p1": 30, "p2": 20, "p3": 10, "p4": 5, "p5": 50, "p6": None}
# This week, in the order they join: gold-1 (p1, p5), silver-1 (p2, n1, n2, n3, n4: ranks n1, p2,
# n2, n4, then n3 without a score), bronze-1 (p4), silver-2 (n5, p3, p6).
THIS_WEEK = {
    "p1": 70,
    "p5": 60,
    "p2": 40,
    "p4": 10,
    "n1": 50,
    "n2": 30,
    "n3": None,
    "n4": 5,
    "n5": None,
    "p3": 15,
    "p6": 25,
}
NAMES = {"p2": "Bea", "n1": "Nia"}
# A weekly cup beside the league: cohorts of 3 without tiers, each cohort's winner rewarded.
CUP: dict[str, Any] = {
    "name": "Weekly cup",
    "mode": "best",
    "order": "desc",
    "windows": ["weekly"],
    "entry": "join",
    "cohort_size": 3,
    "rewards": [{"from_rank": 1, "reward": {"gems": 5}}],
}
# cup 1: c1, p2, c2 (ranked p2, c1, c2); cup 2: c3.
CUP_WEEK = {"c1": 20, "p2": 35, "c2": None, "c3": 8}
ME = "p2"  # the signed-in user's player


@dataclass(frozen=True)
class League:
    game: Game
    manage: str
    submit: str


def ok(client: Client | httpx.Client, method: str, path: str, key: str, body: Any = None) -> Any:
    """A call of the API that must succeed: through Django's test client, or over HTTP to a live
    server (while a browser lives, its event loop bars the test client's async views)."""
    if isinstance(client, httpx.Client):
        response = client.request(method.upper(), path, json=body, headers=auth(key))
        assert response.status_code in (200, 201), response.text
        return response.json()
    answer = getattr(client, method)(
        path, json.dumps(body) if body is not None else None, content_type="application/json", headers=auth(key)
    )
    assert answer.status_code in (200, 201), answer.content
    return answer.json()


def play(league: League, scores: dict[str, int | None], board: str = BOARD, client: Any = None) -> None:
    client = client or Client()
    for player, score in scores.items():
        body: dict[str, Any] = {"player_id": player}
        if player in NAMES:
            body["display_name"] = NAMES[player]
        ok(client, "post", f"{API}/{board}/entries", league.submit, body)
        if score is not None:
            ok(client, "post", f"{API}/{board}/scores", league.submit, {"player_id": player, "score": score})


def make_game() -> League:
    game = core_services.game_create(slug=GAME, name="League game", max_submissions_per_minute=0)
    _, manage = apikeys.api_key_create(game=game, name="ops", scope=ApiKey.Scope.MANAGE)
    _, submit = apikeys.api_key_create(game=game, name="server")
    return League(game, manage, submit)


def make_league(client: Client | httpx.Client | None = None) -> League:
    """The league with last week settled and this week under way (the clock left at T0), made
    through ``client`` (Django's test client by default)."""
    client = client or Client()
    league = make_game()
    with clock_at(LAST_MONDAY + dt.timedelta(hours=1)):
        # A first board, so that the league is not the game's default one: links must name it.
        main = {"name": "Main", "mode": "best", "order": "desc", "windows": ["all-time"]}
        ok(client, "put", f"{API}/main", league.manage, main)
        ok(client, "put", f"{API}/{BOARD}", league.manage, LEAGUE)
        play(league, LAST_WEEK, client=client)
    with clock_at(MONDAY + dt.timedelta(hours=1) + GRACE):
        assert archive_services.close_jobs_run() == 1
    claimed = Grant.objects.get(player_id="p5")
    ok(client, "post", f"/api/v1/games/{GAME}/rewards/{claimed.grant_id}/claim", league.submit)
    play(league, THIS_WEEK, client=client)
    ok(client, "put", f"{API}/cup", league.manage, CUP)
    play(league, CUP_WEEK, board="cup", client=client)
    return league


def link_user(league: League, player_id: str = ME) -> Client:
    """A signed-in site user linked to ``player_id`` (a Django test client holding the session)."""
    user = get_user_model().objects.create_user(f"user-{player_id}", password="pw-123456789")
    PlayerLink.objects.create(user=user, game=league.game, player_id=player_id)
    client = Client()
    client.force_login(user)
    return client


def text_of(html: str, marker: str, end: str = "</section>") -> str:
    """The text of the element that ``marker`` opens (up to ``end``) as it reads on screen: tags
    and tables' captions dropped, spaces folded."""
    part = html.split(marker, 1)[1]
    if not marker.endswith(">"):
        part = part.split(">", 1)[1]  # the rest of the opening tag
    shown = part.split(end, 1)[0]
    for hidden in (r"<caption.*?</caption>", r'<span class="visually-hidden">[^<]*</span>'):  # for screen readers
        shown = re.sub(hidden, " ", shown, flags=re.S)
    text = " ".join(re.sub(r"<[^>]+>", " ", shown).split())
    return re.sub(r" ([.,:;])", r"\1", text)


def links(html: str) -> list[str]:
    """Every same-site link of a page (href), with its entities decoded."""
    found = re.findall(r'href="([^"#]+)"', html)
    return [h.replace("&amp;", "&") for h in found if h.startswith(("/", "?"))]
