"""Live views below the top: a page of a board from any offset (a visitor on page 40, a player's
neighbourhood) kept live as the top is.

The broadcaster's ``standings`` message carries a window's top rows (events.LIVE_LIMIT_MAX) to
every socket watching the window, once per tick in which it changed; a socket whose view lies
below those rows takes it as the news that the window changed and shows its own rows, read
here. Reads are shared by the process's sockets: one read per distinct view (board, period,
offset, limit) and version, however many sockets show that view, so the cost follows the views
watched, not the watchers. (Each web process reads the views its own sockets show; a busy
board's deep pages cost a read per view, process and changed tick.)
"""

from __future__ import annotations

import asyncio
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from core import config, metrics
from games import periods
from presence import selectors as presence_selectors

from .. import events, fanout, selectors

# Distinct deep views one process keeps a read of (a bound on its memory: a view read again
# after it was dropped costs one more read, nothing else).
DEEP_VIEWS_MAX = 10_000

ViewKey = tuple[str, str, str, int, int]  # board ref, window, period id, offset, limit


def shown_rows(payload: events.StandingsPayload, offset: int, limit: int) -> list[Any]:
    """What a socket showing ``limit`` rows from ``offset`` of a standings message shows (its
    version aside): two messages that give the same are the same to that socket."""
    return [payload["period_id"], payload["total"], payload["entries"][offset : offset + limit]]


@dataclass(frozen=True)
class DeepView:
    """One read of a deep view, encoded once for every socket of the process that shows it."""

    version: int
    frame: str  # the ``standings`` message as sent
    rows: str  # its shown_rows, encoded: what a socket compares with what it last showed


@dataclass
class _Read:
    version: int  # the standings version that asked for it: the read is at least as new
    task: asyncio.Future[DeepView]


class DeepPages:
    """The reads of one process's deep views, newest per view."""

    def __init__(self) -> None:
        self._reads: OrderedDict[ViewKey, _Read] = OrderedDict()

    async def page(
        self,
        *,
        game: config.GameConfig,
        board: config.BoardConfig,
        period: periods.Period,
        offset: int,
        limit: int,
        version: int,
    ) -> DeepView:
        """The view's rows as a ``standings`` message of version ``version`` or newer."""
        key: ViewKey = (board.ref, period.kind, period.id, offset, limit)
        found = self._reads.get(key)
        if found is None or found.version < version or _failed(found.task):
            found = _Read(version, asyncio.ensure_future(_read(game, board, period, offset, limit)))
            self._reads[key] = found
            while len(self._reads) > DEEP_VIEWS_MAX:
                self._reads.popitem(last=False)
        self._reads.move_to_end(key)
        # Shielded: a socket that goes away mid-read does not cancel the read its peers await.
        return await asyncio.shield(found.task)


def _failed(task: asyncio.Future[DeepView]) -> bool:
    return task.done() and (task.cancelled() or task.exception() is not None)


async def _read(
    game: config.GameConfig, board: config.BoardConfig, period: periods.Period, offset: int, limit: int
) -> DeepView:
    page, version = await selectors.board_snapshot(
        board=board, period=period, limit=limit, next_version=False, offset=offset
    )
    online = await presence_selectors.online_among(game=game, player_ids=[e.player_id for e in page.entries])
    metrics.LIVE_DEEP_READS.inc()
    message = events.standings(board, page, version, online, offset=offset)
    # Encoded here, once per read: a socket's part is a comparison and a queued string.
    return DeepView(version=version, frame=fanout.encode(message), rows=fanout.encode(shown_rows(message, 0, limit)))


_pages: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, DeepPages] = weakref.WeakKeyDictionary()


def deep_pages() -> DeepPages:
    """The running process's (event loop's) deep views."""
    loop = asyncio.get_running_loop()
    found = _pages.get(loop)
    if found is None:
        found = _pages[loop] = DeepPages()
    return found
