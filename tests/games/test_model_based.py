"""Model-based tests: random submissions through the real API, compared with tests/games/reference.py.

How it runs. Each hypothesis example is a list of operations (single POSTs,
batches) for one fresh game. Hypothesis cannot drive an async test body
itself, and the pytest-asyncio loop is not running while a sync test runs,
so each test is sync and runs one example with ``async_to_sync``: a fresh
event loop per example (with its own Redis client, closed at the end),
while the Django ORM calls the API makes come back to the test's thread and
so use the test's database connection. The Redis flush fixture and the
database flush run per test function, not per example, so every example
creates its own game under a new slug instead.

What it checks. After every operation: each submission's response (display
name, score and rank in every period; per item for batches, refusals
included) and the whole all-time board. Every ``DEEP_CHECK_EVERY_OPS``
operations and at the end, on the all-time board: paging with several limits
and offsets (past the end too); the standing and percentile of every player on
the board and of two who are not (404); ``around`` with radius 0, 1, 2 and 5
for the same players; the friends view of random subsets with absent and
repeated ids. The daily board gets the whole page, the standings and one
friends view, and a period id at the calendar's edges must answer 404; at the
end all four boards are compared whole.

Hostile traffic. Mixed into the operations, requests carrying one entry of the
review's bad-input catalogue (tests/bad_inputs.py): a value refused anywhere
(NaN, a lone surrogate, bytes that are no UTF-8, a body past 1 MiB) at any
place of a submission or a batch, a key with a lone surrogate in any object, a
body that is no JSON object, or a bad score, player id, name or metadata in
one item. Each must be answered with its refusal in the error envelope, naming
its field, and change nothing: the model skips it, and the board compared
after it must still equal the model (in a batch, a bad item fails alone and
the others apply). A key written twice, a catalogue value first, must be
answered as if only its last copy were sent.

Cost. A request through the full Django stack takes a few milliseconds, so
the lookups follow the players on the board rather than the whole pool: a
small board, as while shrinking, makes a cheap run, and a failure shrinks in
a minute or two rather than hitting hypothesis' five-minute shrink limit.

If the UTC day turns during an example, the daily board restarts under a new
id while the model keeps one board; that example then stops early and passes.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.test import AsyncClient
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from core import apikeys, config
from core.clock import now as clock_now
from core.models import Game
from core.redis import close_redis
from games import services
from tests import bad_inputs as catalogue
from tests.bad_inputs import Bad, Refusal
from tests.conftest import auth, clock_at
from tests.games.reference import (
    CALENDAR_EDGE_IDS,
    MAX_SAFE_SCORE,
    PERIODS,
    ReferenceLeaderboard,
    Rejected,
    entries_json,
    submitted_json,
)

pytestmark = pytest.mark.django_db(transaction=True)


def on_main(item: Any) -> Any:
    """A batch item for the game's board 'main' (items that are not objects stay as they are)."""
    return {**item, "leaderboard": "main"} if isinstance(item, dict) else item


# Ties and byte order matter: '-' < '.' < digits < ':' < upper case < '_' < lower case.
POOL: tuple[str, ...] = ("a", "b", "B", "a1", "z", "x.y", "p:1", "A_2", "0", "-q", "_u", "Z9")
NEVER_SUBMITS = "ghost"
NAMES: tuple[str | None, ...] = (None, "", "Ann", "Bo", "Zoë 🎮", "n" * 64)
OMIT = "<omit>"  # a display_name choice meaning: leave the key out of the JSON
RADII: tuple[int, ...] = (0, 1, 2, 5)
PAGE_LIMITS: tuple[int, ...] = (1, 3, 200)
# Items each of which the API must refuse as 'invalid' on its own (one bad batch item fails alone).
INVALID_ITEMS: tuple[dict[str, Any], ...] = (
    {"player_id": "bad id", "score": 1},
    {"player_id": "a", "score": "7"},
    {"player_id": "a", "score": MAX_SAFE_SCORE + 1},
    {"player_id": "a", "score": 1.5},
    {"player_id": "a", "score": True},
    {"player_id": "a", "score": 1, "display_name": "n" * 65},
    {"player_id": "a", "score": 1, "colour": "red"},
    {"score": 1},
)
EXTREMES: tuple[int, ...] = (MAX_SAFE_SCORE, -MAX_SAFE_SCORE, MAX_SAFE_SCORE - 1, -(MAX_SAFE_SCORE - 1))
# In increment games, large amounts whose sums reach past 2^53-1 (refused as score_overflow).
LARGE_INCREMENTS: tuple[int, ...] = (MAX_SAFE_SCORE, -MAX_SAFE_SCORE, 2**52, -(2**52))

