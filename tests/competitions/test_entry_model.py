"""Model-based: random joins, scores, grants and moves of the clock through the real API on a
competing board, against a small reference of the entry rules (issue 22). Every answer's status
and code, and the whole board after each operation, must be the reference's, across the entry
window's close and the week's end.

Each hypothesis example is one fresh game (Redis and the database are flushed per test, not per
example) driven by ``async_to_sync`` on a loop of its own, as tests/games/test_model_based.py does.
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

from core import apikeys
from core import services as core_services
from core.models import ApiKey
from core.redis import close_redis
from tests.conftest import auth, clock_at

pytestmark = pytest.mark.django_db(transaction=True)

# Monday 2026-03-02 06:00 UTC: the week 2026-W10 has just begun.
START = dt.datetime(2026, 3, 2, 6, 0, tzinfo=dt.UTC)
PLAYERS = ["ada", "bob", "cy", "dee", "eve"]
_slugs = itertools.count()


@dataclass
class Reference:
    """The entry rules of one board, period by period (the week of ``now``)."""

    entry: str
    max_entrants: int | None
    window_secs: int | None
    max_attempts: int | None
    week: tuple[int, int] = (0, 0)
    entrants: list[str] = field(default_factory=list)
    tries: dict[str, int] = field(default_factory=dict)
    extra: dict[str, int] = field(default_factory=dict)
    best: dict[str, int] = field(default_factory=dict)

    def _period(self, now: dt.datetime) -> None:
        week = now.isocalendar()[:2]
        if week != self.week:
            self.week, self.entrants, self.tries, self.extra, self.best = (week[0], week[1]), [], {}, {}, {}

    def _closed(self, now: dt.datetime) -> bool:
        monday = (now - dt.timedelta(days=now.weekday())).replace(hour=0, minute=0, second=0, microsecond=0)
        return self.window_secs is not None and now >= monday + dt.timedelta(seconds=self.window_secs)

    def _enter(self, player: str, now: dt.datetime) -> str | None:
        if player in self.entrants:
            return None
        if self._closed(now):
            return "entry_closed"
        if self.max_entrants is not None and len(self.entrants) >= self.max_entrants:
            return "board_full"
        self.entrants.append(player)
        return None

    def join(self, player: str, now: dt.datetime) -> tuple[int, str]:
        self._period(now)
        before = player in self.entrants
        refused = self._enter(player, now)
        return (409, refused) if refused else (200 if before else 201, "")

    def score(self, player: str, value: int, now: dt.datetime) -> tuple[int, str]:
        self._period(now)
        if player not in self.entrants:
            if self.entry == "join":
                return 409, "not_entered"
            if self._closed(now):
                return 409, "entry_closed"
            if self.max_entrants is not None and len(self.entrants) >= self.max_entrants:
                return 409, "board_full"
        allowed = None if self.max_attempts is None else self.max_attempts + self.extra.get(player, 0)
        if allowed is not None and self.tries.get(player, 0) >= allowed:
            return 409, "attempts_exhausted"
        self._enter(player, now)
        self.tries[player] = self.tries.get(player, 0) + 1
        self.best[player] = max(value, self.best.get(player, value))
        return 200, ""

    def grant(self, player: str, add: int, now: dt.datetime) -> tuple[int, str]:
        self._period(now)
        self.extra[player] = self.extra.get(player, 0) + add
        return 200, ""

    def board(self, now: dt.datetime) -> list[tuple[str, int]]:
        self._period(now)
        return sorted(self.best.items(), key=lambda item: (-item[1], item[0]))


rules = st.fixed_dictionaries(
    {
        "entry": st.sampled_from(["open", "join"]),
        "max_entrants": st.one_of(st.none(), st.integers(1, 4)),
        # Entry closes on Monday between 07:00 and Wednesday, or never.
        "entry_window_secs": st.one_of(st.none(), st.integers(7 * 3600, 3 * 86400)),
        "max_attempts": st.one_of(st.none(), st.integers(1, 3)),
    }
)
operation = st.one_of(
    st.tuples(st.just("join"), st.sampled_from(PLAYERS)),
    st.tuples(st.just("score"), st.sampled_from(PLAYERS), st.integers(0, 50)),
    st.tuples(st.just("grant"), st.sampled_from(PLAYERS), st.integers(1, 2)),
    # Hours: within the entry window, past it, or into the next week.
    st.tuples(st.just("wait"), st.sampled_from([1, 20, 60, 170])),
    # To a second before, or the very moment, entry closes this week (when that is still ahead).
    st.tuples(st.just("edge"), st.sampled_from([-1, 0])),
)


async def _run(chosen: dict[str, Any], operations: list[tuple[Any, ...]]) -> None:
    slug = f"m{next(_slugs)}"
    game = await sync_to_async(core_services.game_create)(slug=slug, name="M", max_submissions_per_minute=0)
    _, manage = await sync_to_async(apikeys.api_key_create)(game=game, name="ops", scope=ApiKey.Scope.MANAGE)
    _, submit = await sync_to_async(apikeys.api_key_create)(game=game, name="server")
    client, api = AsyncClient(), f"/api/v1/games/{slug}/leaderboards/cup"
    reference = Reference(chosen["entry"], chosen["max_entrants"], chosen["entry_window_secs"], chosen["max_attempts"])
    now = START

    async def post(path: str, key: str, body: dict[str, Any], method: str = "post") -> tuple[int, str]:
        send = getattr(client, method)
        response = await send(f"{api}{path}", json.dumps(body), content_type="application/json", headers=auth(key))
        answer = response.json()
        return response.status_code, answer["error"]["code"] if "error" in answer else ""

    with clock_at(now):
        settings_ = {
            "name": "Cup",
            "mode": "best",
            "order": "desc",
            "windows": ["weekly"],
            "competition_window": "weekly",
            **chosen,
        }
        assert (await post("", manage, settings_, method="put"))[0] == 200
    done: list[str] = []  # what ran, for the failure's message (note() is not this thread's)
    for op in operations:
        done.append(f"{now.isoformat()} {op}")
        if op[0] == "wait":
            now += dt.timedelta(hours=op[1])
            continue
        if op[0] == "edge":
            monday = (now - dt.timedelta(days=now.weekday())).replace(hour=0, minute=0, second=0, microsecond=0)
            window = chosen["entry_window_secs"]
            edge = None if window is None else monday + dt.timedelta(seconds=window + op[1])
            now = edge if edge is not None and edge > now else now
            continue
        with clock_at(now):
            if op[0] == "join":
                got, want = await post("/entries", submit, {"player_id": op[1]}), reference.join(op[1], now)
            elif op[0] == "score":
                got = await post("/scores", submit, {"player_id": op[1], "score": op[2]})
                want = reference.score(op[1], op[2], now)
            else:
                got = await post(f"/players/{op[1]}/attempts", manage, {"add": op[2]})
                want = reference.grant(op[1], op[2], now)
            assert got == want, (done, got, want)
            response = await client.get(f"{api}/weekly?limit=10")
            board = [(e["player_id"], e["score"]) for e in response.json()["entries"]]
            assert board == reference.board(now), done


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(chosen=rules, operations=st.lists(operation, min_size=5, max_size=30))
def test_it_enters_counts_and_refuses_as_the_reference_does(chosen, operations):
    async def example() -> None:
        try:
            await _run(chosen, operations)
        finally:
            await close_redis()

    async_to_sync(example)()
