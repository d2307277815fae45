"""What a user of the time suite's stack does: the API over HTTP, a websocket that keeps what it
receives, and waiting for either to show something."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import httpx
from websockets.asyncio.client import ClientConnection, connect
from websockets.typing import Origin

from core.clock import iso
from tests.time.stack import Game, Stack

T = TypeVar("T")
Message = dict[str, Any]

# How long a live message may take to arrive (a few ticks, and a loaded 2-core machine).
LIVE_TIMEOUT_SECS = 10.0
# How long a finished period may take to be archived: its grace, the close-job interval, the run.
ARCHIVE_TIMEOUT_SECS = 45.0
POLL_SECS = 0.25


class Watcher:
    """A websocket on the stack's websocket worker that keeps every message it receives."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.messages: list[Message] = []
        self._arrived = asyncio.Event()
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for raw in self.ws:
            self.messages.append(json.loads(raw))
            self._arrived.set()

    async def send(self, message: Message) -> None:
        await self.ws.send(json.dumps(message))

    async def subscribe(self, board: str, period: str) -> Message:
        """Subscribe, and return the snapshot."""
        await self.send({"action": "subscribe", "leaderboard": board, "period": period, "limit": 10})
        return await self.wait_for(lambda m: m["type"] == "standings" and m["period"] == period)

    def of(self, kind: str, **fields: Any) -> list[Message]:
        return [m for m in self.messages if m["type"] == kind and all(m.get(k) == v for k, v in fields.items())]

    async def wait_for(self, predicate: Callable[[Message], bool], timeout: float = LIVE_TIMEOUT_SECS) -> Message:
        """The first message (received so far or later) that matches."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            found = next((m for m in self.messages if predicate(m)), None)
            if found is not None:
                return found
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0 or self._reader.done():
                raise AssertionError(f"no such message within {timeout} s; received: {self.messages[-10:]}")
            self._arrived.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._arrived.wait(), remaining)


@contextlib.asynccontextmanager
async def watch(stack: Stack, game: str) -> AsyncIterator[Watcher]:
    async with connect(f"{stack.ws_url}/ws/games/{game}/", origin=Origin(stack.web_url)) as ws:
        watcher = Watcher(ws)
        try:
            yield watcher
        finally:
            watcher._reader.cancel()


@contextlib.asynccontextmanager
async def api(stack: Stack) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=f"{stack.web_url}/api/v1", timeout=10) as client:
        yield client


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def put_board(
    http: httpx.AsyncClient,
    game: Game,
    board: str,
    *,
    windows: list[str],
    season: tuple[dt.datetime, dt.datetime] | None = None,
    **settings: Any,
) -> Message:
    body: Message = {"mode": "best", "order": "desc", "windows": windows, **settings}
    if season is not None:
        body.update(starts_at=iso(season[0]), ends_at=iso(season[1]))
    response = await http.put(f"/games/{game.slug}/leaderboards/{board}", json=body, headers=bearer(game.manage_key))
    assert response.status_code == 200, response.text
    return dict(response.json())


async def post_score(http: httpx.AsyncClient, game: Game, board: str, player: str, score: int) -> httpx.Response:
    return await http.post(
        f"/games/{game.slug}/leaderboards/{board}/scores",
        json={"player_id": player, "score": score},
        headers=bearer(game.submit_key),
    )


async def page(http: httpx.AsyncClient, game: str, board: str, period: str, period_id: str = "") -> Message:
    path = f"/games/{game}/leaderboards/{board}/{period}" + (f"/{period_id}" if period_id else "")
    response = await http.get(path)
    assert response.status_code == 200, response.text
    return dict(response.json())


async def archived(http: httpx.AsyncClient, game: str, board: str) -> list[tuple[str, str]]:
    """(period, period_id) of each archived period of a board, as the API lists them."""
    response = await http.get(f"/games/{game}/leaderboards/{board}/periods", params={"limit": 200})
    assert response.status_code == 200, response.text
    return [(p["period"], p["period_id"]) for p in response.json()["periods"]]


async def all_listed(http: httpx.AsyncClient, game: str, board: str, wanted: set[tuple[str, str]]) -> bool | None:
    """True once every (period, period_id) in ``wanted`` is listed as archived (None until then);
    a period listed twice fails at once."""
    listed = await archived(http, game, board)
    assert len(listed) == len(set(listed)), listed
    return True if wanted <= set(listed) else None


async def eventually(check: Callable[[], Awaitable[T | None]], timeout: float, what: str) -> T:
    """Poll ``check`` until it returns something other than None."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        found = await check()
        if found is not None:
            return found
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s")
        await asyncio.sleep(POLL_SECS)


async def until(stack: Stack, instant: dt.datetime) -> None:
    """Wait (real time) until the stack's clock reads ``instant``."""
    remaining = (instant - stack.now()).total_seconds()
    if remaining > 0:
        await asyncio.sleep(remaining)


async def move_to(stack: Stack, instant: dt.datetime) -> None:
    await asyncio.to_thread(stack.move_to, instant)


# Each process, idle, uses less than this share of one core (measured over IDLE_SAMPLE_SECS):
# "a few %". Idle, they use 0-2%; the Celery worker up to 5% just after a jump of the clock, when
# every periodic task falls due at once. The season-end bug spun the broadcaster at 50-100%.
IDLE_CPU_MAX = 0.08
IDLE_SAMPLE_SECS = 4.0


async def assert_idle(stack: Stack, *only: str) -> dict[str, float]:
    """Every process (or those named) is idle again: none uses IDLE_CPU_MAX of a core or more."""
    stack.check_alive()
    shares = await asyncio.to_thread(stack.cpu_shares, IDLE_SAMPLE_SECS)
    print(f"CPU share of a core over {IDLE_SAMPLE_SECS} s: {shares}")  # shown with -s, and on a failure
    busy = {name: round(shares[name], 3) for name in only or shares if shares[name] >= IDLE_CPU_MAX}
    assert not busy, f"processes not idle (share of a core over {IDLE_SAMPLE_SECS} s): {busy}; all: {shares}"
    return shares
