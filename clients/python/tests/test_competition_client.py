"""The Python client's competition calls against the real server (as test_client.py starts one):
cohorts and the reads within them, a rating given at join, a settlement's preview, ending a
season and reading how it settled. Sync and async."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from leaderboard_client import AsyncClient, Client, Conflict, Forbidden, Invalid, NotFound

from tests.real_server import manage, node_env, setup_node, start_web, stop_all

pytestmark = pytest.mark.wall_clock
GAME = "sdkcup"
WEEK_SECS = 7 * 24 * 3600
# A weekly cup in cohorts of two, first come, each cohort's winner rewarded.
CUP = {
    "name": "Cup",
    "mode": "best",
    "order": "desc",
    "windows": ["weekly"],
    "entry": "join",
    "cohort_size": 2,
    "rewards": [{"from_rank": 1, "reward": {"coins": 5}}],
}


@dataclass
class Server:
    url: str
    submit_key: str
    manage_key: str
    env: dict[str, str]

    def put_board(self, slug: str, settings: dict[str, Any]) -> None:
        made = httpx.put(
            f"{self.url}/api/v1/games/{GAME}/leaderboards/{slug}",
            json=settings,
            headers={"Authorization": f"Bearer {self.manage_key}"},
        )
        assert made.status_code == 200, made.text


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    node = setup_node(node_env(tmp_path_factory.mktemp("sdkcup")), GAME)
    manage_key = manage(node.env, "createapikey", GAME, "--name", "ops", "--scope", "manage").strip()
    try:
        yield Server(start_web(node), node.raw_key, manage_key, node.env)
    finally:
        stop_all(node)


def play(lb: Client, board: str, scores: dict[str, int]) -> None:
    for player, score in scores.items():
        lb.join(board, player)
        lb.submit_score(board, player, score)


def test_it_races_in_cohorts_and_reads_each_way_within_them(server: Server) -> None:
    server.put_board("cup", CUP)
    with Client(server.url, game=GAME, api_key=server.submit_key) as lb:
        # First come in twos: cohort 1 is ada and bob, cohort 2 cy and dee.
        play(lb, "cup", {"ada": 10, "bob": 20, "cy": 5, "dee": 30})
        listed = lb.cohorts("cup", "weekly")
        second = lb.cohort("cup", "weekly", "2")
        standing = lb.standing("cup", "weekly", "cy")
        around = lb.around("cup", "weekly", "cy", radius=1, scope="cohort")
        on_board = lb.around("cup", "weekly", "cy", radius=1)
        friends = lb.friends("cup", "weekly", ["ada", "cy", "zed"], scope="cohort")
        preview = lb.settlement_preview("cup", "weekly")
        dee = lb.settlement_preview("cup", "weekly", player_id="dee")
        (board,) = [b for b in lb.leaderboards() if b["slug"] == "cup"]
        with pytest.raises(Conflict) as no_cohorts:
            lb.cohorts("main", "daily")

    assert (listed["cohort_size"], listed["entrants"], listed["held"], listed["total"]) == (2, 4, 0, 2)
    assert [(c["cohort"], c["tier"], c["size"]) for c in listed["cohorts"]] == [("1", None, 2), ("2", None, 2)]
    assert [(e["player_id"], e["rank"]) for e in second["entries"]] == [("dee", 1), ("cy", 2)]
    assert (second["cohort"], second["cohort_size"], second["total"]) == ("2", 2, 2)
    assert (standing["rank"], standing.get("cohort"), standing.get("cohort_rank"), standing.get("cohort_size")) == (
        4,
        "2",
        2,
        2,
    )
    assert [e["player_id"] for e in around["entries"]] == ["dee", "cy"] and around["cohort"] == "2"
    assert [e["player_id"] for e in on_board["entries"]] == ["bob", "ada", "cy"]  # shifted: cy is last
    assert [(e["player_id"], e["rank"]) for e in friends["entries"]] == [("ada", 2), ("cy", 2)]
    assert (friends["cohorts"], friends["missing"]) == ({"ada": "1", "cy": "2"}, ["zed"])
    assert (preview["preview"], preview["settled_at"], preview["entrants"], preview["cohorts"]) == (True, None, 4, 2)
    assert (preview["promoted"], preview["demoted"], preview["granted"]) == (0, 0, 2)
    assert [(e["player_id"], e["cohort"], e["rank"], e["reward"]) for e in preview["entries"]] == [
        ("bob", "1", 1, {"coins": 5}),
        ("ada", "1", 2, None),
        ("dee", "2", 1, {"coins": 5}),
        ("cy", "2", 2, None),
    ]
    assert [e["player_id"] for e in dee["entries"]] == ["dee"] and dee["total"] == 1
    competition = board["competition"]
    assert competition is not None
    assert (board["cohort_size"], board["cohort_fill"], board["cohort_by"]) == (2, "first_come", "none")
    (rule,) = board["rewards"]
    assert (rule["tier"], rule.get("from_rank"), rule.get("to_rank"), rule["reward"]) == (None, 1, 1, {"coins": 5})
    assert (competition["claim_window_secs"], competition["settle_delay_secs"], competition["tiers"]) == (
        2592000,
        0,
        [],
    )
    assert competition["period"]["settles_at"] == competition["period"]["ends_at"]
    assert competition["period"]["cohorts_at"] is None  # first come: placed as they enter
    assert no_cohorts.value.code == "no_cohorts"


def test_it_joins_with_a_rating_where_cohorts_are_bands_of_it(server: Server) -> None:
    # Balanced rating bands, drawn when entry closes: at the week's end here, so all are held.
    bands = {**CUP, "cohort_fill": "balanced", "cohort_by": "rating", "entry_window_secs": WEEK_SECS, "rewards": []}
    server.put_board("bands", bands)

    async def scenario() -> tuple[Any, Any, Any]:
        async with AsyncClient(server.url, game=GAME, api_key=server.submit_key) as alb:
            first = await alb.join("bands", "eve", rating=1500)
            listed = await alb.cohorts("bands", "weekly")
            with pytest.raises(Invalid) as unrated:
                await alb.join("bands", "fay")
            return first, listed, unrated.value

    with Client(server.url, game=GAME, api_key=server.submit_key) as lb:
        entry = lb.join("bands", "ada", display_name="Ada", rating=1450)
        again = lb.join("bands", "ada", rating=9999)  # a second join keeps the first rating
    first, listed, unrated = asyncio.run(scenario())

    assert (entry["cohort"], entry["tier"], entry["entrants"]) == (None, None, 1)
    assert again["entered_at"] == entry["entered_at"]
    assert (first["cohort"], first["entrants"]) == (None, 2)
    assert (listed["entrants"], listed["held"], listed["total"], listed["cohorts"]) == (2, 2, 0, [])
    assert listed["cohorts_at"] is not None
    assert (unrated.code, unrated.field) == ("invalid", "rating")


def test_it_ends_a_season_and_reads_how_it_settled(server: Server) -> None:
    now = dt.datetime.now(dt.UTC)
    spring = {
        "name": "Spring cup",
        "mode": "best",
        "order": "desc",
        "windows": ["all-time"],
        "starts_at": (now - dt.timedelta(hours=1)).isoformat(),
        "ends_at": (now + dt.timedelta(days=1)).isoformat(),
        "entry": "join",
        "rewards": [{"from_rank": 1, "to_rank": 2, "reward": {"badge": "spring"}}],
    }
    server.put_board("spring", spring)
    with Client(server.url, game=GAME, api_key=server.submit_key) as lb:
        play(lb, "spring", {"ada": 3, "bob": 2, "cy": 1})
        with pytest.raises(NotFound) as not_settled:
            lb.settlement("spring", "all-time", "all-time")
        with pytest.raises(Forbidden) as submit_key:
            lb.end("spring")
    with Client(server.url, game=GAME, api_key=server.manage_key) as ops:
        ended = ops.end("spring")
        with pytest.raises(Conflict) as twice:
            ops.end("spring")
    # The close job's part (no worker runs here): archive the ended season, which settles it.
    manage(server.env, "archive_period", GAME, "all-time", "all-time", "--board", "spring")

    async def read() -> tuple[Any, Any]:
        async with AsyncClient(server.url, game=GAME) as alb:
            return await alb.settlement("spring", "all-time", "all-time"), await alb.settlement(
                "spring", "all-time", "all-time", player_id="cy"
            )

    settled, cy = asyncio.run(read())

    assert not_settled.value.code == "not_settled" and submit_key.value.code == "scope"
    assert (ended["open"], twice.value.code) == (False, "not_endable")
    assert ended["ends_at"] is not None and dt.datetime.fromisoformat(ended["ends_at"]) < now + dt.timedelta(hours=1)
    assert (settled["preview"], settled["period_id"], settled["entrants"], settled["granted"]) == (
        False,
        "all-time",
        3,
        2,
    )
    assert settled["settled_at"] is not None
    assert [(e["player_id"], e["rank"], e["cohort"], e["reward"]) for e in settled["entries"]] == [
        ("ada", 1, None, {"badge": "spring"}),
        ("bob", 2, None, {"badge": "spring"}),
        ("cy", 3, None, None),
    ]
    assert [(e["player_id"], e["score"]) for e in cy["entries"]] == [("cy", 1)] and cy["total"] == 1
