"""The live websocket of a game: /ws/games/{slug}/ (protocol: docs/websocket.md).

Thin: its client messages are declared in messages.py (validated before a handler
runs, dispatched from ``actions``); it joins groups, and trims or filters the
broadcaster's group events for its own socket. Reads go through
selectors, writes through services, payloads through events.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, ClassVar

from accounts.selectors import linked_player_id
from competitions.selectors import cohorts as cohort_reads
from core import clock, config
from core.errors import REDIS_ERRORS
from games import periods
from games import selectors as board_reads
from presence import selectors as presence_selectors
from presence import services as presence_services

from .. import events, fanout, selectors, services
from .base import CLOSE_NO_SUCH_GAME, LiveSocket
from .cohorts import CohortViews, View
from .deep import deep_pages, shown_rows
from .messages import (
    DEFAULT_LIMIT,
    FIELD_MESSAGES,
    MAX_FOLLOWED,
    Action,
    Follow,
    Presence,
    Recent,
    Refusal,
    Subscribe,
    Unsubscribe,
)

__all__ = ["DEFAULT_LIMIT", "MAX_FOLLOWED", "GameSocket"]

# The presence snapshot a socket gets when it asks: the most recently seen players.
PRESENCE_SNAPSHOT_PLAYERS = 50
# Board windows and cohorts one socket may subscribe to at once: a page shows a few; each one
# is a group joined, a snapshot read and a view kept per socket, so a client cannot hold thousands.
SUBSCRIPTIONS_MAX = 20


class GameSocket(LiveSocket):
    game: config.GameConfig

    async def start(self) -> bool:
        # A view is one window of one leaderboard: (board slug, window).
        self.subscriptions: dict[View, int] = {}  # view -> limit
        self.offsets: dict[View, int] = {}  # view -> where its rows start (0: the top)
        self.versions: dict[View, int] = {}  # view -> last standings version sent
        # view -> the period id this socket is on; versions count per period id.
        self.period_ids: dict[View, str] = {}
        # view -> what its last message showed (period id, total and rows, as deep.shown_rows encodes them)
        self.last_views: dict[View, str] = {}
        # deep view -> the newest change (period id, version) its update waiting to start covers
        self.deep_wanted: dict[View, tuple[str, int]] = {}
        self.followed: set[str] = set()
        # Cohort views (sockets/cohorts.py), by the same (board slug, window).
        self.cohorts = CohortViews(self)
        self.me: str | None = None
        self.presence_version: int | None = None  # None: this socket did not ask for presence
        self.recent_version: int | None = None  # likewise for recent submissions
        game = await config.get_game(self.scope["url_route"]["kwargs"]["game"])
        if game is None:
            await self.close(code=CLOSE_NO_SUCH_GAME)
            return False
        self.game = game
        # A signed-in user linked to a player of this game is that player, online while
        # a page is open; anyone else counts as watching.
        self.me = await linked_player_id(user=self.scope.get("user"), game_id=game.id)
        await self.keepalive()
        return True

    def keepalive_secs(self) -> float:
        # Often enough that one late beat never shows the page's player offline.
        return presence_services.page_heartbeat_secs(self.game)

    async def keepalive(self) -> None:
        """The open page's presence: its linked player's heartbeat, or one more watching."""
        if self.me is not None:
            await presence_services.page_beat(game=self.game, player_id=self.me, socket_id=self.socket_id)
        else:
            await presence_services.watcher_beat(game=self.game, socket_id=self.socket_id)

    async def finish(self) -> None:
        if not hasattr(self, "game"):
            return
        await self.cohorts.close()
        if self.me is not None:
            await presence_services.page_leave(game=self.game, player_id=self.me, socket_id=self.socket_id)
        else:
            await presence_services.watcher_leave(game=self.game, socket_id=self.socket_id)

    # ----------------------------------------------------------------- client -> server

    def _board(self, slug: object) -> config.BoardConfig | None:
        """The board a message names (the game's first when it names none)."""
        if slug is None:
            return self.game.first_board
        return self.game.board_named(slug) if isinstance(slug, str) else None

    def refusal_text(self, refusal: Refusal, message: dict[str, Any]) -> str:
        if refusal.unknown_field or refusal.field not in FIELD_MESSAGES:
            return refusal.message
        board = self._board(message.get("leaderboard")) or self.game.first_board
        return refusal.message.replace("{windows}", ", ".join(board.windows) if board else "")

    async def _view(self, message: Subscribe | Unsubscribe) -> tuple[config.BoardConfig, str] | None:
        """The leaderboard (the game's first if not named) and window a message names."""
        board = self._board(message.leaderboard)
        if board is None:
            await self.error("invalid", FIELD_MESSAGES["leaderboard"])
            return None
        if message.period not in board.windows:
            await self.error("invalid", FIELD_MESSAGES["period"].replace("{windows}", ", ".join(board.windows)))
            return None
        return board, message.period

    async def subscribe(self, message: Subscribe) -> None:
        found = await self._view(message)
        if found is None:
            return
        board, period = found
        limit = message.limit
        view = (board.slug, period)
        held = self.cohorts.views if message.cohort is not None else self.subscriptions
        if view not in held and len(self.subscriptions) + len(self.cohorts.views) >= SUBSCRIPTIONS_MAX:
            limit_text = (
                f"A socket subscribes to at most {SUBSCRIPTIONS_MAX} board windows and cohorts: "
                "unsubscribe from one first."
            )
            await self.error("invalid", limit_text)
            return
        if message.cohort is not None and message.offset:
            await self.error("invalid", "offset is for a view of the board, not of a cohort.")
            return
        if message.cohort is not None:
            # The board's group carries the window's resets to its cohort views too.
            if await self.cohorts.subscribe(board, period, message.cohort, limit):
                await self.join(events.board_group(board.ref, period))
                await self._send_followed_standings([view], self.followed)
            return
        await self.join(events.board_group(board.ref, period))
        offset = message.offset
        self.subscriptions[view] = limit
        self.offsets[view] = offset
        current = periods.window_current(board, period, clock.now())
        page, version = await selectors.board_snapshot(
            board=board, period=current, limit=limit, next_version=False, offset=offset
        )
        self.versions[view] = version
        self.period_ids[view] = current.id
        online = await presence_selectors.online_among(game=self.game, player_ids=[e.player_id for e in page.entries])
        snapshot = events.standings(board, page, version, online, offset=offset or None)
        self.last_views[view] = fanout.encode(shown_rows(snapshot, 0, limit))
        await self.send_json(snapshot)
        await self._send_followed_standings([view], self.followed)

    async def unsubscribe(self, message: Unsubscribe) -> None:
        found = await self._view(message)
        if found is None:
            return
        board, period = found
        view = (board.slug, period)
        if message.cohort is not None:
            await self.cohorts.unsubscribe(view)
        else:
            self.subscriptions.pop(view, None)
            self.offsets.pop(view, None)
            self.versions.pop(view, None)
            self.last_views.pop(view, None)
            self.period_ids.pop(view, None)
        if view not in self.subscriptions and view not in self.cohorts.views:
            await self.leave(events.board_group(board.ref, period))

    async def follow(self, message: Follow) -> None:
        player_ids = message.player_ids
        if len(self.followed | set(player_ids)) > MAX_FOLLOWED:
            await self.error("invalid", FIELD_MESSAGES["player_ids"])
            return
        new = [p for p in dict.fromkeys(player_ids) if p not in self.followed]
        for player_id in new:
            await self.join(events.player_group(self.game.slug, player_id))
        if not self.followed and new:
            self.repeat(services.FOLLOW_REFRESH_SECS, self._refresh_follows)
        self.followed.update(new)
        await services.live_follow(game=self.game, player_ids=new)
        if player_ids:
            await self.cohorts.follow(player_ids[-1])  # "mine" is the player named last
        await self._send_followed_standings(self._views(), set(new))

    async def presence(self, message: Presence) -> None:
        """Ask for the game's presence: a snapshot now, then the broadcaster's changes."""
        await self.join(events.presence_group(self.game.slug))
        page = await presence_selectors.presence_page(game=self.game, limit=PRESENCE_SNAPSHOT_PLAYERS)
        self.presence_version = max(self.presence_version or 0, page.version)
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

    async def recent(self, message: Recent) -> None:
        """Ask for the game's latest submissions: a snapshot now, then one message per tick with any."""
        await self.join(events.recent_group(self.game.slug))
        submissions, version = await selectors.recent_snapshot(
            game=self.game, limit=events.RECENT_LIVE_LIMIT, next_version=False
        )
        self.recent_version = max(self.recent_version or 0, version)
        await self.send_json(events.recent(game=self.game, version=version, submissions=submissions))

    async def _refresh_follows(self) -> None:
        await services.live_follow(game=self.game, player_ids=sorted(self.followed))

    def _views(self) -> list[View]:
        """Every window the socket watches, as a board or as a cohort."""
        return list(dict.fromkeys([*self.subscriptions, *self.cohorts.windows()]))

    async def _send_followed_standings(self, views: list[View], player_ids: set[str]) -> None:
        """A followed player's current standing, so a page shows it before anything changes."""
        if not player_ids:
            return  # nobody followed: no read (a page's first subscribe, a storm's thousands)
        for board_slug in dict.fromkeys(slug for slug, _ in views):
            board = self.game.board_named(board_slug)
            if board is None:
                continue
            changes: dict[str, dict[str, tuple[str, board_reads.Standing]]] = {}
            places: dict[str, dict[str, selectors.CohortPlace]] = {}
            names: dict[str, str] = {}
            for kind in [w for slug, w in views if slug == board_slug]:
                period = periods.window_current(board, kind, clock.now())
                found = await board_reads.standings_of(board=board, period=period, player_ids=sorted(player_ids))
                for standing in found:
                    changes.setdefault(standing.player_id, {})[kind] = (period.id, standing)
                    names[standing.player_id] = standing.display_name
                if found and cohort_reads.has_cohorts(board, kind):
                    placed, _ = await selectors.cohort_places(
                        board=board, period=period, player_ids=[s.player_id for s in found], known={}
                    )
                    for player_id, place in placed.items():
                        places.setdefault(player_id, {})[kind] = place
            for player_id, periods_changed in changes.items():
                payload = events.player(board, player_id, names[player_id], periods_changed, places.get(player_id))
                await self.send_json(payload)

    # One table: each action's message model and its handler (docs/websocket.md, "Client → server").
    actions: ClassVar[dict[str, Action[Any]]] = {
        "subscribe": Action(Subscribe, subscribe),
        "unsubscribe": Action(Unsubscribe, unsubscribe),
        "follow": Action(Follow, follow),
        "presence": Action(Presence, presence),
        "recent": Action(Recent, recent),
    }

    # ----------------------------------------------------------------- broadcaster -> client

    def take(self, delivery: fanout.Delivery) -> None:
        kind = delivery.payload["type"]
        if kind == "standings":
            if "cohort" in delivery.payload:
                self.cohorts.take(delivery)
            else:
                self._standings(delivery)
        elif kind == "player":
            self._player(delivery)
        elif kind in ("presence", "recent"):
            self._newer(kind, delivery)
        elif kind == "reset":
            payload = delivery.payload
            view = (payload["leaderboard"], payload["period"])
            news = view in self.subscriptions and self._on_period(view, payload["period_id"])
            # Both evaluated: the board view and the cohort view each move to the new period.
            if self.cohorts.on_reset(view, payload["period_id"]) or news:
                self.push(delivery.frame())

    def run_held(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` (a cohort view's move) as the socket's own task, the hub's messages held
        meanwhile as for a request (so none overtakes the snapshot it sends)."""
        self.tasks = [task for task in self.tasks if not task.done()]

        async def held() -> None:
            await self._handling(work)

        self.tasks.append(asyncio.create_task(held()))

    def _standings(self, delivery: fanout.Delivery) -> None:
        payload: events.StandingsPayload = delivery.payload  # type: ignore[assignment]
        view = (payload["leaderboard"], payload["period"])
        limit = self.subscriptions.get(view)
        if limit is None or not self._on_period(view, payload["period_id"]):
            return  # not watched, or a late message of a period that already ended
        if payload["version"] <= self.versions.get(view, 0):
            return  # not newer than what this socket has
        offset = self.offsets.get(view, 0)
        if offset + limit > events.LIVE_LIMIT_MAX:
            # Below the rows the message carries: it says the window changed; the view's own
            # rows are read (once per process, view and version: deep.py). Changes that come
            # while an update of the view waits to start join it: one read covers them all.
            queued = view in self.deep_wanted
            self.deep_wanted[view] = (payload["period_id"], payload["version"])
            if not queued:
                self.run_held(self._deep_update(view))
            return
        self.versions[view] = payload["version"]
        shown = delivery.frame(("rows", offset, limit), lambda: shown_rows(payload, offset, limit))
        if shown == self.last_views.get(view):
            return  # the board changed outside this socket's rows: nothing it shows moved
        self.last_views[view] = shown
        self.push(delivery.frame(("standings", offset, limit), lambda: _view_payload(payload, offset, limit)))

    async def _deep_update(self, view: View) -> None:
        """A deep view's rows, sent when they moved (a missed read while Redis is away is made
        good by the window's next change)."""
        wanted = self.deep_wanted.pop(view, None)
        if wanted is None:
            return
        period_id, version = wanted
        board, limit, offset = self.game.board_named(view[0]), self.subscriptions.get(view), self.offsets.get(view, 0)
        if board is None or limit is None or version <= self.versions.get(view, 0):
            return  # unsubscribed meanwhile, or already as new
        current = periods.window_current(board, view[1], clock.now())
        if current.id != period_id:
            return  # the window rolled over meanwhile: its reset brings the new period
        try:
            read = await deep_pages().page(
                game=self.game, board=board, period=current, offset=offset, limit=limit, version=version
            )
        except REDIS_ERRORS:
            return
        if self.subscriptions.get(view) != limit or self.offsets.get(view, 0) != offset:
            return  # subscribed again to other rows while reading
        if read.version <= self.versions.get(view, 0):
            return
        self.versions[view] = read.version
        if read.rows == self.last_views.get(view):
            return
        self.last_views[view] = read.rows
        self.push(read.frame)

    def _player(self, delivery: fanout.Delivery) -> None:
        payload: events.PlayerPayload = delivery.payload  # type: ignore[assignment]
        board = payload["leaderboard"]
        watched = tuple(
            k for k in payload["periods"] if (board, k) in self.subscriptions or (board, k) in self.cohorts.views
        )
        if watched and payload["player_id"] in self.followed:
            self.cohorts.on_player(payload)
            # Sockets watching the same windows of the board share one frame.
            self.push(
                delivery.frame(
                    ("player", watched),
                    lambda: {**payload, "periods": {k: payload["periods"][k] for k in watched}},
                )
            )

    def _newer(self, kind: str, delivery: fanout.Delivery) -> None:
        """Pass on a presence or recent message newer than the socket's (if it asked for them)."""
        attribute = f"{kind}_version"
        seen: int | None = getattr(self, attribute)
        version = delivery.payload["version"]
        if seen is not None and version > seen:
            setattr(self, attribute, version)
            self.push(delivery.frame())

    def _on_period(self, view: View, period_id: str) -> bool:
        """Move to a newer period id (its versions start again from 1); False for an older one.

        Within one window, period ids sort as text (YYYY-MM-DD, YYYY-Www, YYYY-MM, and a
        custom window's UTC starts).
        """
        current = self.period_ids.get(view)
        if current is not None and period_id < current:
            return False
        if period_id != current:
            self.period_ids[view] = period_id
            self.versions[view] = 0
            self.last_views.pop(view, None)
        return True


def _view_payload(payload: events.StandingsPayload, offset: int, limit: int) -> events.StandingsPayload:
    """A top message as a view of ``limit`` rows from ``offset`` sees it."""
    shown: events.StandingsPayload = {**payload, "entries": payload["entries"][offset : offset + limit]}
    if offset:
        shown["offset"] = offset
    return shown
