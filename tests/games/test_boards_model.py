"""Model-based test of leaderboards: random boards (every mode and order, every tie rule and
subscore order, a custom cron window, the all-time window), several per game, fed in one random
sequence of single submissions and batches through the real API with a clock that moves a few
ms at a time (often not at all, so that equal scores land in the same ms, in one batch too),
with scores and subscores up to ±(2^53-1), each compared after every operation with
tests/games/board_reference.py (scores, subscores, ranks, metadata, refusals).

Mixed in, requests carrying one entry of the review's bad-input catalogue (tests/bad_inputs.py):
a value refused anywhere, a bad key or a body that is no JSON object in a submission or a batch;
a board's settings changed to a bad season, cron or other setting; a new board past the game's
limit, or under a bad slug. Each must get its refusal in the error envelope naming its field, and
change nothing: every board's settings read the same after it, and every window the reference.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.test import AsyncClient
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from core import apikeys, services
from core.clock import now as clock_now
from core.models import ApiKey
from core.redis import close_redis
from tests import bad_inputs as catalogue
from tests.bad_inputs import Bad, Refusal
from tests.conftest import auth, clock_at
from tests.games.board_reference import MAX_EXACT, ReferenceBoard, Refused

pytestmark = pytest.mark.django_db(transaction=True)

# Few players and scores: equal and repeated scores are common, where the tie rules show.
PLAYERS = ("a", "B", "c:1")
# Hourly: it fires well away from the pinned clock's 12:00, so no period rolls in an example.
CRON = "0 * * * *"
WINDOWS = ("daily", "weekly", "custom", "all-time")
# Small scores tie often; the extremes check every integer stays exact, and that a total past
# them is refused as a whole.
SCORES = (-2, 0, 1, 2, 5, MAX_EXACT, -MAX_EXACT, MAX_EXACT - 1, 2**52 + 1)
SUBSCORES = (None, 0, 1, -1, 3, MAX_EXACT, -MAX_EXACT)
EXAMPLES = 40
HOSTILE_ONE_IN = 3
# Refused for the whole request, wherever they stand in a submission or a batch.
WHOLE_BADS: tuple[Bad, ...] = catalogue.ANYWHERE + catalogue.KEYS + catalogue.BODIES
# A board any game may have: a new one is refused only for the game's limit, or its slug.
NEW_BOARD = json.dumps({"mode": "best", "order": "desc"}).encode()


@dataclass(frozen=True)
class BoardSpec:
    mode: str
    order: str
    ties: str
    subscore_order: str
    windows: tuple[str, ...]


@dataclass(frozen=True)
class Item:
    board: int
    player_id: str
    score: int
    subscore: int | None  # sent only to boards with ties 'subscore'
    metadata: dict[str, Any] | None


@dataclass(frozen=True)
class Step:
    items: tuple[Item, ...]  # one: a single POST; more: a batch
    wait_ms: int  # the clock moves this much first


@dataclass(frozen=True)
class Hostile:
    """A request carrying one entry of the bad-input catalogue: refused, changing nothing."""

    what: str
    method: str
    path: str  # under /api/v1/games/{game}/
    raw: bytes = dataclasses.field(repr=False)
    refusal: Refusal
    field: str | None


_boards = st.builds(
    BoardSpec,
    mode=st.sampled_from(["increment", "best", "latest"]),
    order=st.sampled_from(["desc", "asc"]),
    ties=st.sampled_from(["shared", "earliest", "subscore"]),
    subscore_order=st.sampled_from(["desc", "asc"]),
    windows=st.lists(st.sampled_from(WINDOWS), min_size=1, max_size=3, unique=True).map(tuple),
)
_metadata = st.one_of(st.none(), st.fixed_dictionaries({"car": st.sampled_from(["mx-5", "gt86", "supra"])}))


def _items(boards: int) -> st.SearchStrategy[Item]:
    return st.builds(
        Item,
        board=st.integers(0, boards - 1),
        player_id=st.sampled_from(PLAYERS),
        score=st.sampled_from(SCORES),
        subscore=st.sampled_from(SUBSCORES),
        metadata=_metadata,
    )


@st.composite
def _bad_scores(draw: st.DrawFn, boards: int) -> Hostile:
    """A submission or a batch with a value refused anywhere at any place, a bad key in any of
    its objects, or a body that is no JSON object."""
    items = draw(st.lists(_items(boards), min_size=1, max_size=3))
    bodies: list[dict[str, Any]] = [
        {"leaderboard": f"b{i.board}", "player_id": i.player_id, "score": i.score, "metadata": i.metadata}
        for i in items
    ]
    batch = len(items) > 1
    body: Any = {"scores": bodies} if batch else {k: v for k, v in bodies[0].items() if k != "leaderboard"}
    bad = draw(st.sampled_from(WHOLE_BADS))
    if bad in catalogue.BODIES:
        place: catalogue.Path = ()
    else:
        place = draw(st.sampled_from(list(catalogue.objects(body) if bad.key else catalogue.places(body))))
    raw, named = catalogue.spliced(body, place, bad)
    path = "scores/batch" if batch else f"leaderboards/b{items[0].board}/scores"
    return Hostile(f"{bad.name} at {catalogue.field_name(place) or 'the root'}", "post", path, raw, bad.refusal, named)


@st.composite
def _bad_settings(draw: st.DrawFn, boards: int) -> Hostile:
    bad = draw(st.sampled_from(catalogue.BOARD_SETTINGS))
    path = f"leaderboards/b{draw(st.integers(0, boards - 1))}"
    return Hostile(bad.name, "patch", path, json.dumps(bad.settings).encode(), bad.refusal, bad.field)


@st.composite
def _bad_new_board(draw: st.DrawFn) -> Hostile:
    # The game holds its limit (its max_boards is its number of boards), so no new board is taken.
    slug = draw(st.sampled_from((None, *catalogue.SLUGS)))
    if slug is None:
        return Hostile("a board past the limit", "put", "leaderboards/over", NEW_BOARD, catalogue.BOARD_LIMIT, "slug")
    field = "slug" if slug.refusal == catalogue.INVALID else None
    return Hostile(f"the slug {slug.name!r}", "put", f"leaderboards/{slug.path}", NEW_BOARD, slug.refusal, field)


@st.composite
def _step(draw: st.DrawFn, boards: int) -> Step | Hostile:
    if draw(st.integers(0, HOSTILE_ONE_IN - 1)) == HOSTILE_ONE_IN - 1:
        return draw(st.one_of(_bad_scores(boards), _bad_settings(boards), _bad_new_board()))
    items = draw(st.lists(_items(boards), min_size=1, max_size=4).map(tuple))
    return Step(items, draw(st.sampled_from([0, 0, 1, 7, 1000])))


def _steps(boards: int) -> st.SearchStrategy[list[Step | Hostile]]:
    return st.lists(_step(boards), min_size=1, max_size=16)


_slugs = itertools.count()


def _new_game(specs: list[BoardSpec]) -> tuple[str, str, list[ReferenceBoard]]:
    slug = f"bm-{next(_slugs)}"
    game = services.game_create(slug=slug, name=slug, max_submissions_per_minute=0)
    models = []
    for i, spec in enumerate(specs):
        services.leaderboard_create(
            game=game,
            slug=f"b{i}",
            mode=spec.mode,
            order=spec.order,
            ties=spec.ties,
            subscore_order=spec.subscore_order,
            windows=list(spec.windows),
            cron=CRON if "custom" in spec.windows else "",
        )
        models.append(
            ReferenceBoard(f"b{i}", spec.mode, spec.order, spec.ties, spec.windows, subscore_order=spec.subscore_order)
        )
    game.max_boards = len(specs)
    game.save(update_fields=["max_boards"])
    # A manage key, which may also submit: the hostile steps change boards' settings too.
    _, raw_key = apikeys.api_key_create(game=game, name="model", scope=ApiKey.Scope.MANAGE, requests_per_minute=100_000)
    return slug, raw_key, models


async def _run(slug: str, raw_key: str, models: list[ReferenceBoard], steps: list[Step | Hostile]) -> None:
    client = AsyncClient()
    headers = auth(raw_key)
    now = clock_now()
    try:
        for index, step in enumerate(steps, start=1):
            if isinstance(step, Hostile):
                with clock_at(now):
                    await _refused(client, slug, headers, step, f"step {index}")
            else:
                now += dt.timedelta(milliseconds=step.wait_ms)
                with clock_at(now):
                    await _submitted(client, slug, headers, models, step, f"step {index}")
            for model in models:
                for window in model.windows:
                    page = (
                        await client.get(f"/api/v1/games/{slug}/leaderboards/{model.slug}/{window}?limit=50")
                    ).json()
                    assert page["entries"] == model.ranked(window), f"step {index}: {model.slug} {window} differs"
    finally:
        await close_redis()


async def _submitted(
    client: AsyncClient, slug: str, headers: dict[str, str], models: list[ReferenceBoard], step: Step, where: str
) -> None:
    """Send the step's items (one: a POST; more: a batch) and check each reply against its board's reference."""
    bodies = []
    for item in step.items:
        body: dict[str, Any] = {"player_id": item.player_id, "score": item.score}
        if item.subscore is not None and models[item.board].ties == "subscore":
            body["subscore"] = item.subscore
        if item.metadata is not None:
            body["metadata"] = item.metadata
        bodies.append((item, body))
    if len(bodies) == 1:
        item, body = bodies[0]
        url = f"/api/v1/games/{slug}/leaderboards/b{item.board}/scores"
    else:
        url, body = (
            f"/api/v1/games/{slug}/scores/batch",
            {"scores": [{**b, "leaderboard": f"b{i.board}"} for i, b in bodies]},
        )
    response = await client.post(url, json.dumps(body), content_type="application/json", headers=headers)
    assert response.status_code in (200, 422), f"{where}: {response.content!r}"
    results = [response.json()] if len(bodies) == 1 else response.json()["results"]
    for (item, body), result in zip(bodies, results, strict=True):
        _check_result(models[item.board], item, body, result, f"{where}, {item}")


async def _refused(client: AsyncClient, slug: str, headers: dict[str, str], step: Hostile, where: str) -> None:
    """The step's refusal, in the error envelope naming its field; every board's settings as before."""
    boards_url = f"/api/v1/games/{slug}/leaderboards"
    before = (await client.get(boards_url)).json()
    send = getattr(client, step.method)
    response = await send(
        f"/api/v1/games/{slug}/{step.path}", step.raw, content_type="application/json", headers=headers
    )
    answer = (response.status_code, catalogue.error_of(response.json()))
    assert answer == (step.refusal.status, (step.refusal.code, step.field)), f"{where}, {step}: {response.content!r}"
    assert (await client.get(boards_url)).json() == before, f"{where}, {step}: a board's settings changed"


def _check_result(model: ReferenceBoard, item: Item, body: dict[str, Any], result: dict[str, Any], where: str) -> None:
    """One item's reply against the reference, which it then follows."""
    try:
        model.submit(item.player_id, item.score, body.get("subscore"), item.metadata)
    except Refused:
        assert result.get("error", {}).get("code") == "score_overflow", f"{where}: {result}"
        return
    assert "error" not in result, f"{where}: {result}"
    expected = {
        w: (model.entries[w][item.player_id].score, model.subscore_of(w, item.player_id), model.rank(w, item.player_id))
        for w in model.windows
    }
    got = {w: (p["score"], p.get("subscore"), p["rank"]) for w, p in result["periods"].items()}
    assert got == expected, f"{where}: got {got}, expected {expected}"


def test_it_agrees_with_the_reference_on_random_boards(make_game: Callable[..., Any]) -> None:
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        print_blob=True,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(specs=st.lists(_boards, min_size=1, max_size=3), data=st.data())
    def example(specs: list[BoardSpec], data: st.DataObject) -> None:
        steps = data.draw(_steps(len(specs)))
        slug, raw_key, models = _new_game(specs)
        note(f"game {slug}: boards {specs}")
        async_to_sync(_run)(slug, raw_key, models, steps)

    example()
