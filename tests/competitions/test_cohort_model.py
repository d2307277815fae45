"""Model-based: random joins, scores, splits and moves of the clock through the real API on a
board with cohorts, against a small reference of the placement rules (issue 22): first come,
balanced (held, split, late comers to the smallest cohort with room), with an entry window or
the default hold, open or join-only, a field's size. After every operation each cohort's size
and its standings (ranks within the cohort, shared ties) must be the reference's, across the
split time and into the next week.

Each hypothesis example is one fresh game driven by ``async_to_sync`` on a loop of its own, as
tests/competitions/test_entry_model.py does.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.test import AsyncClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from competitions.services import cohorts as cohort_services
from core import apikeys
from core import services as core_services
from core.models import ApiKey
from core.redis import close_redis
from tests.conftest import auth, clock_at

pytestmark = pytest.mark.django_db(transaction=True)

# Monday 2026-03-02 00:10 UTC: the week 2026-W10 has just begun, its default hold (to 01:00) too.
START = dt.datetime(2026, 3, 2, 0, 10, tzinfo=dt.UTC)
PLAYERS = ["ada", "bob", "cy", "dee", "eve", "fay", "gus"]
_slugs = itertools.count()


def _monday(now: dt.datetime) -> dt.datetime:
    return (now - dt.timedelta(days=now.weekday())).replace(hour=0, minute=0, second=0, microsecond=0)


@dataclass
class Reference:
    """Cohorts of one board, period by period (the week of ``now``), as the issue states them."""

    entry: str
    max_entrants: int | None
    window_secs: int | None
    size: int
    balanced: bool
    week: tuple[int, int] = (0, 0)
    entrants: list[str] = field(default_factory=list)  # in entry order
    entered: dict[str, dt.datetime] = field(default_factory=dict)
    cohorts: dict[str, int] = field(default_factory=dict)  # player -> cohort number
    sizes: list[int] = field(default_factory=list)  # entrants per cohort, cohort 1 first
    split: bool = False
    best: dict[str, int] = field(default_factory=dict)

    def _period(self, now: dt.datetime) -> None:
        week = now.isocalendar()[:2]
        if week != self.week:
            self.week = (week[0], week[1])
            self.entrants, self.cohorts, self.sizes, self.split, self.best = [], {}, [], False, {}
            self.entered = {}

    def _formed(self, now: dt.datetime) -> dt.datetime:
        hold = self.window_secs if self.window_secs is not None else 3600
        return _monday(now) + dt.timedelta(seconds=hold)

    def _place(self, player: str, smallest: bool) -> None:
        if smallest:
            room = [(n, i) for i, n in enumerate(self.sizes) if n < self.size]
            index = min(room)[1] if room else len(self.sizes)
        else:
            index = len(self.sizes) - 1 if self.sizes and self.sizes[-1] < self.size else len(self.sizes)
        if index == len(self.sizes):
            self.sizes.append(0)
        self.sizes[index] += 1
        self.cohorts[player] = index + 1

    def _enter(self, player: str, now: dt.datetime) -> str | None:
        if player in self.entrants:
            return None
        if self.window_secs is not None and now >= _monday(now) + dt.timedelta(seconds=self.window_secs):
            return "entry_closed"
        if self.max_entrants is not None and len(self.entrants) >= self.max_entrants:
            return "board_full"
        self.entrants.append(player)
        self.entered[player] = now
        if not self.balanced:
            self._place(player, smallest=False)
        elif self.split:
            self._place(player, smallest=True)
        elif now >= self._formed(now) and len(self.entrants) == 1:
            self.split = True  # nobody held: the cohorts open at once
            self._place(player, smallest=True)
        return None

    def join(self, player: str, now: dt.datetime) -> tuple[int, str]:
        self._period(now)
        before = player in self.entrants
        refused = self._enter(player, now)
        return (409, refused) if refused else (200 if before else 201, "")

    def score(self, player: str, value: int, now: dt.datetime) -> tuple[int, str]:
        self._period(now)
        if player not in self.entrants and self.entry == "join":
            return 409, "not_entered"
        refused = self._enter(player, now)
        if refused:
            return 409, refused
        self.best[player] = max(value, self.best.get(player, value))
        return 200, ""

    def run_split(self, now: dt.datetime) -> None:
        """The beat's split: the held entrants in entry order (in one millisecond: by id), in
        ceil(n/N) even cohorts."""
        self._period(now)
        if not self.balanced or self.split or now < self._formed(now) or not self.entrants:
            return
        count = -(-len(self.entrants) // self.size)
        base, extra = divmod(len(self.entrants), count)
        self.sizes = [base + 1] * extra + [base] * (count - extra)
        players = iter(sorted(self.entrants, key=lambda p: (self.entered[p], p)))
        for number, n in enumerate(self.sizes, 1):
            for _ in range(n):
                self.cohorts[next(players)] = number
        self.split = True

    def view(self, now: dt.datetime) -> dict[str, Any]:
        self._period(now)
        pages = {}
        for number in range(1, len(self.sizes) + 1):
            scored = sorted(
                ((self.best[p], p) for p, c in self.cohorts.items() if c == number and p in self.best),
                key=lambda row: (-row[0], row[1]),
            )
            pages[str(number)] = [(1 + sum(1 for v, _ in scored if v > value), p, value) for value, p in scored]
        sizes = [(str(i), n) for i, n in enumerate(self.sizes, 1)]
        return {"sizes": sizes, "held": len(self.entrants) - len(self.cohorts), "pages": pages}


rules = st.fixed_dictionaries(
    {
        "entry": st.sampled_from(["open", "join"]),
        "max_entrants": st.one_of(st.none(), st.integers(3, 6)),
        # Entry closes on Monday between 00:30 and 03:00, or never (balanced: the hour's hold).
        "entry_window_secs": st.one_of(st.none(), st.integers(1800, 3 * 3600)),
        "cohort_size": st.integers(2, 3),
        "cohort_fill": st.sampled_from(["first_come", "balanced"]),
    }
)
_join = st.tuples(st.just("join"), st.sampled_from(PLAYERS))
operation = st.one_of(
    _join,
    _join,  # twice as likely: cohorts fill, and late comers meet uneven ones
    st.tuples(st.just("score"), st.sampled_from(PLAYERS), st.integers(0, 5)),
    st.tuples(st.just("split")),
    # Minutes: within the hold, past it, or into the next week.
    st.tuples(st.just("wait"), st.sampled_from([10, 40, 90, 7 * 24 * 60])),
)


async def _run(chosen: dict[str, Any], operations: list[tuple[Any, ...]]) -> None:
    slug = f"c{next(_slugs)}"
    game = await sync_to_async(core_services.game_create)(slug=slug, name="C", max_submissions_per_minute=0)
    _, manage = await sync_to_async(apikeys.api_key_create)(game=game, name="ops", scope=ApiKey.Scope.MANAGE)
    _, submit = await sync_to_async(apikeys.api_key_create)(game=game, name="server")
    client, api = AsyncClient(), f"/api/v1/games/{slug}/leaderboards/cup"
    reference = Reference(
        chosen["entry"],
        chosen["max_entrants"],
        chosen["entry_window_secs"],
        chosen["cohort_size"],
        chosen["cohort_fill"] == "balanced",
    )
    now = START

    async def send(path: str, key: str, body: dict[str, Any], method: str = "post") -> tuple[int, str]:
        response = await getattr(client, method)(
            f"{api}{path}", json.dumps(body), content_type="application/json", headers=auth(key)
        )
        answer = response.json()
        return response.status_code, answer["error"]["code"] if "error" in answer else ""

    async def view() -> dict[str, Any]:
        listed = (await client.get(f"{api}/weekly/cohorts?limit=100")).json()
        pages = {}
        for c in listed["cohorts"]:
            page = (await client.get(f"{api}/weekly/cohorts/{c['cohort']}")).json()
            pages[c["cohort"]] = [(e["rank"], e["player_id"], e["score"]) for e in page["entries"]]
        return {"sizes": [(c["cohort"], c["size"]) for c in listed["cohorts"]], "held": listed["held"], "pages": pages}

    with clock_at(now):
        board = {"name": "Cup", "mode": "best", "order": "desc", "windows": ["weekly"], **chosen}
        assert (await send("", manage, board, method="put"))[0] == 200
    done: list[str] = []  # what ran, for the failure's message
    for op in operations:
        done.append(f"{now.isoformat()} {op}")
        if op[0] == "wait":
            now += dt.timedelta(minutes=op[1])
            continue
        with clock_at(now):
            if op[0] == "join":
                got, want = await send("/entries", submit, {"player_id": op[1]}), reference.join(op[1], now)
                assert got == want, (done, got, want)
            elif op[0] == "score":
                got = await send("/scores", submit, {"player_id": op[1], "score": op[2]})
                want = reference.score(op[1], op[2], now)
                assert got == want, (done, got, want)
            else:
                await cohort_services._split_due()
                reference.run_split(now)
            assert await view() == reference.view(now), done


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(chosen=rules, operations=st.lists(operation, min_size=5, max_size=30))
def test_it_places_and_ranks_in_cohorts_as_the_reference_does(chosen, operations):
    async def example() -> None:
        try:
            await _run(chosen, operations)
        finally:
            await close_redis()

    async_to_sync(example)()
