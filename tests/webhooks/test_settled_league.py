"""What issue 23 is done by: a studio registers an endpoint over the API, and a league week's
settlement reaches its server signed (verified by the ``standardwebhooks`` library): the
period.settled with its cohorts and moves, each tier.changed and reward.granted, and the
period.archived with the final top; every one of them also in the game's event log."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from core import outbox
from tests.competitions.test_settlement import GRACE, LEAGUE, MONDAY, NEXT_MONDAY, WEEK, close_jobs_at, ok, play
from tests.competitions.test_settlement import lg as lg  # the fixture
from tests.conftest import auth, clock_at

from .helpers import run_once
from .receiver import Receiver

pytestmark = pytest.mark.django_db(transaction=True)


def test_it_delivers_a_settled_league_week_to_the_studios_server_signed(lg: Any) -> None:
    _, manage, submit = lg
    receiver = Receiver()
    with receiver.running():
        made = Client().post(
            "/api/v1/games/lg/webhooks",
            {
                "url": receiver.url,
                "event_types": ["period.settled", "tier.changed", "reward.granted", "period.archived"],
            },
            content_type="application/json",
            headers=auth(manage),
        )
        assert made.status_code == 201, made.content
        receiver.secrets.append(made.json()["secret"])
        with clock_at(MONDAY):
            ok("put", "/league", manage, LEAGUE)
        with clock_at(MONDAY + GRACE):
            play(submit, "league", {"p1": 30, "p2": 20, "p3": 10, "p4": 5, "p5": 50, "p6": None})
        assert close_jobs_at(NEXT_MONDAY + GRACE) == 1
        with clock_at(NEXT_MONDAY + GRACE):
            result = run_once(budget_secs=3)

    assert receiver.refused == []
    assert result.delivered == len(receiver.received) == 1 + 4 + 2 + 1
    by_type: dict[str, list[dict[str, Any]]] = {}
    for event in receiver.events():
        outbox.envelope_check(event)
        by_type.setdefault(event["type"], []).append(event["data"])
    (week,) = by_type["period.settled"]
    assert (week["period_id"], week["entrants"], week["cohorts"], week["promoted"], week["demoted"]) == (
        WEEK,
        6,
        2,
        2,
        2,
    )
    assert week["settlement"] == f"/api/v1/games/lg/leaderboards/league/weekly/{WEEK}/settlement"
    assert sorted((m["player_id"], m["from_tier"], m["to_tier"]) for m in by_type["tier.changed"]) == [
        ("p1", "silver", "gold"),
        ("p3", "silver", "bronze"),
        ("p5", "silver", "gold"),
        ("p6", "silver", "bronze"),
    ]
    assert sorted((g["player_id"], g["reward"]["coins"]) for g in by_type["reward.granted"]) == [
        ("p1", 100),
        ("p5", 100),
    ]
    (archived,) = by_type["period.archived"]
    assert [(t["rank"], t["player_id"]) for t in archived["top"][:2]] == [(1, "p5"), (2, "p1")]
    logged = Client().get("/api/v1/games/lg/webhooks/events?limit=100", headers=auth(manage)).json()
    assert set(receiver.ids()) <= {event["id"] for event in logged["events"]}
