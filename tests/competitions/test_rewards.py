"""Rewards as the settlement grants them and game servers claim them (issue 22): once per player
and period however often a settlement runs, pending until claimed exactly once, expired from the
end of the claim window (by time at once, marked by the sweep later), each fact with its event
written in its transaction."""

from __future__ import annotations

import datetime as dt
import threading
from typing import Any

import pytest
from django.db import connection, transaction

from competitions import tasks
from competitions.models import Grant
from competitions.services import rewards
from competitions.services.rewards import GrantSpec
from core import clock
from core.errors import ServiceError
from core.models import Event, Leaderboard
from tests.competitions.settled import CLAIM_WINDOW, WEEK, competing_game, events, granted
from tests.conftest import T0, clock_at

pytestmark = pytest.mark.django_db(transaction=True)

ADA = GrantSpec("ada", 1, {"coins": 500, "badge": "cup-winner"})
BOB = GrantSpec("bob", 2, {"coins": 200})
CY = GrantSpec("cy", 3, {"coins": 100}, cohort="w10-1", tier="silver")
CLAIMERS = 20


def grant_of(player_id: str) -> Grant:
    return Grant.objects.get(player_id=player_id)


def claim(game: Any, grant_id: str, at: dt.datetime | None = None) -> Grant:
    return rewards.grant_claim(game=game, grant_id=grant_id, now=at or clock.now())


def refusal(call: Any) -> tuple[int, str]:
    with pytest.raises(ServiceError) as refused:
        call()
    return refused.value.status, refused.value.code


def test_it_grants_each_player_their_reward_for_the_period_with_an_event_each() -> None:
    game, board, _ = competing_game()

    assert granted(board, ADA, BOB, CY) == 3

    cy = grant_of("cy")
    assert (cy.game_id, cy.board_id, cy.window, cy.period_id) == (game.id, board.id, "weekly", WEEK)
    assert (cy.rank, cy.reward, cy.cohort, cy.tier, cy.status) == (3, {"coins": 100}, "w10-1", "silver", "pending")
    assert (cy.granted_at, cy.expires_at, cy.claimed_at) == (T0, T0 + CLAIM_WINDOW, None)
    assert cy.grant_id.startswith("grant_") and rewards.is_grant_id(cy.grant_id)
    assert len({g.grant_id for g in Grant.objects.all()}) == 3
    sent = {e["data"]["player_id"]: e["data"] for e in events("reward.granted")}
    assert set(sent) == {"ada", "bob", "cy"}
    assert sent["cy"] == {
        "game": "cup",
        "leaderboard": "weekly",
        "window": "weekly",
        "period_id": WEEK,
        "player_id": "cy",
        "grant_id": cy.grant_id,
        "cohort": "w10-1",
        "tier": "silver",
        "rank": 3,
        "reward": {"coins": 100},
        "granted_at": "2026-03-04T12:00:00.000Z",
        "expires_at": "2026-04-03T12:00:00.000Z",
    }


def test_it_creates_nothing_new_when_a_periods_grants_are_made_again() -> None:
    _, board, _ = competing_game()
    granted(board, ADA, BOB)
    first = {g.player_id: (g.grant_id, g.granted_at, g.reward) for g in Grant.objects.all()}

    with clock_at(T0 + dt.timedelta(minutes=5)):
        again = granted(board, GrantSpec("ada", 1, {"coins": 9999}), BOB, CY)

    assert again == 1  # cy only
    after = {g.player_id: (g.grant_id, g.granted_at, g.reward) for g in Grant.objects.all()}
    assert {p: after[p] for p in first} == first  # ada's and bob's grants stand as they were
    assert after["cy"][1] == T0 + dt.timedelta(minutes=5)
    assert [e["data"]["player_id"] for e in events("reward.granted")] == ["ada", "bob", "cy"]
    assert granted(board, ADA, BOB, CY) == 0
    assert granted(board, ADA, period_id="2026-W11") == 1  # the next period is another reward