MAX_OPS_PER_EXAMPLE = 60
GO_ON_CHOICES = 60
INVALID_ITEM_ONE_IN = 12
LARGE_SCORE_ONE_IN = 8
MAX_BATCH_ITEMS = 6
BATCH_ONE_IN = 4
HOSTILE_ONE_IN = 5
# The catalogue's values for one field of an item: refused for that item alone.
FIELD_BADS: dict[str, tuple[Bad, ...]] = {
    "player_id": catalogue.PLAYER_IDS,
    "score": catalogue.SCORES,
    "display_name": catalogue.NAMES,
    "metadata": catalogue.METADATA,
}
# Values refused for the whole request, wherever they stand.
WHOLE_BADS: tuple[Bad, ...] = catalogue.ANYWHERE + catalogue.KEYS + catalogue.BODIES
# What the first copy of a key written twice may be: any value the parser reads (the last copy wins).
SHADOWS: tuple[Bad, ...] = tuple(
    b for b in (*catalogue.ANYWHERE, *catalogue.SCORES, *catalogue.PLAYER_IDS) if b.refusal == catalogue.INVALID
)
DEEP_CHECK_EVERY_OPS = 20
EXAMPLES_PER_COMBINATION = 6
FRIENDS_QUERIES_PER_CHECK = 3
EMPTY_IDS_SHARE = 0.3
API_REQUESTS_PER_MINUTE = 10**7

_slugs = itertools.count()


class PeriodRolledOver(Exception):
    """The current daily board changed id mid-example (a UTC midnight passed)."""


# --------------------------------------------------------------------------- operations


@dataclass(frozen=True)
class Submit:
    item: dict[str, Any]


@dataclass(frozen=True)
class Batch:
    items: tuple[dict[str, Any], ...]


@dataclass(frozen=True)
class Hostile:
    """A submission (or a batch) carrying one entry of the bad-input catalogue, as raw JSON text."""

    what: str
    raw: bytes = dataclasses.field(repr=False)
    batch: bool
    refusal: Refusal
    field: str | None
    # A batch whose item ``refused_item`` is refused alone while the others apply; None: the
    # whole request is refused.
    items: tuple[dict[str, Any], ...] = ()
    refused_item: int | None = None


@dataclass(frozen=True)
class Shadowed:
    """A submission with one key written twice, a catalogue value first: answered as ``item``."""

    item: dict[str, Any]
    raw: bytes = dataclasses.field(repr=False)


Operation = Submit | Batch | Hostile | Shadowed


def _item(player_id: str, score: int, name: str | None) -> dict[str, Any]:
    item: dict[str, Any] = {"player_id": player_id, "score": score}
    if name != OMIT:
        item["display_name"] = name
    return item


def _rarely(draw: st.DrawFn, one_in: int) -> bool:
    # True for the largest value, so that shrinking (towards 0) leans to the common case.
    return draw(st.integers(0, one_in - 1)) == one_in - 1


