"""What the tests of a competition's durable records share: a game with a competing board (or a
league's) and a key, grants and tier moves made as the settlement will make them (its services,
inside a transaction of its own), on the suite's database or on a real server's."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from django.db import transaction

from competitions.models import SettledEntry, Settlement
from competitions.services import league, rewards
from competitions.services.league import TierMoveSpec
from competitions.services.rewards import GrantSpec
from core import apikeys, clock, competition_rules, outbox
from core import services as core_services
from core.models import Event, Game, Leaderboard
from tests.real_server import manage

# T0 (tests/conftest.py) is Wednesday 2026-03-04 12:00 UTC, in the week 2026-W10.
WEEK = "2026-W10"
LAST_WEEK = "2026-W09"
CLAIM_WINDOW = dt.timedelta(seconds=competition_rules.CLAIM_WINDOW_DEFAULT_SECS)
# A league of three tiers, bottom first, players starting in the middle one.
LADDER: list[dict[str, Any]] = [
    {"slug": "bronze", "name": "Bronze", "promote": "2"},
    {"slug": "silver", "name": "Silver", "promote": "2", "demote": "2"},
    {"slug": "gold", "name": "Gold", "demote": "2"},
]
# A league board's settings: cohorts of 30 formed within its tiers.
LEAGUE_SETTINGS: dict[str, Any] = {"cohort_size": 30, "cohort_by": "tier", "tiers": LADDER, "start_tier": "silver"}

# The settlement's part on a real server's database (tests/real_server.py), as it will do it: a
# competing board, and each reward granted in a transaction, ``days_ago`` days before now.
_NODE_GRANTS = """
import datetime as dt
from django.db import transaction
from competitions.services.rewards import GrantSpec, grants_create
from core import clock
from core.models import Game, Leaderboard
game = Game.objects.get(slug={game!r})
board, _ = Leaderboard.objects.get_or_create(
    game=game, slug={board!r}, defaults={{"name": "Prizes", "windows": ["weekly"], "entry": "join"}}
)
for player, days_ago, reward in {grants!r}:
    with transaction.atomic():
        at = clock.now() - dt.timedelta(days=days_ago)
        grants_create(board=board, window="weekly", period_id=f"{{days_ago}}-days-ago",
                      grants=[GrantSpec(player, 1, reward)], now=at)
"""


def node_grants(
    env: dict[str, str], *, game: str, board: str, grants: Sequence[tuple[str, int, dict[str, Any]]]
) -> None:
    """Grant rewards on a real server's database: (player, days ago, reward) each."""
    manage(env, "shell", "-c", _NODE_GRANTS.format(game=game, board=board, grants=list(grants)))


def competing_game(slug: str = "cup", *, board: str = "weekly") -> tuple[Game, Leaderboard, str]:
    """A game with a competing weekly board (join first) and a submit key (raw); a board whose
    slug starts with 'league' is a league's (LEAGUE_SETTINGS)."""
    game = core_services.game_create(slug=slug, name=slug.title(), max_submissions_per_minute=0)
    league = LEAGUE_SETTINGS if board.startswith("league") else {}
    made = Leaderboard(game=game, slug=board, name=board.title(), windows=["weekly"], entry="join", **league)
    made.full_clean()
    made.save()
    _, key = apikeys.api_key_create(game=game, name="server")
    return game, made, key


def granted(board: Leaderboard, *specs: GrantSpec, period_id: str = WEEK, now: dt.datetime | None = None) -> int:
    """Grant as a settlement will: in a transaction of its own."""
    with transaction.atomic():
        return rewards.grants_create(
            board=board, window="weekly", period_id=period_id, grants=list(specs), now=now or clock.now()
        )


def moved(board: Leaderboard, period_id: str, moves: Sequence[TierMoveSpec], now: dt.datetime | None = None) -> int:
    """Apply tier moves as a settlement will: in a transaction of its own."""
    with transaction.atomic():
        return league.tiers_apply(board=board, period_id=period_id, moves=moves, now=now or clock.now())


def settled(board: Leaderboard, *moves: TierMoveSpec, period_id: str = WEEK, now: dt.datetime | None = None) -> None:
    """A settlement of ``period_id`` whose entries are the ``moves`` (rank None: rank 99), with
    the movers' tiers applied, as period_settle writes them: in a transaction of its own."""
    with transaction.atomic():
        settlement = Settlement.objects.create(
            board=board,
            window="weekly",
            period_id=period_id,
            settled_at=now or clock.now(),
            entrants=len(moves),
            cohorts=len({m.cohort for m in moves}),
            promoted=sum(1 for m in moves if m.move > 0),
            demoted=sum(1 for m in moves if m.move < 0),
            granted=0,
        )
        for m in moves:
            rank = m.rank or 99
            SettledEntry.objects.create(
                settlement=settlement,
                player_id=m.player_id,
                cohort=m.cohort,
                rank=rank,
                score=100 - rank,
                tier=m.from_tier,
                move=m.move,
                tier_after=m.to_tier,
            )
        league.tiers_apply(board=board, period_id=period_id, moves=moves, now=now or clock.now())


def events(kind: str) -> list[outbox.EventEnvelope]:
    """Every event of ``kind`` written, oldest first, each checked against its declaration."""
    found = [outbox.envelope_of(event) for event in Event.objects.filter(type=kind).order_by("id")]
    for envelope in found:
        outbox.envelope_check(envelope)
    return found