def test_it_rolls_back_grants_and_their_events_with_the_settlements_transaction() -> None:
    _, board, _ = competing_game()

    with pytest.raises(RuntimeError, match="settlement failed"), transaction.atomic():
        rewards.grants_create(board=board, window="weekly", period_id=WEEK, grants=[ADA, BOB], now=clock.now())
        raise RuntimeError("settlement failed")

    assert not Grant.objects.exists() and not Event.objects.exists()


def test_it_refuses_to_grant_outside_the_callers_transaction() -> None:
    _, board, _ = competing_game()
    with pytest.raises(RuntimeError, match="inside the settlement's transaction"):
        rewards.grants_create(board=board, window="weekly", period_id=WEEK, grants=[ADA], now=clock.now())
    assert not Grant.objects.exists()


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        (GrantSpec("bad id!", 1, {"coins": 1}), "not a player id"),
        (GrantSpec("ada", 0, {"coins": 1}), "no rank"),
        (GrantSpec("ada", True, {"coins": 1}), "no rank"),
        (GrantSpec("ada", 1, {}), "non-empty JSON object"),
        (GrantSpec("ada", 1, {"blob": "x" * 1100}), "over 1,024 bytes"),
        (GrantSpec("ada", 1, {"coins": 1}, tier="Gold Tier"), "no tier slug"),
        (GrantSpec("ada", 1, {"coins": 1}, cohort="c" * 65), "a cohort is at most"),
        (GrantSpec("bob", 2, {"coins": 1}), "granted twice"),
    ],
)
def test_it_refuses_a_grant_the_rules_cannot_give_and_writes_nothing(spec: GrantSpec, problem: str) -> None:
    _, board, _ = competing_game()
    with pytest.raises(ValueError, match=problem):
        granted(board, GrantSpec("bob", 1, {"coins": 1}), spec)
    assert not Grant.objects.exists() and not Event.objects.exists()


def test_it_refuses_grants_for_a_board_that_runs_no_competition() -> None:
    game, _, _ = competing_game()
    plain = Leaderboard.objects.create(game=game, slug="plain", name="Plain", windows=["weekly"])
    assert refusal(lambda: granted(plain, ADA)) == (409, "not_competing")


def test_it_claims_a_pending_reward_once_and_answers_every_repeat_with_the_same_claim() -> None:
    game, board, _ = competing_game()
    granted(board, ADA, BOB)
    ada = grant_of("ada")

    claimed = claim(game, ada.grant_id, T0 + dt.timedelta(days=1))
    again = claim(game, ada.grant_id, T0 + dt.timedelta(days=2))

    assert (claimed.status, claimed.claimed_at) == ("claimed", T0 + dt.timedelta(days=1))
    assert (again.status, again.claimed_at) == ("claimed", T0 + dt.timedelta(days=1))
    assert grant_of("bob").status == "pending"
    (event,) = events("reward.claimed")
    assert event["data"] == {
        "game": "cup",
        "leaderboard": "weekly",
        "window": "weekly",
        "period_id": WEEK,
        "player_id": "ada",
        "grant_id": ada.grant_id,
        "reward": {"coins": 500, "badge": "cup-winner"},
        "claimed_at": "2026-03-05T12:00:00.000Z",
    }
    # Claimed before its window ended, it stays claimed after: the answer does not change.
    assert claim(game, ada.grant_id, ada.expires_at + dt.timedelta(days=1)).claimed_at == claimed.claimed_at