@st.composite
def _items(draw: st.DrawFn, mode: str) -> dict[str, Any]:
    if _rarely(draw, INVALID_ITEM_ONE_IN):
        return draw(st.sampled_from(INVALID_ITEMS))
    if _rarely(draw, LARGE_SCORE_ONE_IN):
        score = draw(st.sampled_from(LARGE_INCREMENTS if mode == "increment" else EXTREMES))
    else:
        score = draw(st.integers(-5, 5))
    return _item(draw(st.sampled_from(POOL)), score, draw(st.sampled_from((OMIT, *NAMES))))


@st.composite
def _valid_item(draw: st.DrawFn) -> dict[str, Any]:
    return _item(draw(st.sampled_from(POOL)), draw(st.integers(-5, 5)), draw(st.sampled_from((OMIT, *NAMES))))


@st.composite
def _bad_in_an_item(draw: st.DrawFn, mode: str) -> Hostile:
    """A bad value in one field of an otherwise valid item, alone or among a batch's items."""
    name = draw(st.sampled_from(sorted(FIELD_BADS)))
    bad = draw(st.sampled_from(FIELD_BADS[name]))
    what = f"{bad.name} as {name}"
    if not _rarely(draw, 2):
        raw, named = catalogue.spliced(draw(_valid_item()), (name,), bad)
        return Hostile(what, raw, False, bad.refusal, named)
    items = draw(st.lists(_items(mode), min_size=1, max_size=MAX_BATCH_ITEMS))
    target = draw(st.integers(0, len(items) - 1))
    items[target] = draw(_valid_item())
    raw, named = catalogue.spliced({"scores": [on_main(i) for i in items]}, ("scores", target, name), bad)
    return Hostile(what, raw, True, bad.refusal, named, tuple(items), target)


@st.composite
def _bad_anywhere(draw: st.DrawFn, mode: str) -> Hostile:
    """A value refused wherever it stands, at any place of a body; a key in any of its objects;
    or a body that is no JSON object."""
    batch = _rarely(draw, 2)
    items = draw(st.lists(_items(mode), min_size=1, max_size=MAX_BATCH_ITEMS if batch else 1))
    body: Any = {"scores": [on_main(i) for i in items]} if batch else items[0]
    bad = draw(st.sampled_from(WHOLE_BADS))
    if bad in catalogue.BODIES:
        place: catalogue.Path = ()
    else:
        place = draw(st.sampled_from(list(catalogue.objects(body) if bad.key else catalogue.places(body))))
    raw, named = catalogue.spliced(body, place, bad)
    return Hostile(f"{bad.name} at {catalogue.field_name(place) or 'the root'}", raw, batch, bad.refusal, named)


@st.composite
def _shadowed(draw: st.DrawFn) -> Shadowed:
    item = draw(_valid_item())
    first = draw(st.sampled_from(SHADOWS))
    return Shadowed(item, catalogue.shadowed(item, draw(st.sampled_from(sorted(item))), first.raw))


@st.composite
def _operation(draw: st.DrawFn, mode: str) -> Operation:
    items = _items(mode)
    if _rarely(draw, HOSTILE_ONE_IN):
        return draw(st.one_of(_bad_anywhere(mode), _bad_in_an_item(mode), _shadowed()))
    if _rarely(draw, BATCH_ONE_IN):
        return Batch(tuple(draw(st.lists(items, min_size=1, max_size=MAX_BATCH_ITEMS))))
    return Submit(draw(items))


@st.composite
def _next_operation(draw: st.DrawFn, mode: str) -> Operation | None:
    # The "go on?" choice and the operation form one span, so the shrinker deletes them together.
    if draw(st.integers(0, GO_ON_CHOICES)) == 0:
        return None
    return draw(_operation(mode))


@st.composite
def _operations(draw: st.DrawFn, mode: str) -> list[Operation]:
    # st.lists averages a handful of elements; stopping on a rare 0 averages about half the cap.
    drawn = [draw(_operation(mode))]
    while len(drawn) < MAX_OPS_PER_EXAMPLE and (following := draw(_next_operation(mode))) is not None:
        drawn.append(following)
    return drawn


# --------------------------------------------------------------------------- the run


