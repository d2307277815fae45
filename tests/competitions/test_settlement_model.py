"""Model-based: random leagues (three tiers, lines by count or percentage, min_scores, reward
tables by rank range or top percentage, per tier or not) played through the API for three
weeks, each settled by its close job on a moving clock. After every settlement, each entrant's
cohort, rank in it, tier move, tier after and reward must be what a small reference says, ties at
the lines included; and the next week's cohorts are formed within the tiers it gave.

The reference is written from the issue's rules, apart from core/competition_rules.py.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import pytest
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from archive import services as archive_services
from core import apikeys
from core import services as core_services
from core.models import ApiKey
from core.redis import close_redis, run_sync
from tests.conftest import auth, clock_at

pytestmark = pytest.mark.django_db(transaction=True)

MONDAY = dt.datetime(2026, 3, 2, 0, 0, tzinfo=dt.UTC)
WEEKS = ["2026-W10", "2026-W11", "2026-W12"]
GRACE = dt.timedelta(seconds=121)
SLUGS = ["bronze", "silver", "gold"]
PLAYERS = [f"p{i}" for i in range(9)]
_games = itertools.count()


def _line(text: str | None, size: int) -> int:
    if text is None:
        return 0
    if text.endswith("%"):
        return math.floor(size * Fraction(text[:-1]) / 100)
    return min(int(text), size)


@dataclass
class Reference:
    size: int
    lines: list[tuple[str | None, str | None]]  # (promote, demote) per tier, bottom first
    start: str
    min_scores: int
    rewards: list[dict[str, Any]]
    tiers: dict[str, str] = field(default_factory=dict)

    def reward(self, tier: str, rank: int | None, size: int) -> dict[str, Any] | None:
        if rank is None:
            return None
        for rule in self.rewards:
            if rule.get("tier") not in (None, tier):
                continue
            if "top_percent" in rule:
                if rank * 100 <= size * Fraction(str(rule["top_percent"])):
                    return rule["reward"]
            elif rule["from_rank"] <= rank <= rule.get("to_rank", rule["from_rank"]):
                return rule["reward"]
        return None

    def week(self, joined: list[str], best: dict[str, int], tries: dict[str, int]) -> list[tuple[Any, ...]]:
        """Every entrant's (player, cohort, rank, score, tier, move, tier after, reward), by cohort then rank."""
        cohorts: dict[tuple[int, int], list[str]] = {}
        counts: dict[int, int] = {}
        for player in joined:  # first come within each tier
            place = SLUGS.index(self.tiers.get(player, self.start))
            number = counts.get(place, 0)
            if not number or len(cohorts[(place, number)]) >= self.size:
                number = counts[place] = number + 1
                cohorts[(place, number)] = []
            cohorts[(place, number)].append(player)
        rows = []
        for (place, number), members in sorted(cohorts.items()):
            rows += self._cohort(place, f"{SLUGS[place]}-{number}", members, best, tries)
        for row in rows:
            self.tiers[row[0]] = row[6]
        return rows

    def _cohort(
        self, place: int, name: str, members: list[str], best: dict[str, int], tries: dict[str, int]
    ) -> list[tuple[Any, ...]]:
        size, tier = len(members), SLUGS[place]
        promote = 0 if place == 2 else _line(self.lines[place][0], size)
        demote = 0 if place == 0 else _line(self.lines[place][1], size)

        def rank(p: str) -> int | None:
            return None if p not in best else 1 + sum(1 for q in members if best.get(q, -1) > best[p])

        rows = []
        for p in members:
            r = rank(p)
            if tries.get(p, 0) < self.min_scores:
                move = 0 if place == 0 else -1
            elif r is not None and r <= promote:
                move = 1
            elif demote and (r is None or r > size - demote):
                move = -1
            else:
                move = 0
            rows.append((p, name, r, best.get(p), tier, move, SLUGS[place + move], self.reward(tier, r, size)))
        return sorted(rows, key=lambda row: (row[2] is None, row[2] or 0, row[0]))


