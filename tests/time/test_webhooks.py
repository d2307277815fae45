"""A studio's receiver down for three days, with every process running on a clock the test moves
(issue 23): the game's events of those days (test events asked for by API, and each day's
period.archived) are attempted, fail and wait on the retry schedule; once the receiver is back,
every one of them reaches it, signed (verified by the ``standardwebhooks`` library against the
moved clock), and the endpoint is healthy again; then every process is idle.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

import httpx
import pytest

from leaderboard_site import processes
from tests.time.client import api, assert_idle, bearer, eventually, move_to, post_score, put_board
from tests.time.stack import Game, Stack
from tests.webhooks.receiver import Receiver

pytestmark = [pytest.mark.time, pytest.mark.wall_clock]

# When, in hours after the start, a test event is asked for (and a score posted) while the
# receiver is down; it is back at DOWN_HOURS; the clock then goes on to AFTER_HOURS, past the
# next attempt of every delivery (a day and 10% at most after its last).
ASKED_AT_HOURS = (0, 6, 20, 30, 45, 60, 71)
DOWN_HOURS = 72
AFTER_HOURS = (78, 88, 100)
# Beat's delivery run comes every 2 s; a loaded machine may take a few more.
DELIVERY_TIMEOUT_SECS = 60.0


async def _json(response: httpx.Response) -> Any:
    assert response.status_code in (200, 201, 202), response.text
    return response.json()


async def _logged(http: httpx.AsyncClient, game: Game, since: str) -> set[str]:
    """Every event id of the game's event log from ``since`` (paged)."""
    ids: set[str] = set()
    params: dict[str, Any] = {"since": since, "limit": 100}
    while True:
        page = await _json(
            await http.get(f"/games/{game.slug}/webhooks/events", params=params, headers=bearer(game.manage_key))
        )
        ids |= {event["id"] for event in page["events"]}
        if page["next_after"] is None:
            return ids
        params = {"after": page["next_after"], "limit": 100}


async def test_it_delivers_every_event_to_a_receiver_down_for_three_days_once_it_is_back(stack: Stack) -> None:
    game = await asyncio.to_thread(stack.make_game, "hooks")
    port = processes.free_port()
    start = stack.now()
    async with api(stack) as http:
        await put_board(http, game, "main", windows=["daily"])
        made = await _json(
            await http.post(
                "/games/hooks/webhooks", json={"url": f"http://127.0.0.1:{port}/hooks"}, headers=bearer(game.manage_key)
            )
        )
        path = f"/games/hooks/webhooks/{made['endpoint_id']}"
        asked = []
        for hours in ASKED_AT_HOURS:
            if hours:
                await move_to(stack, start + dt.timedelta(hours=hours))
            asked.append((await _json(await http.post(f"{path}/test", headers=bearer(game.manage_key))))["event_id"])
            assert (await post_score(http, game, "main", f"p{hours}", hours)).status_code == 200

        async def failing() -> Any:
            health = (await _json(await http.get(path, headers=bearer(game.manage_key))))["health"]
            return health if health["failure_streak"] >= len(ASKED_AT_HOURS) else None

        down = await eventually(failing, DELIVERY_TIMEOUT_SECS, "the failed attempts while the receiver is down")
        assert down["last_success_at"] is None and "ConnectError" in down["last_error"]

        await move_to(stack, start + dt.timedelta(hours=DOWN_HOURS))
        # The test's clock jumps ahead of the processes' for up to a second at each move (they read
        # the offset file again then), and a move is up to 12 h: a request signed just before a
        # move may arrive just after it.
        receiver = Receiver(made["secret"], now=stack.now, tolerance=dt.timedelta(hours=13), port=port)
        with receiver.running():
            for hours in AFTER_HOURS:
                await move_to(stack, start + dt.timedelta(hours=hours))
            since = (start - dt.timedelta(minutes=1)).isoformat()
            logged = await _logged(http, game, since)
            assert set(asked) <= logged
            assert any(True for _ in logged - set(asked))  # the days' period.archived too

            async def all_received() -> bool | None:
                return True if set(receiver.ids()) >= logged else None

            try:
                await eventually(all_received, DELIVERY_TIMEOUT_SECS, "every event at the receiver")
            except AssertionError:  # say which, and how their deliveries stand
                state = await http.get(f"{path}/deliveries?limit=100", headers=bearer(game.manage_key))
                missing = sorted(logged - set(receiver.ids()))
                raise AssertionError((missing, receiver.refused[:2], stack.now(), state.json())) from None
        assert receiver.refused == []
        types = {event["type"] for event in receiver.events()}
        assert {"webhook.test", "period.archived"} <= types

        listed = await _json(await http.get(f"{path}/deliveries?limit=100", headers=bearer(game.manage_key)))
        assert listed["total"] == len(logged)
        assert {d["status"] for d in listed["deliveries"]} == {"delivered"}
        health = (await _json(await http.get(path, headers=bearer(game.manage_key))))["health"]
        assert health["failure_streak"] == 0 and health["failing_since"] is None
    await assert_idle(stack)
