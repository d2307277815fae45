"""The Python client against the real server (started as the suite starts one: a uvicorn
process with a SQLite file of its own and the suite's Redis): every call, sync and async."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from leaderboard_client import (
    AsyncClient,
    Client,
    Conflict,
    Gone,
    Invalid,
    NotFound,
    RateLimited,
    RetryPolicy,
    TransportError,
    Unauthorized,
)

from tests.competitions.settled import node_grants
from tests.conftest import free_port
from tests.real_server import manage, node_env, setup_node, start_web, stop_all

pytestmark = pytest.mark.wall_clock
GAME = "sdk"
# A league of two tiers, players starting at the bottom.
LEAGUE = {
    "name": "Ladder",
    "mode": "best",
    "order": "desc",
    "windows": ["weekly"],
    "cohort_size": 30,
    "cohort_by": "tier",
    "tiers": [
        {"slug": "bronze", "name": "Bronze", "promote": "3"},
        {"slug": "silver", "name": "Silver", "demote": "3"},
    ],
}


@dataclass
class Server:
    url: str
    submit_key: str
    manage_key: str
    slow_key: str
    env: dict[str, str]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("sdk")
    node = setup_node(node_env(tmp), GAME)
    manage(node.env, "createleaderboard", GAME, "kills", "--mode", "increment")
    manage_key = manage(node.env, "createapikey", GAME, "--name", "ops", "--scope", "manage").strip()
    slow_key = manage(node.env, "createapikey", GAME, "--name", "slow", "--requests-per-minute", "60").strip()
    try:
        yield Server(start_web(node), node.raw_key, manage_key, slow_key, node.env)
    finally:
        stop_all(node)


class Recorded(RetryPolicy):
    """A retry policy that remembers the waits it chose."""

    def __init__(self, **options: float) -> None:
        super().__init__(**options)  # type: ignore[arg-type]
        object.__setattr__(self, "waits", [])

    def wait(self, attempt: int, retry_after: float | None) -> float | None:
        seconds = super().wait(attempt, retry_after)
        self.waits.append(seconds)  # type: ignore[attr-defined]
        return seconds


def test_it_submits_and_reads_every_way(server: Server) -> None:
    with Client(server.url, game=GAME, api_key=server.submit_key) as lb:
        first = lb.submit_score("main", "ada", 1200, display_name="Ada", metadata={"car": "mx-5"})
        lb.submit_score("main", "bob", 900)
        lb.submit_score("main", "cy", 1500)
        page = lb.page("main", "daily", limit=2)
        standing = lb.standing("main", "all-time", "ada")
        around = lb.around("main", "all-time", "bob", radius=1)
        friends = lb.friends("main", "weekly", ["ada", "zed"])
        profile = lb.player("ada")
        found = lb.find_players("Ad")
        recent = lb.recent(limit=2)

    assert first["periods"]["all-time"] == {"period_id": "all-time", "score": 1200, "rank": 1}
    assert [(e["player_id"], e["rank"]) for e in page["entries"]] == [("cy", 1), ("ada", 2)]
    assert page["total"] == 3
    assert (standing["rank"], standing["metadata"]) == (2, {"car": "mx-5"})
    assert [e["player_id"] for e in around["entries"]] == ["cy", "ada", "bob"]  # shifted: bob is last
    assert ([e["player_id"] for e in friends["entries"]], friends["missing"]) == (["ada"], ["zed"])
    assert profile["leaderboards"]["main"]["daily"]["standing"]["score"] == 1200  # type: ignore[index]
    assert found == [{"player_id": "ada", "display_name": "Ada"}]
    assert [r["player_id"] for r in recent] == ["cy", "bob"]


def test_it_joins_a_competing_board_and_grants_attempts(server: Server) -> None:
    cup = {"name": "Cup", "mode": "best", "order": "desc", "windows": ["weekly"], "entry": "join", "max_attempts": 1}
    made = httpx.put(
        f"{server.url}/api/v1/games/{GAME}/leaderboards/cup",
        json=cup,
        headers={"Authorization": f"Bearer {server.manage_key}"},
    )
    assert made.status_code == 200, made.text
    with Client(server.url, game=GAME, api_key=server.submit_key) as lb:
        with pytest.raises(Conflict) as not_entered:
            lb.submit_score("cup", "ada", 5)
        entry = lb.join("cup", "ada", display_name="Ada")
        again = lb.join("cup", "ada")
        lb.submit_score("cup", "ada", 5)
        with pytest.raises(Conflict) as exhausted:
            lb.submit_score("cup", "ada", 6)
    with Client(server.url, game=GAME, api_key=server.manage_key) as ops:
        granted = ops.grant_attempts("cup", "ada")

    assert not_entered.value.code == "not_entered" and exhausted.value.code == "attempts_exhausted"
    assert (entry["entrants"], entry["attempts_left"], again["entered_at"]) == (1, 1, entry["entered_at"])
    assert (granted["extra"], granted["used"], granted["left"]) == (1, 1, 1)


def test_it_lists_and_claims_rewards_and_reads_a_league(server: Server) -> None:
    # As a settlement will grant them: ada's this week, bob's 31 days ago (past its claim window).
    node_grants(server.env, game=GAME, board="prizes", grants=[("ada", 0, {"coins": 500}), ("bob", 31, {"coins": 5})])
    with Client(server.url, game=GAME, api_key=server.submit_key) as lb:
        pending = lb.rewards("ada", status="pending")
        (reward,) = pending["rewards"]
        claimed = lb.claim(reward["grant_id"])
        again = lb.claim(reward["grant_id"])
        (expired,) = lb.rewards("bob")["rewards"]
        with pytest.raises(Gone) as gone:
            lb.claim(expired["grant_id"])
        with pytest.raises(NotFound) as unknown:
            lb.claim("grant_" + "x" * 22)
        with pytest.raises(Conflict) as no_league:
            lb.league("prizes", "ada")
        made = httpx.put(
            f"{server.url}/api/v1/games/{GAME}/leaderboards/ladder",
            json=LEAGUE,
            headers={"Authorization": f"Bearer {server.manage_key}"},
        )
        assert made.status_code == 200, made.text
        league = lb.league("ladder", "ada")

    async def in_async() -> tuple[Any, Any]:
        async with AsyncClient(server.url, game=GAME, api_key=server.submit_key) as alb:
            return await alb.rewards("ada", status="claimed"), await alb.claim(reward["grant_id"])

    listed_claimed, claimed_async = asyncio.run(in_async())

    assert (pending["total"], reward["reward"], reward["status"], reward["claimed_at"]) == (
        1,
        {"coins": 500},
        "pending",
        None,
    )
    assert claimed["status"] == "claimed" and claimed["claimed_at"] is not None
    assert again == claimed == claimed_async
    assert [r["grant_id"] for r in listed_claimed["rewards"]] == [reward["grant_id"]]
    assert expired["status"] == "expired" and gone.value.code == "reward_expired"
    assert (unknown.value.code, no_league.value.code) == ("reward_not_found", "not_a_league")
    assert (league["tier"], league["since_period_id"], league["history"]) == (
        {"slug": "bronze", "name": "Bronze"},
        None,
        [],
    )
    assert [t["slug"] for t in league["tiers"]] == ["bronze", "silver"]


def test_it_reads_games_boards_presence_and_archives(server: Server) -> None:
    with Client(server.url, game=GAME, api_key=server.submit_key) as lb:
        report = lb.report_presence(online=["ada", "bob"], offline=["cy"])
        who = lb.presence(limit=10)
        ada = lb.player_presence("ada")
        games = lb.games()
        game = lb.game_info()
        boards = lb.leaderboards()
        archived = lb.archived_periods("main", period="daily")
        code = lb.link_code("ada")

    assert (report["online"], report["offline"]) == (2, 1)
    assert sorted(p["player_id"] for p in who["players"]) == ["ada", "bob"]
    assert ada["online"] is True
    assert GAME in [g["slug"] for g in games] and game["slug"] == GAME
    assert {"kills", "main"} <= {b["slug"] for b in boards}  # and those other tests of this server made
    assert archived == {"total": 0, "periods": []}
    assert len(code["code"]) == 8 and code["link_url"].endswith(f"/games/{GAME}/link/")


def test_it_exports_a_period_into_a_file_as_it_streams(server: Server, tmp_path) -> None:
    with Client(server.url, game=GAME, api_key=server.submit_key) as lb:
        lb.submit_scores([{"leaderboard": "kills", "player_id": f"x{i:03d}", "score": i} for i in range(300)])
        with open(tmp_path / "kills.csv", "wb") as out:
            written = lb.export("kills", "all-time", to=out)
        with pytest.raises(NotFound) as missing, open(tmp_path / "none.jsonl", "wb") as untouched:
            lb.export("kills", "daily", period_id="2001-01-01", format="jsonl", to=untouched)

    lines = (tmp_path / "kills.csv").read_text().splitlines()
    assert written == (tmp_path / "kills.csv").stat().st_size
    assert lines[0] == "rank,player_id,display_name,score,shown,metadata"
    assert lines[1:3] == ["1,x299,x299,299,299,", "2,x298,x298,298,298,"]
    assert len(lines) == 301
    assert missing.value.code == "period_not_found" and (tmp_path / "none.jsonl").stat().st_size == 0

    async def scenario() -> bytes:
        async with AsyncClient(server.url, game=GAME, api_key=server.submit_key) as lb:
            with open(tmp_path / "kills.jsonl", "wb") as out:
                await lb.export("kills", "all-time", format="jsonl", to=out)
        return (tmp_path / "kills.jsonl").read_bytes()

    assert asyncio.run(scenario()).splitlines()[0] == (
        b'{"rank":1,"player_id":"x299","display_name":"x299","score":299,"shown":"299","metadata":null}'
    )


def test_it_applies_a_retried_submission_once(server: Server) -> None:
    with Client(server.url, game=GAME, api_key=server.submit_key) as lb:
        once = lb.submit_score("kills", "dee", 3, idempotency_key="match-1-dee")
        again = lb.submit_score("kills", "dee", 3, idempotency_key="match-1-dee")
        total = lb.standing("kills", "all-time", "dee")["score"]

    assert once == again
    assert total == 3  # an increment board: a second application would say 6


def test_it_sends_any_number_of_scores_in_batches_of_a_thousand(server: Server) -> None:
    items = [{"leaderboard": "main", "player_id": f"bulk-{i}", "score": i} for i in range(1500)]
    items.append({"leaderboard": "nope", "player_id": "lost", "score": 1})
    with Client(server.url, game=GAME, api_key=server.submit_key) as lb:
        results = lb.submit_scores(items)  # type: ignore[arg-type]
        total = lb.page("main", "all-time", limit=1)["total"]

    assert len(results) == 1501
    assert results[1499]["player_id"] == "bulk-1499"  # type: ignore[typeddict-item]
    assert results[1500]["error"]["code"] == "board_not_found"  # type: ignore[typeddict-item]
    assert total >= 1500


def test_it_raises_the_apis_errors_as_typed_exceptions(server: Server) -> None:
    with Client(server.url, game=GAME, api_key=server.submit_key) as lb:
        with pytest.raises(Invalid) as invalid:
            lb.submit_score("main", "not valid!", 1)
        with pytest.raises(NotFound) as missing:
            lb.submit_score("nope", "ada", 1)
    with Client(server.url, game=GAME, api_key="lbk_0000.wrong") as stranger, pytest.raises(Unauthorized):
        stranger.submit_score("main", "ada", 1)

    assert (invalid.value.code, invalid.value.field, invalid.value.status) == ("invalid", "player_id", 422)
    assert missing.value.code == "board_not_found" and missing.value.request_id


def test_it_waits_as_long_as_retry_after_says_on_429(server: Server) -> None:
    policy = Recorded(max_wait_secs=5)
    with Client(server.url, game=GAME, api_key=server.slow_key, retry=policy) as lb:
        for i in range(62):  # a budget of 60 a minute: the 61st waits about a second
            lb.submit_score("main", f"burst-{i}", i)

    assert policy.waits and all(w is not None and 1 <= w <= 2 for w in policy.waits)  # type: ignore[attr-defined]


def test_it_gives_up_with_a_typed_error_when_the_wait_is_too_long(server: Server) -> None:
    impatient = RetryPolicy(max_wait_secs=0.1)
    with (
        Client(server.url, game=GAME, api_key=server.slow_key, retry=impatient) as lb,
        pytest.raises(RateLimited) as limited,
    ):
        for i in range(70):
            lb.submit_score("main", f"again-{i}", i)

    assert limited.value.retry_after is not None and limited.value.retry_after >= 1


def test_it_retries_a_read_when_nothing_answers_then_says_so() -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    policy = Recorded(max_retries=2, backoff_secs=0.01)
    with Client(dead, game=GAME, retry=policy) as lb, pytest.raises(TransportError) as failed:
        lb.page("main")

    assert failed.value.status == 0 and failed.value.code == "transport"
    assert policy.waits == [0.01, 0.02, None]  # type: ignore[attr-defined]  # two retries, then it gave up


def test_it_never_retries_an_unkeyed_write_that_may_have_been_applied() -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    with Client(dead, game=GAME) as lb, pytest.raises(TransportError):
        lb.report_presence(online=["ada"])  # a presence report has no key: sent once


def test_it_retries_a_claim_when_nothing_answers_since_a_repeat_answers_alike() -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    policy = Recorded(max_retries=1, backoff_secs=0.01)
    with Client(dead, game=GAME, retry=policy) as lb, pytest.raises(TransportError):
        lb.claim("grant_" + "x" * 22)
    assert policy.waits == [0.01, None]  # type: ignore[attr-defined]  # retried once, then it gave up


def test_it_does_everything_asynchronously_too(server: Server) -> None:
    async def scenario() -> None:
        async with AsyncClient(server.url, game=GAME, api_key=server.submit_key) as lb:
            scored = await lb.submit_score("main", "eve", 5000, display_name="Eve")
            batch = await lb.submit_scores([{"leaderboard": "kills", "player_id": "eve", "score": 2}])
            page = await lb.page("main", "all-time", limit=1)
            standing = await lb.standing("main", "all-time", "eve")
            friends = await lb.friends("main", "all-time", ["eve"])
            around = await lb.around("main", "all-time", "eve", radius=0)
            report = await lb.report_presence(online=["eve"])
            presence = await lb.player_presence("eve")
            others = (await lb.games(), await lb.game_info(), await lb.leaderboards(), await lb.recent())
            more = (await lb.presence(), await lb.player("eve"), await lb.find_players("Ev"))
            archived = await lb.archived_periods("main")
            code = await lb.link_code("eve")

        assert scored["periods"]["all-time"]["rank"] == 1
        assert batch[0]["player_id"] == "eve"  # type: ignore[typeddict-item]  # a ScoreResult here
        assert page["entries"][0]["player_id"] == "eve"
        assert standing["rank"] == friends["entries"][0]["rank"] == around["entries"][0]["rank"] == 1
        assert report["online"] == 1 and presence["online"] is True
        assert others[0] and more[2] == [{"player_id": "eve", "display_name": "Eve"}]
        assert archived["total"] == 0 and len(code["code"]) == 8

    asyncio.run(scenario())