line = st.one_of(st.none(), st.sampled_from(["1", "2", "34%", "50%"]))
rule = st.one_of(
    st.fixed_dictionaries({"from_rank": st.integers(1, 2), "reward": st.just({"coins": 5})}),
    st.fixed_dictionaries(
        {"tier": st.sampled_from(SLUGS), "from_rank": st.just(1), "to_rank": st.just(3), "reward": st.just({"gem": 1})}
    ),
    st.fixed_dictionaries({"top_percent": st.sampled_from([34, 50, 100]), "reward": st.just({"badge": "top"})}),
)
leagues = st.fixed_dictionaries(
    {
        "cohort_size": st.integers(2, 4),
        "lines": st.tuples(line, line, line),
        "start": st.sampled_from(SLUGS),
        "min_scores": st.integers(0, 1),
        "rewards": st.lists(rule, max_size=3),
    }
)
# A week: who joins (in that order) and their scores (several: best counts; none: joined only).
week = st.lists(st.tuples(st.sampled_from(PLAYERS), st.lists(st.integers(0, 3), max_size=2)), min_size=1, max_size=9)


def _send(method: str, path: str, key: str, body: Any = None) -> Any:
    if method == "get":
        response = Client().get(path, headers=auth(key))
    else:
        response = getattr(Client(), method)(path, json.dumps(body), content_type="application/json", headers=auth(key))
    assert response.status_code in (200, 201), response.content
    return response.json()


def _tiers(lines: tuple[str | None, ...]) -> list[dict[str, Any]]:
    tiers = []
    for i, slug in enumerate(SLUGS):
        tier: dict[str, Any] = {"slug": slug}
        if i < 2 and lines[i] is not None:
            tier["promote"] = lines[i]
        if i > 0 and lines[i] is not None:
            tier["demote"] = lines[i]
        tiers.append(tier)
    return tiers


def _run(chosen: dict[str, Any], weeks: list[list[tuple[str, list[int]]]]) -> None:
    slug = f"s{next(_games)}"
    game = core_services.game_create(slug=slug, name="S", max_submissions_per_minute=0)
    _, manage = apikeys.api_key_create(game=game, name="ops", scope=ApiKey.Scope.MANAGE)
    _, submit = apikeys.api_key_create(game=game, name="server")
    api = f"/api/v1/games/{slug}/leaderboards/league"
    lines = [(chosen["lines"][i] if i < 2 else None, chosen["lines"][i] if i > 0 else None) for i in range(3)]
    reference = Reference(chosen["cohort_size"], lines, chosen["start"], chosen["min_scores"], chosen["rewards"])
    board = {
        "mode": "best",
        "order": "desc",
        "windows": ["weekly"],
        "entry": "join",
        "cohort_size": chosen["cohort_size"],
        "cohort_by": "tier",
        "tiers": _tiers(chosen["lines"]),
        "start_tier": chosen["start"],
        "min_scores": chosen["min_scores"],
        "rewards": chosen["rewards"],
    }
    with clock_at(MONDAY + dt.timedelta(hours=1)):
        _send("put", api, manage, board)
    for n, plays in enumerate(weeks):
        monday = MONDAY + dt.timedelta(days=7 * n)
        joined: list[str] = []
        best: dict[str, int] = {}
        tries: dict[str, int] = {}
        with clock_at(monday + dt.timedelta(hours=1)):
            for player, scores in plays:
                if player not in joined:
                    joined.append(player)
                    _send("post", f"{api}/entries", submit, {"player_id": player})
                for value in scores:
                    _send("post", f"{api}/scores", submit, {"player_id": player, "score": value})
                    best[player] = max(value, best.get(player, value))
                    tries[player] = tries.get(player, 0) + 1
        want = reference.week(joined, best, tries)
        with clock_at(monday + dt.timedelta(days=7) + GRACE):
            assert archive_services.close_jobs_run() >= 1, (n, chosen, weeks)
            got = _send("get", f"{api}/weekly/{WEEKS[n]}/settlement?limit=100", submit)
        rows = [
            (e["player_id"], e["cohort"], e["rank"], e["score"], e["tier"], e["move"], e["tier_after"], e["reward"])
            for e in got["entries"]
        ]
        assert rows == want, (n, chosen, plays)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(chosen=leagues, weeks=st.lists(week, min_size=3, max_size=3))
def test_it_settles_each_week_of_a_league_as_the_reference_does(chosen, weeks):
    try:
        _run(chosen, weeks)
    finally:
        run_sync(close_redis)