@dataclass
class Run:
    client: AsyncClient
    slug: str
    raw_key: str
    model: ReferenceLeaderboard
    period_ids: dict[str, str]
    rng: random.Random

    def url(self, tail: str) -> str:
        return f"/api/v1/games/{self.slug}/{tail}"

    async def get(self, tail: str, **params: Any) -> Any:
        response = await self.client.get(self.url(tail), params)
        return response.status_code, response.json()

    async def post(self, tail: str, body: dict[str, Any] | bytes) -> Any:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        response = await self.client.post(
            self.url(tail), raw, content_type="application/json", headers=auth(self.raw_key)
        )
        return response.status_code, response.json()

    def same_period(self, period: str, period_id: str) -> None:
        if period_id != self.period_ids[period]:
            raise PeriodRolledOver(f"{period}: {self.period_ids[period]} -> {period_id}")

    def expected(self, item: dict[str, Any]) -> dict[str, Any]:
        """Apply ``item`` to the model; the body the API should answer (or the error)."""
        try:
            return submitted_json(self.model.submit_item(item), self.period_ids)
        except Rejected as refusal:
            return {"error": refusal.code}

    def compare_submission(self, where: str, body: dict[str, Any], expected: dict[str, Any]) -> None:
        for period, standing in body.get("periods", {}).items():
            self.same_period(period, standing["period_id"])
        if "error" in expected:
            assert body.get("error", {}).get("code") == expected["error"], f"{where}: expected {expected}, got {body}"
        else:
            assert body == expected, f"{where}: the response differs from the reference"

    async def apply(self, index: int, operation: Operation) -> None:
        if isinstance(operation, Hostile):
            await self.apply_hostile(index, operation)
            return
        if isinstance(operation, Submit | Shadowed):
            where = f"operation {index}, POST scores {operation}"
            sent = operation.raw if isinstance(operation, Shadowed) else operation.item
            status, body = await self.post("leaderboards/main/scores", sent)
            expected = self.expected(operation.item)
            assert status == (422 if "error" in expected else 200), f"{where}: expected {expected}, got {body}"
            self.compare_submission(where, body, expected)
            return
        status, body = await self.post("scores/batch", {"scores": [on_main(i) for i in operation.items]})
        assert status == 200, f"operation {index}, POST scores/batch: {status} {body}"
        assert len(body["results"]) == len(operation.items), body
        for position, (item, result) in enumerate(zip(operation.items, body["results"], strict=True)):
            where = f"operation {index}, POST scores/batch, item {position} {item}"
            self.compare_submission(where, result, self.expected(item))

    async def apply_hostile(self, index: int, operation: Hostile) -> None:
        """Its refusal, in the envelope; in a batch with a bad item, the others apply as the model says."""
        where = f"operation {index}, {operation}"
        status, body = await self.post("scores/batch" if operation.batch else "leaderboards/main/scores", operation.raw)
        refusal = (operation.refusal.code, operation.field)
        if operation.refused_item is None:
            assert (status, catalogue.error_of(body)) == (operation.refusal.status, refusal), (
                f"{where}: {status} {body}"
            )
            return
        assert status == 200 and len(body["results"]) == len(operation.items), f"{where}: {status} {body}"
        for position, (item, result) in enumerate(zip(operation.items, body["results"], strict=True)):
            if position == operation.refused_item:
                assert catalogue.error_of(result) == refusal, f"{where}: item {position}: {result}"
            else:
                self.compare_submission(f"{where}, item {position} {item}", result, self.expected(item))

    async def board(self, period: str, **params: Any) -> dict[str, Any]:
        status, body = await self.get(f"leaderboards/main/{period}", **params)
        assert status == 200, f"GET leaderboards/{period} {params}: {status} {body}"
        self.same_period(period, body["period_id"])
        return body

    async def check_board(self, period: str) -> None:
        body = await self.board(period, limit=200)
        expected = entries_json(self.model.ranked(period))
        assert (body["total"], body["entries"]) == (len(expected), expected), f"the whole {period} board differs"

    async def check_paging(self, period: str, limits: tuple[int, ...]) -> None:
        total = self.model.total(period)
        limits = (*limits, self.rng.randint(1, 10))
        for limit in limits:
            for offset in range(0, total + limit, limit):
                body = await self.board(period, offset=offset, limit=limit)
                expected = entries_json(self.model.page(period, offset, limit))
                assert (body["total"], body["entries"]) == (total, expected), f"{period} page {offset=} {limit=}"
        for offset in (total, total + 1, total + 1000, self.rng.randint(0, total + 2)):
            limit = self.rng.choice(limits)
            body = await self.board(period, offset=offset, limit=limit)
            expected = entries_json(self.model.page(period, offset, limit))
            assert (body["total"], body["entries"]) == (total, expected), f"{period} page {offset=} {limit=}"

    def players_to_look_up(self, period: str) -> tuple[str, ...]:
        """Everyone on the board and two who are not: a small board (as when shrinking) stays cheap."""
        present = [e.player_id for e in self.model.ranked(period)]
        absent = [p for p in POOL if p not in present]
        return (*present, *self.rng.sample(absent, min(1, len(absent))), NEVER_SUBMITS)

    async def check_standings(self, period: str, player_ids: tuple[str, ...]) -> None:
        for player_id in player_ids:
            status, body = await self.get(f"leaderboards/main/{period}/players/{player_id}")
            standing = self.model.standing(period, player_id)
            where = f"{player_id!r}'s {period} standing"
            if standing is None:
                assert (status, body.get("error", {}).get("code")) == (404, "not_found"), f"{where}: {body}"
            else:
                assert (status, body) == (200, standing.as_json()), f"{where} differs"

    async def check_around(self, period: str, player_ids: tuple[str, ...]) -> None:
        for player_id in player_ids:
            for radius in RADII:
                status, body = await self.get(f"leaderboards/main/{period}/players/{player_id}/around", radius=radius)
                window = self.model.around(period, player_id, radius)
                where = f"{period} board around {player_id!r}, {radius=}"
                if window is None:
                    assert (status, body.get("error", {}).get("code")) == (404, "not_found"), f"{where}: {body}"
                    continue
                assert status == 200, f"{where}: {status} {body}"
                self.same_period(period, body["period_id"])
                expected = (self.model.total(period), entries_json(window))
                assert (body["total"], body["entries"]) == expected, f"{where} differs"

    async def check_friends(self, period: str, queries: int) -> None:
        for _ in range(queries):
            ids = self.rng.sample((*POOL, NEVER_SUBMITS), self.rng.randint(1, 6))
            ids += self.rng.sample(ids, self.rng.randint(0, 1))  # sometimes a repeat
            query = ",".join(ids)
            if self.rng.random() < EMPTY_IDS_SHARE:
                query = "," + query.replace(",", ",,", 1) + ","  # empty items are skipped
            status, body = await self.get(f"leaderboards/main/{period}/players", ids=query)
            where = f"{period} friends view of {ids}"
            assert status == 200, f"{where}: {status} {body}"
            self.same_period(period, body["period_id"])
            entries, missing = self.model.friends(period, ids)
            expected = (self.model.total(period), entries_json(entries), missing)
            assert (body["total"], body["entries"], body["missing"]) == expected, f"{where} differs"

    async def deep_check(self) -> None:
        players = self.players_to_look_up("all-time")
        await self.check_paging("all-time", PAGE_LIMITS)
        await self.check_standings("all-time", players)
        await self.check_around("all-time", players)
        await self.check_friends("all-time", FRIENDS_QUERIES_PER_CHECK)
        # The daily board holds the same entries through the same scripts: a lighter look.
        await self.check_board("daily")
        await self.check_standings("daily", self.players_to_look_up("daily"))
        await self.check_friends("daily", 1)
        await self.check_calendar_edges()

    async def check_calendar_edges(self) -> None:
        """A board at the calendar's edges is none of the model's, whatever the game holds."""
        period_id = self.rng.choice(CALENDAR_EDGE_IDS)
        player = self.rng.choice((*POOL, NEVER_SUBMITS))
        for path in (f"leaderboards/main/{period_id}", f"leaderboards/main/{period_id}/players/{player}"):
            status, body = await self.get(path)
            assert (status, body.get("error", {}).get("code")) == (404, "period_not_found"), f"{path}: {body}"


