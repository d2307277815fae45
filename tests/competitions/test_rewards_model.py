"""Model-based: random grants (new periods, and periods granted again), claims through the API,
moves of the clock (to a window's very end too) and runs of the expiry sweep, against a small
reference of a reward's life (issue 22). Every claim's answer, every sweep's count and every
player's list with the status each reward shows must be the reference's.

Each hypothesis example is one fresh game (with no other game's rewards left, since the sweep
takes every game's), driven by ``async_to_sync`` on a loop of its own, as
tests/competitions/test_entry_model.py does.
"""

from __future__ import annotations

import datetime as dt
import itertools
from dataclasses import dataclass, field
from typing import Any

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.test import AsyncClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from competitions.models import Grant
from competitions.services import rewards
from competitions.services.rewards import GrantSpec
from core import clock
from core.redis import close_redis
from tests.competitions.settled import CLAIM_WINDOW, competing_game, granted
from tests.conftest import T0, auth, clock_at

pytestmark = pytest.mark.django_db(transaction=True)

PLAYERS = ["ada", "bob", "cy"]
_slugs = itertools.count()


@dataclass
class Kept:
    player: str
    period: str
    granted_at: dt.datetime
    status: str = "pending"
    claimed_at: dt.datetime | None = None

    @property
    def expires_at(self) -> dt.datetime:
        return self.granted_at + CLAIM_WINDOW

    def shown(self, now: dt.datetime) -> str:
        return "expired" if self.status == "pending" and self.expires_at <= now else self.status


@dataclass
class Reference:
    """A game's rewards: at most one per player and period; claimed once; expired from expires_at."""

    grants: list[Kept] = field(default_factory=list)

    def grant(self, players: list[str], period: str, now: dt.datetime) -> int:
        had = {g.player for g in self.grants if g.period == period}
        new = [Kept(p, period, now) for p in dict.fromkeys(players) if p not in had]
        self.grants += new
        return len(new)

    def claim(self, kept: Kept, now: dt.datetime) -> tuple[int, str]:
        if kept.status == "pending" and kept.expires_at > now:
            kept.status, kept.claimed_at = "claimed", now
        if kept.status == "claimed":
            assert kept.claimed_at is not None
            return 200, clock.iso(kept.claimed_at)
        return 410, "reward_expired"

    def sweep(self, now: dt.datetime, limit: int) -> int:
        due = [g for g in self.grants if g.status == "pending" and g.expires_at <= now]
        due.sort(key=lambda g: (g.expires_at, self.grants.index(g)))
        due = due[:limit]
        for kept in due:
            kept.status = "expired"
        return len(due)

    def listing(self, player: str, now: dt.datetime) -> list[tuple[str, str]]:
        mine = [(g.granted_at, i, g) for i, g in enumerate(self.grants) if g.player == player]
        return [(g.period, g.shown(now)) for _, _, g in sorted(mine, key=lambda t: (t[0], t[1]), reverse=True)]


operation = st.one_of(
    st.tuples(st.just("grant"), st.lists(st.sampled_from(PLAYERS), min_size=1, max_size=3)),
    # A period granted again (the settlement run twice), perhaps with players it did not have.
    st.tuples(st.just("regrant"), st.integers(0, 5), st.lists(st.sampled_from(PLAYERS), min_size=1, max_size=3)),
    st.tuples(st.just("claim"), st.integers(0, 20)),
    # Hours: within a window, most of it, past it.
    st.tuples(st.just("wait"), st.sampled_from([1, 240, 700, 740])),
    # To a millisecond before, or the very moment, a reward's window ends (when that is ahead).
    st.tuples(st.just("edge"), st.integers(0, 20), st.sampled_from([-1, 0])),
    st.tuples(st.just("sweep"), st.integers(1, 3)),
)


async def _run(operations: list[tuple[Any, ...]]) -> None:
    slug = f"r{next(_slugs)}"
    # The sweep sees every game's rewards: the examples before this one's go first.
    await Grant.objects.all().adelete()
    _, board, key = await sync_to_async(competing_game)(slug)
    client, reference, now, periods = AsyncClient(), Reference(), T0, 0
    done: list[str] = []  # what ran, for the failure's message

    async def check_lists() -> None:
        for player in PLAYERS:
            response = await client.get(f"/api/v1/games/{slug}/players/{player}/rewards", headers=auth(key))
            listed = [(r["period_id"], r["status"]) for r in response.json()["rewards"]]
            assert listed == reference.listing(player, now), (done, player)

    for op in operations:
        done.append(f"{now.isoformat()} {op}")
        if op[0] == "wait":
            now += dt.timedelta(hours=op[1])
            continue
        if op[0] == "edge":
            if reference.grants:
                edge = reference.grants[op[1] % len(reference.grants)].expires_at + dt.timedelta(milliseconds=op[2])
                now = max(now, edge)
            continue
        with clock_at(now):
            if op[0] in ("grant", "regrant"):
                period = f"p{periods}" if op[0] == "grant" or not periods else f"p{op[1] % periods}"
                periods += op[0] == "grant" or not periods
                specs = [GrantSpec(p, 1, {"coins": 1}) for p in dict.fromkeys(op[-1])]
                made = await sync_to_async(granted)(board, *specs, period_id=period, now=now)
                assert made == reference.grant(op[-1], period, now), done
            elif op[0] == "claim" and reference.grants:
                kept = reference.grants[op[1] % len(reference.grants)]
                grant = await Grant.objects.aget(board=board, player_id=kept.player, period_id=kept.period)
                response = await client.post(f"/api/v1/games/{slug}/rewards/{grant.grant_id}/claim", headers=auth(key))
                body = response.json()
                got = (
                    response.status_code,
                    body["claimed_at"] if response.status_code == 200 else body["error"]["code"],
                )
                assert got == reference.claim(kept, now), done
            elif op[0] == "sweep":
                swept = await sync_to_async(rewards.grants_expire)(now=now, limit=op[1])
                assert swept == reference.sweep(now, op[1]), done
            await check_lists()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(operations=st.lists(operation, min_size=5, max_size=25))
def test_it_grants_claims_and_expires_rewards_as_the_reference_does(operations):
    async def example() -> None:
        try:
            await _run(operations)
        finally:
            await close_redis()

    async_to_sync(example)()
