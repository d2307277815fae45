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

from core import config, metrics
from games import periods
from presence import selectors as presence_selectors

from .. import events, selectors

# Distinct deep views one process keeps a read of (a bound on its memory: a view read again
# after it was dropped costs one more read, nothing else).
DEEP_VIEWS_MAX = 10_000

ViewKey = tuple[str, str, str, int, int]  # board ref, window, period id, offset, limit


@dataclass
class _Read:
    version: int  # the standings version that asked for it: the read is at least as new
    task: asyncio.Future[events.StandingsPayload]


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
    ) -> events.StandingsPayload:
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


def _failed(task: asyncio.Future[events.StandingsPayload]) -> bool:
    return task.done() and (task.cancelled() or task.exception() is not None)


async def _read(
    game: config.GameConfig, board: config.BoardConfig, period: periods.Period, offset: int, limit: int
) -> events.StandingsPayload:
    page, version = await selectors.board_snapshot(
        board=board, period=period, limit=limit, next_version=False, offset=offset
    )
    online = await presence_selectors.online_among(game=game, player_ids=[e.player_id for e in page.entries])
    metrics.LIVE_DEEP_READS.inc()
    return events.standings(board, page, version, online, offset=offset)


_pages: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, DeepPages] = weakref.WeakKeyDictionary()


def deep_pages() -> DeepPages:
    """The running process's (event loop's) deep views."""
    loop = asyncio.get_running_loop()
    found = _pages.get(loop)
    if found is None:
        found = _pages[loop] = DeepPages()
    return found
