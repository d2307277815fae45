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
