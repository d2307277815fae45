"""Model-based test of leaderboards: random boards (every mode and order, every tie rule and
subscore order, a custom cron window, the all-time window), several per game, fed in one random
sequence of single submissions and batches through the real API with a clock that moves a few
ms at a time (often not at all, so that equal scores land in the same ms, in one batch too),
with scores and subscores up to ±(2^53-1), each compared after every operation with
tests/games/board_reference.py (scores, subscores, ranks, metadata, refusals).
"""

from __future__ import annotations

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
from core.redis import close_redis
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


_boards = st.builds(
    BoardSpec,
    mode=st.sampled_from(["increment", "best", "latest"]),
    order=st.sampled_from(["desc", "asc"]),
    ties=st.sampled_from(["shared", "earliest", "subscore"]),
    subscore_order=st.sampled_from(["desc", "asc"]),
    windows=st.lists(st.sampled_from(WINDOWS), min_size=1, max_size=3, unique=True).map(tuple),
)
_metadata = st.one_of(st.none(), st.fixed_dictionaries({"car": st.sampled_from(["mx-5", "gt86", "supra"])}))


def _steps(boards: int) -> st.SearchStrategy[list[Step]]:
    item = st.builds(
        Item,
        board=st.integers(0, boards - 1),
        player_id=st.sampled_from(PLAYERS),
        score=st.sampled_from(SCORES),
        subscore=st.sampled_from(SUBSCORES),
        metadata=_metadata,
    )
    step = st.builds(
        Step, items=st.lists(item, min_size=1, max_size=4).map(tuple), wait_ms=st.sampled_from([0, 0, 1, 7, 1000])
    )
    return st.lists(step, min_size=1, max_size=16)


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
    _, raw_key = apikeys.api_key_create(game=game, name="model", requests_per_minute=100_000)
    return slug, raw_key, models


async def _run(slug: str, raw_key: str, models: list[ReferenceBoard], steps: list[Step]) -> None:
    client = AsyncClient()
    headers = auth(raw_key)
    now = clock_now()
    try:
        for index, step in enumerate(steps, start=1):
            now += dt.timedelta(milliseconds=step.wait_ms)
            bodies = []
            for item in step.items:
                body: dict[str, Any] = {"player_id": item.player_id, "score": item.score}
                if item.subscore is not None and models[item.board].ties == "subscore":
                    body["subscore"] = item.subscore
                if item.metadata is not None:
                    body["metadata"] = item.metadata
                bodies.append((item, body))
            with clock_at(now):
                if len(bodies) == 1:
                    item, body = bodies[0]
                    response = await client.post(
                        f"/api/v1/games/{slug}/leaderboards/b{item.board}/scores",
                        json.dumps(body),
                        content_type="application/json",
                        headers=headers,
                    )
                    results = [response.json()]
                else:
                    batch = [{**body, "leaderboard": f"b{item.board}"} for item, body in bodies]
                    response = await client.post(
                        f"/api/v1/games/{slug}/scores/batch",
                        json.dumps({"scores": batch}),
                        content_type="application/json",
                        headers=headers,
                    )
                    results = response.json()["results"]
            assert response.status_code in (200, 422), f"step {index}: {response.content!r}"
            for (item, body), result in zip(bodies, results, strict=True):
                _check_result(models[item.board], item, body, result, f"step {index}, {item}")
            for model in models:
                for window in model.windows:
                    page = (
                        await client.get(f"/api/v1/games/{slug}/leaderboards/{model.slug}/{window}?limit=50")
                    ).json()
                    assert page["entries"] == model.ranked(window), f"step {index}: {model.slug} {window} differs"
    finally:
        await close_redis()


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
