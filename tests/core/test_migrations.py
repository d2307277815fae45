"""The leaderboards migration: every existing game's board settings move to a board
``main`` and nothing is lost; going back restores them."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("core", "0005_audit_trail")]
AFTER = [("core", "0006_leaderboards")]


def migrate(targets: list[tuple[str, str]]):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def test_it_moves_each_games_board_settings_to_a_main_board_and_back():
    old = migrate(BEFORE)
    Game = old.get_model("core", "Game")
    ApiKey = old.get_model("core", "ApiKey")
    racer = Game.objects.create(
        slug="racer",
        name="Racer",
        mode="best",
        order="asc",
        periods=["weekly", "all-time"],
        timezone="Europe/Paris",
        min_score=1,
        max_score=600_000,
    )
    Game.objects.create(slug="clicker", name="Clicker", mode="increment", order="desc", periods=["daily"])
    ApiKey.objects.create(game=racer, prefix="abcd1234", secret_hash="x" * 64)

    new = migrate(AFTER)
    Leaderboard = new.get_model("core", "Leaderboard")
    boards = {b.game.slug: b for b in Leaderboard.objects.select_related("game")}
    assert set(boards) == {"racer", "clicker"}
    main = boards["racer"]
    assert (main.slug, main.name, main.mode, main.order, main.windows) == (
        "main",
        "Racer",
        "best",
        "asc",
        ["weekly", "all-time"],
    )
    assert (main.min_score, main.max_score, main.timezone, main.game.timezone) == (1, 600_000, "", "Europe/Paris")
    assert (main.ties, main.format, main.cron, main.active) == ("shared", "integer", "", True)
    assert main.created_at == main.game.created_at
    assert (boards["clicker"].mode, boards["clicker"].windows) == ("increment", ["daily"])
    assert new.get_model("core", "ApiKey").objects.get().scope == "submit"

    back = migrate(BEFORE)
    restored = back.get_model("core", "Game").objects.get(slug="racer")
    assert (restored.mode, restored.order, restored.periods, restored.min_score, restored.max_score) == (
        "best",
        "asc",
        ["weekly", "all-time"],
        1,
        600_000,
    )
    migrate(executor_leaf_nodes())


def executor_leaf_nodes() -> list[tuple[str, str]]:
    """Every app at its latest migration, as the rest of the suite expects."""
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


def test_it_gives_archives_ledger_rows_and_redis_state_to_the_main_board():
    """archive 0005: a game's archives and ledger rows become its 'main' board's, and its Redis
    state moves from {game} to {game.main} keys (boards and their index, ledger stream, close
    jobs, anti-spam), the hidden players are copied, old idempotency records dropped."""
    from core.redis import get_redis, run_sync

    old = migrate([("archive", "0004_text_and_player_id_checks"), ("core", "0006_leaderboards")])
    Game = old.get_model("core", "Game")
    Leaderboard = old.get_model("core", "Leaderboard")
    game = Game.objects.create(slug="racer", name="Racer")
    Leaderboard.objects.create(game=game, slug="main", name="Racer", windows=["daily", "all-time"])
    old.get_model("archive", "ArchivedPeriod").objects.create(
        game=game, period="daily", period_id="2026-03-03", starts_at="2026-03-03T00:00Z", ends_at="2026-03-04T00:00Z"
    )
    old.get_model("archive", "ScoreEvent").objects.create(
        game=game,
        event_id="1-0",
        stream_ms=1,
        stream_seq=0,
        player_id="a",
        value=5,
        mode="best",
        at="2026-03-04T00:00Z",
    )

    async def old_layout() -> None:
        client = get_redis()
        await client.zadd("lb:{racer}:daily:2026-03-04", {"a": -5})
        await client.zadd("lb:{racer}:boards", {"lb:{racer}:daily:2026-03-04": float("inf")})
        await client.xadd("lb:{racer}:events", {"k": "submit", "p": "a"})
        await client.zadd("jobs:{racer}:close:due", {"daily:2026-03-04": 1})
        await client.hset("lb:{racer}:names", "a", "Ann")
        await client.sadd("lb:{racer}:hidden", "cheat")
        await client.set("idem:{racer}:abcd:0123", "old reply")

    run_sync(old_layout)
    new = migrate([("archive", "0005_per_board")])

    board = new.get_model("core", "Leaderboard").objects.get()
    assert new.get_model("archive", "ArchivedPeriod").objects.get().leaderboard_id == board.pk
    assert new.get_model("archive", "ScoreEvent").objects.get().leaderboard_id == board.pk

    async def new_layout() -> dict[str, object]:
        client = get_redis()
        return {
            "board": await client.zrange("lb:{racer.main}:daily:2026-03-04", 0, -1, withscores=True),
            "index": await client.zrange("lb:{racer.main}:boards", 0, -1),
            "ledger": await client.xlen("lb:{racer.main}:events"),
            "jobs": await client.zrange("jobs:{racer.main}:close:due", 0, -1),
            "names": await client.hgetall("lb:{racer}:names"),
            "hidden": await client.smembers("lb:{racer.main}:hidden"),
            "left": sorted([k async for k in client.scan_iter(match="*{racer}*")]),
        }

    assert run_sync(new_layout) == {
        "board": [("a", -5.0)],
        "index": ["lb:{racer.main}:daily:2026-03-04"],
        "ledger": 1,
        "jobs": ["daily:2026-03-04"],
        "names": {"a": "Ann"},
        "hidden": {"cheat"},
        "left": ["lb:{racer}:hidden", "lb:{racer}:names"],
    }
    migrate(executor_leaf_nodes())