async def _run_example(slug: str, raw_key: str, mode: str, order: str, operations: list[Operation], seed: int) -> None:
    client = AsyncClient()
    try:
        periods_now = (await client.get(f"/api/v1/games/{slug}/leaderboards/main")).json()["windows"]
        run = Run(
            client=client,
            slug=slug,
            raw_key=raw_key,
            model=ReferenceLeaderboard(mode=mode, order=order, periods=PERIODS),
            period_ids={p["period"]: p["period_id"] for p in periods_now},
            rng=random.Random(seed),
        )
        for index, operation in enumerate(operations, start=1):
            await run.apply(index, operation)
            await run.check_board("all-time")
            if index % DEEP_CHECK_EVERY_OPS == 0:
                await run.deep_check()
        await run.deep_check()
        for period in PERIODS:
            await run.check_board(period)
    finally:
        await close_redis()


def _new_game(make_game: Callable[..., Game], mode: str, order: str) -> tuple[str, str]:
    slug = f"mb-{next(_slugs)}"
    game = make_game(slug, mode=mode, order=order, max_submissions_per_minute=0)
    _, raw_key = apikeys.api_key_create(game=game, name="model", requests_per_minute=API_REQUESTS_PER_MINUTE)
    return slug, raw_key


@pytest.mark.parametrize("order", ["desc", "asc"])
@pytest.mark.parametrize("mode", ["increment", "best", "latest"])
def test_it_agrees_with_the_reference_leaderboard(make_game: Callable[..., Game], mode: str, order: str) -> None:
    @settings(
        max_examples=EXAMPLES_PER_COMBINATION,
        deadline=None,
        database=None,
        print_blob=True,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(operations=_operations(mode), seed=st.integers(0, 2**32 - 1))
    def example(operations: list[Operation], seed: int) -> None:
        slug, raw_key = _new_game(make_game, mode, order)
        note(f"game {slug}: mode={mode} order={order}")
        try:
            async_to_sync(_run_example)(slug, raw_key, mode, order, operations, seed)
        except PeriodRolledOver:
            return

    example()


# --------------------------------------------------------------------------- overflow, deterministically


@pytest.mark.parametrize("order", ["desc", "asc"])
async def test_it_refuses_an_increment_that_would_pass_2_pow_53_and_changes_nothing(
    make_game: Callable[..., Game], aclient: AsyncClient, order: str
) -> None:
    game = await sync_to_async(make_game)("overflow", mode="increment", order=order, max_submissions_per_minute=0)
    _, raw_key = await sync_to_async(apikeys.api_key_create)(game=game, name="model")
    model = ReferenceLeaderboard(mode="increment", order=order)

    async def post(tail: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        response = await aclient.post(
            f"/api/v1/games/overflow/{tail}", body, content_type="application/json", headers=auth(raw_key)
        )
        return response.status_code, response.json()

    def outcome(item: dict[str, Any]) -> tuple[int, int] | str:
        try:
            return model.submit_item(item).periods["all-time"]
        except Rejected as refusal:
            return refusal.code

    steps: list[tuple[dict[str, Any], tuple[int, int] | str]] = [
        ({"player_id": "a", "score": MAX_SAFE_SCORE, "display_name": "Ann"}, (MAX_SAFE_SCORE, 1)),
        ({"player_id": "a", "score": 1, "display_name": "Renamed"}, "score_overflow"),
        ({"player_id": "b", "score": -MAX_SAFE_SCORE}, (-MAX_SAFE_SCORE, 2 if order == "desc" else 1)),
        ({"player_id": "b", "score": -1}, "score_overflow"),
        ({"player_id": "b", "score": -(2**52)}, "score_overflow"),
        ({"player_id": "a", "score": -1}, (MAX_SAFE_SCORE - 1, 1 if order == "desc" else 2)),
        ({"player_id": "a", "score": 1}, (MAX_SAFE_SCORE, 1 if order == "desc" else 2)),
    ]
    for item, expected in steps:
        assert outcome(item) == expected, ("the reference disagrees with the test", item)
        status, body = await post("leaderboards/main/scores", item)
        if isinstance(expected, str):
            assert (status, body["error"]["code"], body["error"]["field"]) == (422, expected, "score"), item
        else:
            assert status == 200, body
            assert all((p["score"], p["rank"]) == expected for p in body["periods"].values()), (item, body)

    # The refused submission changed neither the score nor the name.
    board = (await aclient.get("/api/v1/games/overflow/leaderboards/main/all-time")).json()
    assert board["entries"] == entries_json(model.ranked("all-time"))
    assert {e["player_id"]: e["display_name"] for e in board["entries"]} == {"a": "Ann", "b": "b"}

    # In a batch, the overflowing item fails alone and the items around it apply in order.
    batch = [{"player_id": "a", "score": 1}, {"player_id": "a", "score": -5}, {"player_id": "a", "score": 5}]
    status, body = await post("scores/batch", {"scores": [on_main(i) for i in batch]})
    assert status == 200, body
    got = [r["error"]["code"] if "error" in r else r["periods"]["all-time"]["score"] for r in body["results"]]
    assert got == ["score_overflow", MAX_SAFE_SCORE - 5, MAX_SAFE_SCORE]
    modelled = [outcome(item) for item in batch]
    assert [o if isinstance(o, str) else o[0] for o in modelled] == got
    board = (await aclient.get("/api/v1/games/overflow/leaderboards/main/all-time")).json()
    assert board["entries"] == entries_json(model.ranked("all-time"))


async def test_it_refuses_an_increment_that_overflows_any_one_board_and_touches_none(
    make_game: Callable[..., Game], aclient: AsyncClient
) -> None:
    game = await sync_to_async(make_game)("overflow", mode="increment", max_submissions_per_minute=0)
    _, raw_key = await sync_to_async(apikeys.api_key_create)(game=game, name="model")
    # Yesterday's submission leaves the all-time total near the limit and today's board empty.
    yesterday = clock_now() - dt.timedelta(days=1)
    game_config = await config.get_game("overflow")
    assert game_config is not None
    with clock_at(yesterday):
        await services.score_submit(
            game=game_config, board=game_config.boards[0], player_id="a", score=MAX_SAFE_SCORE - 1
        )

    async def post(score: int) -> tuple[int, dict[str, Any]]:
        body = {"player_id": "a", "score": score, "display_name": "Ann"}
        response = await aclient.post(
            "/api/v1/games/overflow/leaderboards/main/scores",
            body,
            content_type="application/json",
            headers=auth(raw_key),
        )
        return response.status_code, response.json()

    async def board(period: str) -> dict[str, Any]:
        return (await aclient.get(f"/api/v1/games/overflow/leaderboards/main/{period}")).json()

    status, body = await post(2)
    assert (status, body["error"]["code"]) == (422, "score_overflow"), body
    assert (await board("daily"))["total"] == 0, "a refused submission must not reach any board"
    assert (await board("all-time"))["entries"] == [
        {"rank": 1, "player_id": "a", "display_name": "a", "score": MAX_SAFE_SCORE - 1, "metadata": None}
    ]

    status, body = await post(-1)
    assert status == 200, body
    got = {period: (s["score"], s["rank"]) for period, s in body["periods"].items()}
    assert (got["daily"], got["all-time"]) == ((-1, 1), (MAX_SAFE_SCORE - 2, 1))
    assert body["display_name"] == "Ann"
