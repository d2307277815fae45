"""Finding players by name: selectors.players_named and ``GET /api/v1/games/{game}/players``.

The model-based test drives submissions (new players, renames, no name), admin renames
and hides in random order, then compares every search with a reference that scans
all the names: what the index answers must be what a scan would.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from core import apikeys, keys, text
from core.config import GameConfig
from core.models import Game, Player
from core.redis import get_redis, run_sync
from games import selectors, services
from tests.conftest import auth

pytestmark = pytest.mark.django_db


def config_of(game: Game) -> GameConfig:
    return GameConfig.from_model(game, "0")


def submit(game: Game, player_id: str, name: str | None = None) -> None:
    config = config_of(game)
    run_sync(
        lambda: services.score_submit(
            game=config, board=config.boards[0], player_id=player_id, score=1, display_name=name
        )
    )


def found(game: Game, query: str, limit: int = 20) -> list[tuple[str, str]]:
    config = config_of(game)
    players = run_sync(lambda: selectors.players_named(game=config, query=query, limit=limit))
    return [(p.player_id, p.display_name) for p in players]


def test_it_finds_a_name_by_its_start_whatever_the_case_or_accents(make_game):
    game = make_game("tetris", max_submissions_per_minute=0)
    submit(game, "p1", "Zoë Quinn")
    submit(game, "p2", "ÉMILE")
    submit(game, "p3", "Straße")

    assert found(game, "zoe") == [("p1", "Zoë Quinn")]
    assert found(game, "ZOË Q") == [("p1", "Zoë Quinn")]
    assert found(game, "  emi ") == [("p2", "ÉMILE")]
    assert found(game, "strass") == [("p3", "Straße")]
    assert found(game, "quinn") == []  # the start of the name, not any word in it


def test_it_orders_by_name_and_stops_at_the_limit(make_game):
    game = make_game("tetris", max_submissions_per_minute=0)
    for player, name in [("p1", "Adam"), ("p2", "ada"), ("p3", "Adèle"), ("p4", "Bea"), ("p0", "Ada")]:
        submit(game, player, name)

    assert found(game, "ad") == [("p0", "Ada"), ("p2", "ada"), ("p1", "Adam"), ("p3", "Adèle")]
    assert found(game, "ad", limit=2) == [("p0", "Ada"), ("p2", "ada")]


def test_it_puts_the_player_with_that_exact_id_first(make_game):
    game = make_game("tetris", max_submissions_per_minute=0)
    submit(game, "alpha", "Zed")
    submit(game, "p1", "alpha and omega")

    assert found(game, "alpha") == [("alpha", "Zed"), ("p1", "alpha and omega")]
    assert found(game, "Alpha") == [("p1", "alpha and omega")]  # ids are case-sensitive


def test_it_finds_a_player_without_a_name_by_their_id(make_game):
    game = make_game("tetris", max_submissions_per_minute=0)
    submit(game, "Player-42")

    assert found(game, "player-4") == [("Player-42", "Player-42")]


def test_it_leaves_hidden_players_out_and_brings_them_back(make_game):
    game = make_game("tetris", max_submissions_per_minute=0)
    for i in range(30):
        submit(game, f"p{i:02}", f"Sam {i:02}")
    for i in range(25):
        services.player_set_hidden(game=game, player_id=f"p{i:02}", hidden=True)

    assert [p for p, _ in found(game, "sam", limit=3)] == ["p25", "p26", "p27"]
    assert found(game, "p03") == []
    services.player_set_hidden(game=game, player_id="p03", hidden=False)
    assert found(game, "sam", limit=1) == [("p03", "Sam 03")]


def test_it_finds_a_player_by_their_new_name_only_after_a_rename(make_game):
    game = make_game("tetris", max_submissions_per_minute=0)
    submit(game, "p1", "Ann")
    submit(game, "p1", "Bella")  # a new name with a score
    assert found(game, "ann") == []
    assert found(game, "bel") == [("p1", "Bella")]

    services.players_sync_pending()
    services.player_rename(player=Player.objects.get(player_id="p1"), display_name="Cora")  # an admin's
    assert found(game, "bel") == []
    assert found(game, "cor") == [("p1", "Cora")]
    submit(game, "p1")  # no name: keeps the one it has
    assert found(game, "cor") == [("p1", "Cora")]


def test_it_indexes_names_stored_before_the_index_existed(make_game, monkeypatch):
    game = make_game("tetris", max_submissions_per_minute=0)
    config = config_of(game)
    # Enough names for Redis to keep them in a hash table, which HSCAN reads a part at a time.
    items = [services.Submission(f"p{i:03}", 1, f"Old {i:03}", leaderboard="main") for i in range(600)]
    run_sync(lambda: services.score_submit_many(game=config, items=items))
    # As an older version left them: names without an index.
    run_sync(lambda: get_redis().delete(keys.name_index("tetris"), keys.name_keys("tetris")))
    submit(game, "p000", "Renamed")  # a rename before the backfill reaches the player wins
    assert found(game, "old") == []

    monkeypatch.setattr(services.players, "NAMES_WRITE_CHUNK", 10)
    runs = 1
    while services.names_index_backfill(budget=100):
        runs += 1
        assert runs < 50

    assert runs > 2  # a bounded part per run, resumed where the last run stopped
    assert [p for p, _ in found(game, "old", limit=3)] == ["p001", "p002", "p003"]
    assert len(run_sync(lambda: get_redis().zrange(keys.name_index("tetris"), 0, -1))) == 600
    assert found(game, "ren") == [("p000", "Renamed")]
    assert services.names_index_backfill() == 0


# --------------------------------------------------------------------------- the API


async def new_game(make_game: Callable[..., Game], slug: str) -> str:
    game = await sync_to_async(make_game)(slug, max_submissions_per_minute=0)
    return (await sync_to_async(apikeys.api_key_create)(game=game, name="server"))[1]


@pytest.mark.django_db(transaction=True)
async def test_it_answers_a_search_over_the_api(make_game):
    client = AsyncClient()
    raw_key = await new_game(make_game, "tetris")
    body = {
        "scores": [
            {"leaderboard": "main", "player_id": "p1", "score": 1, "display_name": "Ada"},
            {"leaderboard": "main", "player_id": "p2", "score": 2},
        ]
    }
    response = await client.post("/api/v1/games/tetris/scores/batch", body, "application/json", headers=auth(raw_key))
    assert response.status_code == 200, response.content

    response = await client.get("/api/v1/games/tetris/players", {"q": "a"})
    assert response.status_code == 200
    assert response.json() == {"players": [{"player_id": "p1", "display_name": "Ada"}]}

    response = await client.get("/api/v1/games/tetris/players", {"q": "p", "limit": "1"})
    assert response.json() == {"players": [{"player_id": "p2", "display_name": "p2"}]}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("params", "field"),
    [({}, "q"), ({"q": ""}, "q"), ({"q": "a\x00"}, "q"), ({"q": "x" * 65}, "q"), ({"q": "a", "limit": "51"}, "limit")],
)
async def test_it_refuses_a_bad_search_naming_the_field(make_game, params, field):
    await new_game(make_game, "tetris")

    response = await AsyncClient().get("/api/v1/games/tetris/players", params)

    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "invalid"
    assert error["field"] == field


@pytest.mark.django_db(transaction=True)
async def test_it_answers_a_search_in_an_unknown_game_with_404():
    response = await AsyncClient().get("/api/v1/games/nope/players", {"q": "a"})

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "game_not_found"


# --------------------------------------------------------------------------- model-based

PLAYERS = ("a", "ab", "Ab", "b", "p.1", "Ada")
NAMES = (None, "", "Ada", "adam", "ÁDÁM", "Ad", "Bé", "be", "a b", "Ada")
QUERIES = ("a", "A", "ad", "ada", "adá", "ADAM", "b", "bé", "a b", "ab", "p", "Ada", "zz", " a")
_slugs = itertools.count()

OPERATION = st.one_of(
    st.tuples(st.just("submit"), st.sampled_from(PLAYERS), st.sampled_from(NAMES)),
    st.tuples(st.just("rename"), st.sampled_from(PLAYERS), st.sampled_from(NAMES[2:])),
    st.tuples(st.just("hide"), st.sampled_from(PLAYERS), st.booleans()),
)


class ReferenceNames:
    """Every player's name and whether they are hidden; a search scans them all."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.hidden: set[str] = set()

    def apply(self, operation: tuple) -> None:
        kind, player, arg = operation
        if kind == "submit" and player not in self.hidden:
            if arg or player not in self.names:
                self.names[player] = arg or player
        elif kind == "rename" and player in self.names:
            self.names[player] = arg
        elif kind == "hide" and player in self.names:
            (self.hidden.add if arg else self.hidden.discard)(player)

    def search(self, query: str, limit: int) -> list[tuple[str, str]]:
        key = text.search_key(query)
        shown = {p: n for p, n in self.names.items() if p not in self.hidden}
        exact = [query.strip()] if query.strip() in shown else []
        matches = sorted(
            (p for p, n in shown.items() if key and text.search_key(n).startswith(key) and p not in exact),
            key=lambda p: text.search_key(shown[p]).encode() + b"\0" + p.encode(),
        )
        return [(p, shown[p]) for p in (exact + matches)[:limit]]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(operations=st.lists(OPERATION, max_size=25), limit=st.integers(1, 4))
def test_it_finds_what_a_scan_of_every_name_would(make_game, operations, limit):
    game = make_game(f"search-{next(_slugs)}", max_submissions_per_minute=0)
    reference = ReferenceNames()
    for operation in operations:
        kind, player, arg = operation
        if kind == "submit" and player not in reference.hidden:
            submit(game, player, arg)
        elif kind == "rename" and player in reference.names:
            services.players_sync_pending()
            services.player_rename(player=Player.objects.get(game=game, player_id=player), display_name=arg)
        elif kind == "hide" and player in reference.names:
            services.player_set_hidden(game=game, player_id=player, hidden=arg)
        reference.apply(operation)
    note(f"names {reference.names}, hidden {reference.hidden}")
    for query in QUERIES:
        assert found(game, query, limit) == reference.search(query, limit), query