def test_it_claims_a_reward_once_when_many_claims_race_in_the_database() -> None:
    # Each claim in a thread of its own, with its own connection and transaction (the real
    # server's 100 at once: test_reward_claims_at_once.py).
    game, board, _ = competing_game()
    granted(board, ADA)
    grant_id = grant_of("ada").grant_id
    start = threading.Barrier(CLAIMERS)
    answers: list[dt.datetime | None] = []

    def claimer() -> None:
        try:
            start.wait()
            answers.append(claim(game, grant_id).claimed_at)
        finally:
            connection.close()

    threads = [threading.Thread(target=claimer) for _ in range(CLAIMERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert answers == [T0] * CLAIMERS
    assert len(events("reward.claimed")) == 1


def test_it_refuses_a_claim_from_the_moment_the_window_ends_swept_or_not() -> None:
    game, board, _ = competing_game()
    granted(board, ADA, BOB)
    ada, bob = grant_of("ada"), grant_of("bob")
    ends = ada.expires_at

    assert claim(game, bob.grant_id, ends - dt.timedelta(milliseconds=1)).status == "claimed"
    assert refusal(lambda: claim(game, ada.grant_id, ends)) == (410, "reward_expired")
    assert grant_of("ada").status == "pending"  # refused by time alone; the sweep marks it
    assert rewards.grants_expire(now=ends, limit=100) == 1
    assert refusal(lambda: claim(game, ada.grant_id, ends + dt.timedelta(hours=1))) == (410, "reward_expired")

    assert [e["data"]["player_id"] for e in events("reward.claimed")] == ["bob"]
    assert [e["data"]["player_id"] for e in events("reward.expired")] == ["ada"]
    assert (grant_of("ada").status, grant_of("ada").claimed_at) == ("expired", None)


def test_it_finds_no_reward_of_another_game_nor_one_never_granted() -> None:
    _, board, _ = competing_game()
    rival, _, _ = competing_game("rival")
    granted(board, ADA)
    ada = grant_of("ada")

    assert refusal(lambda: claim(rival, ada.grant_id)) == (404, "reward_not_found")
    assert refusal(lambda: claim(rival, "grant_" + "A" * 22)) == (404, "reward_not_found")
    assert grant_of("ada").status == "pending" and not events("reward.claimed")


@pytest.mark.parametrize("grant_id", ["", "grant_", "grant_short", "grant_" + "A" * 23, "GRANT_" + "A" * 22, "a b"])
def test_it_refuses_a_malformed_reward_id_naming_it(grant_id: str) -> None:
    game, _, _ = competing_game()
    with pytest.raises(ServiceError) as refused:
        claim(game, grant_id)
    assert (refused.value.status, refused.value.code, refused.value.field) == (422, "invalid", "grant_id")


def test_it_expires_pending_rewards_past_their_window_oldest_first_in_bounded_batches(monkeypatch) -> None:
    monkeypatch.setattr(rewards, "GRANT_EXPIRE_BATCH", 2)
    game, board, _ = competing_game()
    players = [f"p{i}" for i in range(7)]
    for day, player in enumerate(players):
        granted(board, GrantSpec(player, 1, {"coins": 1}), period_id=f"week-{day}", now=T0 + dt.timedelta(days=day))
    claim(game, grant_of("p1").grant_id)
    sweep_at = T0 + CLAIM_WINDOW + dt.timedelta(days=4)  # p0..p4's windows have ended (p1 was claimed)

    assert rewards.grants_expire(now=sweep_at, limit=3) == 3
    assert {g.player_id for g in Grant.objects.filter(status="expired")} == {"p0", "p2", "p3"}
    assert rewards.grants_expire(now=sweep_at, limit=100) == 1  # p4
    assert rewards.grants_expire(now=sweep_at, limit=100) == 0

    statuses = {g.player_id: g.status for g in Grant.objects.all()}
    assert statuses == {"p0": "expired", "p1": "claimed", "p2": "expired", "p3": "expired", "p4": "expired"} | {
        "p5": "pending",
        "p6": "pending",
    }
    expired = events("reward.expired")
    assert [e["data"]["player_id"] for e in expired] == ["p0", "p2", "p3", "p4"]
    assert expired[0]["data"]["expires_at"] == clock.iso(T0 + CLAIM_WINDOW)
    assert expired[0]["data"]["expired_at"] == clock.iso(sweep_at)


def test_it_runs_the_expiry_sweep_from_beat_on_the_clock() -> None:
    from leaderboard_site.schedule import BEAT_SCHEDULE

    entry = BEAT_SCHEDULE["expire-reward-grants"]
    assert entry["task"] == "competitions.tasks.expire_grants"
    _, board, _ = competing_game()
    granted(board, ADA, now=T0 - CLAIM_WINDOW)  # its window ends now
    granted(board, BOB, period_id="2026-W11")

    assert tasks.expire_grants() == 1
    assert {g.player_id: g.status for g in Grant.objects.all()} == {"ada": "expired", "bob": "pending"}
