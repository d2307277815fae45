"""The home page's websocket: /ws/home/ (protocol: docs/websocket.md).

It sends each active game's top three on its home board (``top``) when the socket
opens, then whenever that board changes, once per broadcaster tick at most. One
socket for the whole page, whatever the number of games. It counts as nobody's
presence: the home page is not watching any one game.
"""

from __future__ import annotations

from typing import Any, ClassVar

from core import clock, config
from games import periods
from presence import selectors as presence_selectors

from .. import events, fanout, selectors
from .base import LiveSocket
from .messages import Action


class HomeSocket(LiveSocket):
    actions: ClassVar[dict[str, Action[Any]]] = {}  # it takes no messages

    async def start(self) -> bool:
        # game slug -> (period id, version) of the card this socket last sent
        self.cards: dict[str, tuple[str, int]] = {}
        await self.join(events.HOME_GROUP)
        now = clock.now()
        for game in await config.list_games():
            board = game.first_board
            if board is None:
                continue  # no leaderboard yet
            period = periods.window_current(board, selectors.home_period(board), now)
            page, version = await selectors.board_snapshot(
                board=board, period=period, limit=events.HOME_TOP_N, next_version=False
            )
            online = await presence_selectors.online_among(game=game, player_ids=[e.player_id for e in page.entries])
            payload = events.top(board, page, version, online)
            self.cards[game.slug] = (payload["period_id"], version)
            await self.send_json(payload)
        return True

    def take(self, delivery: fanout.Delivery) -> None:
        payload = delivery.payload
        if payload["type"] != "top":
            return
        seen = self.cards.get(payload["game"])
        # A newer period (ids sort as text within a kind), or a newer version of the same one.
        if seen is not None and (payload["period_id"], payload["version"]) <= seen:
            return
        self.cards[payload["game"]] = (payload["period_id"], payload["version"])
        self.push(delivery.frame())
