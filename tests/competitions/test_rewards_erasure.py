"""An erased player's rewards and league tiers go with them, their settled entries keep their
place under a stand-in id, everyone else's stay; a deleted game's go with it
(moderation/services.py, issue 22's records)."""

from __future__ import annotations

import pytest

from competitions.models import Grant, LeagueStanding, SettledEntry
from competitions.services.league import TierMoveSpec
from competitions.services.rewards import GrantSpec
from core.audit import Actor
from core.models import ERASED_PLAYER_PREFIX, AuditEntry, Game
from moderation import services as moderation
from tests.competitions.settled import competing_game, granted, settled

pytestmark = pytest.mark.django_db(transaction=True)


def rewarded_league() -> Game:
    """Game 'cup': ada and bob rewarded, settled and placed; game 'rival': another ada, rewarded."""
    game, board, _ = competing_game(board="league")
    granted(board, GrantSpec("ada", 1, {"coins": 5}), GrantSpec("bob", 2, {"coins": 1}))
    settled(
        board,
        TierMoveSpec("ada", "silver", "gold", 1, "silver-1", 1),
        TierMoveSpec("bob", "silver", "silver", 0, "silver-1", 2),
    )
    _, rival_board, _ = competing_game("rival", board="league")
    granted(rival_board, GrantSpec("ada", 1, {"coins": 5}))
    return game


def test_it_erases_a_players_rewards_and_league_records_and_keeps_everyone_elses() -> None:
    game = rewarded_league()

    erased = moderation.player_erase(game=game, player_id="ada", reason="GDPR request #3", by=Actor("dpo"))

    # Their tier and their one settled entry.
    assert (erased.other["rewards"], erased.other["league records"]) == (1, 2)
    assert not Grant.objects.filter(game=game, player_id="ada").exists()
    assert not LeagueStanding.objects.filter(board__game=game, player_id="ada").exists()
    # The cohort's ranks stay whole: rank 1 is held by a stand-in no lookup finds.
    entries = list(SettledEntry.objects.order_by("rank").values_list("player_id", "rank", "tier_after"))
    assert [rank for _, rank, _ in entries] == [1, 2] and entries[1] == ("bob", 2, "silver")
    assert entries[0][0].startswith(ERASED_PLAYER_PREFIX) and entries[0][2] == "gold"
    assert Grant.objects.filter(game=game, player_id="bob").exists()
    assert Grant.objects.filter(game__slug="rival", player_id="ada").exists()  # another game's ada
    entry = AuditEntry.objects.get(action=AuditEntry.Action.ERASE)
    assert (entry.detail["rewards"], entry.detail["league records"]) == (1, 2)


def test_it_deletes_a_games_rewards_and_league_records_with_it() -> None:
    game = rewarded_league()

    deleted = moderation.game_delete(game=game, reason="a test game", by=Actor("ops"))

    assert (deleted.rows["rewards"], deleted.rows["league tiers"]) == (2, 1)
    assert (deleted.rows["settled entries"], deleted.rows["settlements"]) == (2, 1)
    assert list(Grant.objects.values_list("game__slug", "player_id")) == [("rival", "ada")]
    assert not LeagueStanding.objects.exists() and not SettledEntry.objects.exists()
