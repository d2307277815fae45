"""The live websocket of a game: /ws/games/{slug}/ (protocol: docs/websocket.md).

Thin: it validates client messages, joins channel-layer groups, and trims or
filters the broadcaster's group events for its own socket. Reads go through
selectors, writes through services, payloads through events.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any

from channels.consumer import get_handler_name
from channels.generic.websocket import AsyncWebsocketConsumer
from redis.exceptions import RedisError

from accounts.selectors import linked_player_id
from core import clock, config
from core.models import is_player_id
from games import periods
from games import selectors as board_reads
from presence import selectors as presence_selectors
from presence import services as presence_services

from . import events, selectors, services

logger = logging.getLogger(__name__)

# A client frame larger than this closes the socket with 1009 (message too big).
MAX_FRAME_BYTES = 4096
DEFAULT_LIMIT = 25
MAX_FOLLOWED = 50
# The presence snapshot a socket gets when it asks: the most recently seen players.
PRESENCE_SNAPSHOT_PLAYERS = 50
# Close codes: the game does not exist; the server asked everyone to reconnect.
CLOSE_NO_SUCH_GAME = 4404
CLOSE_RECONNECT = 1012
LIVE_EVENT_TYPES = frozenset({"live.event", "live.disconnect"})


class GameConsumer(AsyncWebsocketConsumer):
    game: config.GameConfig

    async def connect(self) -> None:
        self.subscriptions: dict[str, int] = {}  # period -> limit
        self.versions: dict[str, int] = {}  # period -> last standings version sent
        # period -> the period id this socket is on; versions count per period id.
        self.period_ids: dict[str, str] = {}
        self.last_views: dict[str, tuple[str, int, list[Any]]] = {}  # period -> (id, total, rows) last sent
        self.followed: set[str] = set()
        self.refresher: asyncio.Task[None] | None = None
        self.me: str | None = None
        self.presence_version: int | None = None  # None: this socket did not ask for presence
        self.heartbeat: asyncio.Task[None] | None = None
        game = await config.get_game(self.scope["url_route"]["kwargs"]["game"])
        await self.accept()
        if game is None:
            # Accepted first: a close before accept reaches a browser as a refused
            # handshake (1006), and it would retry forever.
            await self.close(code=CLOSE_NO_SUCH_GAME)
            return
        self.game = game
        # A signed-in user linked to a player of this game is that player, online while
        # a page is open; anyone else counts as watching.
        self.me = await linked_player_id(user=self.scope.get("user"), game_id=game.id)
        try:
            await self._presence_beat()
        except (RedisError, OSError):
            logger.exception("live socket: Redis unavailable for presence")
        self.heartbeat = asyncio.create_task(self._presence_heartbeat())

    async def dispatch(self, message: dict[str, Any]) -> None:
        # Channels closes stale database connections before every handler, a hop to
        # the shared sync thread; the broadcaster's events touch no database, and at
        # 1,000 watchers that hop per message per socket starved the whole process.
        if message["type"] in LIVE_EVENT_TYPES:
            await getattr(self, get_handler_name(message))(message)
        else:
            await super().dispatch(message)

    async def disconnect(self, code: int) -> None:
        if not hasattr(self, "game"):
            return
        if self.refresher is not None:
            self.refresher.cancel()
        if self.heartbeat is not None:
            self.heartbeat.cancel()
        with contextlib.suppress(RedisError, OSError):
            if self.me is not None:
                await presence_services.page_leave(game=self.game, player_id=self.me, socket_id=self.channel_name)
            else:
                await presence_services.watcher_leave(game=self.game, socket_id=self.channel_name)
        if self.presence_version is not None:
            await self.channel_layer.group_discard(events.presence_group(self.game.slug), self.channel_name)
        for period in list(getattr(self, "subscriptions", {})):
            await self.channel_layer.group_discard(events.board_group(self.game.slug, period), self.channel_name)
        for player_id in getattr(self, "followed", set()):
            await self.channel_layer.group_discard(events.player_group(self.game.slug, player_id), self.channel_name)

    async def send_json(self, payload: Any) -> None:
        await self.send(text_data=json.dumps(payload))

    async def error(self, code: str, message: str) -> None:
        await self.send_json(events.error(code, message))

    # ----------------------------------------------------------------- client -> server

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        size = len(text_data.encode()) if text_data is not None else len(bytes_data or b"")
        if size > MAX_FRAME_BYTES:
            await self.close(code=1009)
            return
        if text_data is None:
            await self.error("malformed", "Send JSON text frames.")
            return
        try:
            message = json.loads(text_data)
        except (ValueError, RecursionError):  # RecursionError: deeply nested arrays
            await self.error("malformed", "The message is not valid JSON.")
            return
        if not isinstance(message, dict):
            await self.error("malformed", "The message must be a JSON object.")
            return
        action = message.get("action")
        handlers = {
            "subscribe": self.subscribe,
            "unsubscribe": self.unsubscribe,
            "follow": self.follow,
            "presence": self.presence,
        }
        handler = handlers.get(action) if isinstance(action, str) else None
        if handler is None:
            await self.error("unknown_action", "action must be one of: subscribe, unsubscribe, follow, presence.")
            return
        try:
            await handler(message)
        except (RedisError, OSError):
            logger.exception("live socket: Redis unavailable")
            await self.error("unavailable", "The live service is briefly unavailable; try again.")

    async def _period(self, message: dict[str, Any]) -> str | None:
        period = message.get("period")
        if not isinstance(period, str) or period not in self.game.periods:
            await self.error("invalid", f"period must be one of: {', '.join(self.game.periods)}.")
            return None
        return period

    async def subscribe(self, message: dict[str, Any]) -> None:
        period = await self._period(message)
        if period is None:
            return
        limit = message.get("limit", DEFAULT_LIMIT)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= events.LIVE_LIMIT_MAX:
            await self.error("invalid", f"limit must be an integer from 1 to {events.LIVE_LIMIT_MAX}.")
            return
        if period not in self.subscriptions:
            await self.channel_layer.group_add(events.board_group(self.game.slug, period), self.channel_name)
        self.subscriptions[period] = limit
        current = periods.current(period, self.game.timezone, clock.now())
        board, version = await selectors.board_snapshot(game=self.game, period=current, limit=limit, next_version=False)
        self.versions[period] = version
        self.period_ids[period] = current.id
        online = await presence_selectors.online_among(game=self.game, player_ids=[e.player_id for e in board.entries])
        snapshot = events.standings(board, version, online)
        self.last_views[period] = (snapshot["period_id"], snapshot["total"], snapshot["entries"])
        await self.send_json(snapshot)
        await self._send_followed_standings([period], self.followed)

    async def unsubscribe(self, message: dict[str, Any]) -> None:
        period = await self._period(message)
        if period is None:
            return
        if self.subscriptions.pop(period, None) is not None:
            await self.channel_layer.group_discard(events.board_group(self.game.slug, period), self.channel_name)
        self.versions.pop(period, None)
        self.last_views.pop(period, None)
        self.period_ids.pop(period, None)

    async def follow(self, message: dict[str, Any]) -> None:
        player_ids = message.get("player_ids")
        if (
            not isinstance(player_ids, list)
            or not all(is_player_id(p) for p in player_ids)
            or len(self.followed | set(player_ids)) > MAX_FOLLOWED
        ):
            await self.error("invalid", f"player_ids must be a list of at most {MAX_FOLLOWED} valid player ids.")
            return
        new = [p for p in dict.fromkeys(player_ids) if p not in self.followed]
        for player_id in new:
            await self.channel_layer.group_add(events.player_group(self.game.slug, player_id), self.channel_name)
        self.followed.update(new)
        await services.live_follow(game=self.game, player_ids=new)
        if self.refresher is None:
            self.refresher = asyncio.create_task(self._refresh_follows())
        await self._send_followed_standings(list(self.subscriptions), set(new))

    async def presence(self, message: dict[str, Any]) -> None:
        """Ask for the game's presence: a snapshot now, then the broadcaster's changes."""
        if self.presence_version is None:
            await self.channel_layer.group_add(events.presence_group(self.game.slug), self.channel_name)
            self.presence_version = 0
        page = await presence_selectors.presence_page(game=self.game, limit=PRESENCE_SNAPSHOT_PLAYERS)
        self.presence_version = max(self.presence_version, page.version)
        await self.send_json(
            events.presence(
                version=page.version,
                online=page.online,
                watching=page.watching,
                joined=page.players,
                left=[],
                snapshot=True,
            )
        )

    async def _presence_beat(self) -> None:
        if self.me is not None:
            await presence_services.page_beat(game=self.game, player_id=self.me, socket_id=self.channel_name)
        else:
            await presence_services.watcher_beat(game=self.game, socket_id=self.channel_name)

    async def _presence_heartbeat(self) -> None:
        while True:
            await asyncio.sleep(presence_services.page_heartbeat_secs(self.game))
            try:
                await self._presence_beat()
            except (RedisError, OSError):
                logger.warning("live socket: presence heartbeat failed; retrying at the next one")

    async def _refresh_follows(self) -> None:
        while True:
            await asyncio.sleep(services.FOLLOW_REFRESH_SECS)
            with contextlib.suppress(RedisError, OSError):
                await services.live_follow(game=self.game, player_ids=sorted(self.followed))

    async def _send_followed_standings(self, period_kinds: list[str], player_ids: set[str]) -> None:
        """A followed player's current standing, so a page shows it before anything changes."""
        changes: dict[str, dict[str, tuple[str, board_reads.Standing]]] = {}
        names: dict[str, str] = {}
        for kind in period_kinds:
            period = periods.current(kind, self.game.timezone, clock.now())
            for standing in await board_reads.standings_of(
                game=self.game, period=period, player_ids=sorted(player_ids)
            ):
                changes.setdefault(standing.player_id, {})[kind] = (period.id, standing)
                names[standing.player_id] = standing.display_name
        for player_id, periods_changed in changes.items():
            await self.send_json(events.player(player_id, names[player_id], periods_changed))

    # ----------------------------------------------------------------- broadcaster -> client

    async def live_event(self, event: dict[str, Any]) -> None:
        payload = event["payload"]
        kind = payload["type"]
        if kind == "standings":
            period = payload["period"]
            limit = self.subscriptions.get(period)
            if limit is None or not self._on_period(period, payload["period_id"]):
                return  # not watched, or a late message of a period that already ended
            if payload["version"] <= self.versions.get(period, 0):
                return  # not newer than what this socket has
            self.versions[period] = payload["version"]
            view = (payload["period_id"], payload["total"], payload["entries"][:limit])
            if view == self.last_views.get(period):
                return  # the board changed below this socket's rows: nothing it shows moved
            self.last_views[period] = view
            await self.send_json({**payload, "entries": view[2]})
        elif kind == "player":
            watched = {k: v for k, v in payload["periods"].items() if k in self.subscriptions}
            if watched and payload["player_id"] in self.followed:
                await self.send_json({**payload, "periods": watched})
        elif kind == "presence":
            if self.presence_version is not None and payload["version"] > self.presence_version:
                self.presence_version = payload["version"]
                await self.send_json(payload)
        elif (
            kind == "reset"
            and payload["period"] in self.subscriptions
            and self._on_period(payload["period"], payload["period_id"])
        ):
            await self.send_json(payload)

    def _on_period(self, period: str, period_id: str) -> bool:
        """Move to a newer period id (its versions start again from 1); False for an older one.

        Within one kind, period ids sort as text (YYYY-MM-DD, YYYY-Www, YYYY-MM).
        """
        current = self.period_ids.get(period)
        if current is not None and period_id < current:
            return False
        if period_id != current:
            self.period_ids[period] = period_id
            self.versions[period] = 0
            self.last_views.pop(period, None)
        return True

    async def live_disconnect(self, event: dict[str, Any]) -> None:
        await self.close(code=CLOSE_RECONNECT)


class RefuseConsumer(AsyncWebsocketConsumer):
    """Any other websocket path: refuse the handshake (instead of a routing error)."""

    async def connect(self) -> None:
        await self.close()
