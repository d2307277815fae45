"""A game socket's cohort views (issue 22; docs/websocket.md, "subscribe" with ``cohort``).

A socket watches at most one cohort per board window: one by its id ("3", "gold-2"), or
``mine``, the cohort of the player the socket follows (the last one its latest ``follow``
named). ``mine`` moves with them: none while a balanced period holds them, theirs once
placed (the broadcaster's ``player`` message names it), another cohort when the socket
follows another player, and none again after the window's ``reset``.

Cost: a watched cohort is one group of the process (``events.cohort_group``, joined once
however many sockets watch it) and one member of its board's watched-cohorts set, which the
socket renews as it does its follows (``services.live_watch_cohorts``): the broadcaster reads
each watched cohort once per tick in which its board changed, whatever the number of its
watchers, and no cohort nobody watches. A socket reads a cohort itself only to answer its
own requests: a subscribe, a move, a follow.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Protocol

from competitions.selectors import cohorts as cohort_reads
from core import clock, config, errors
from core.errors import UNAVAILABLE_ERRORS, ServiceError, report_unavailable
from games import periods
from presence import selectors as presence_selectors

from .. import events, fanout, services

# What ``cohort`` names to watch the followed player's cohort, wherever it is.
MINE = "mine"

# One window of one leaderboard a socket watches: (board slug, window).
View = tuple[str, str]


class Host(Protocol):
    """What the cohort views use of their socket (sockets/game.py)."""

    game: config.GameConfig

    async def join(self, group: str) -> None: ...

    async def leave(self, group: str) -> bool: ...

    async def send_json(self, payload: events.Payload) -> None: ...

    async def error(self, code: events.ErrorCode, message: str) -> None: ...

    def push(self, frame: str) -> None: ...

    def repeat(self, every_secs: float, work: Callable[[], Awaitable[None]]) -> None: ...

    def run_held(self, work: Coroutine[Any, Any, None]) -> None: ...


@dataclass
class CohortView:
    board: config.BoardConfig
    window: str
    wanted: str  # MINE, or the id of the cohort asked for
    limit: int
    index: int | None = None  # the cohort watched now (None: MINE while its player is in none)
    cohort: str | None = None  # its id, as messages carry it
    period_id: str = ""  # the period this view is on; versions count per period id
    version: int = 0  # the last version sent
    shown: str | None = None  # what the last message showed (_rows), to skip one that shows the same


class CohortViews:
    """One socket's cohort views, by (board slug, window)."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.views: dict[View, CohortView] = {}
        self.own: str | None = None  # the followed player MINE means
        # Subscribes and moves one at a time: each reads, joins and leaves groups in steps.
        self.lock = asyncio.Lock()
        self.renewing = False

    # ----------------------------------------------------------------- client requests

    async def subscribe(self, board: config.BoardConfig, window: str, wanted: str, limit: int) -> bool:
        """Watch a cohort of a competing window and send its snapshot; False (with an ``error``
        sent) when the board has no cohorts there or the period no such cohort."""
        try:
            cohort_reads.cohort_rules(board, window)
        except ServiceError as refusal:
            await self.host.error("no_cohorts", refusal.message)
            return False
        current = periods.window_current(board, window, clock.now())
        async with self.lock:
            if wanted == MINE:
                index = await self._cohort_of(board, current)
            else:
                index = cohort_reads.cohort_index(board, wanted)
                # Checked before any interest is noted: a client cannot have the broadcaster
                # read cohorts that do not exist.
                if index is None or not await cohort_reads.cohort_entrants(board=board, period=current, index=index):
                    unknown = errors.cohort_not_found(cohort=wanted, period_id=current.id)
                    await self.host.error("cohort_not_found", unknown.message)
                    return False
                wanted = cohort_reads.cohort_label(board, index)[0]  # "03" is "3"
            view = self.views.setdefault((board.slug, window), CohortView(board, window, wanted, limit))
            view.board, view.wanted, view.limit = board, wanted, limit
            self.on_period(view, current.id)
            await self._watch(view, index, current)
        self._renew_regularly()
        return True

    async def unsubscribe(self, view_key: View) -> None:
        async with self.lock:
            view = self.views.pop(view_key, None)
            if view is not None:
                await self._leave(view, view.index)

    async def close(self) -> None:
        """The socket closes: its cohorts stop costing the broadcaster at once (where it was the
        process's last watcher) rather than when their interest lapses."""
        for view_key in list(self.views):
            await self.unsubscribe(view_key)

    async def follow(self, player_id: str) -> None:
        """The socket's latest follow named ``player_id`` last: its MINE views move to their cohort."""
        if player_id == self.own:
            return
        self.own = player_id
        async with self.lock:
            for view in [v for v in self.views.values() if v.wanted == MINE]:
                current = periods.window_current(view.board, view.window, clock.now())
                await self._watch(view, await self._cohort_of(view.board, current), current)

    async def renew(self) -> None:
        """Keep the broadcaster reading the cohorts this socket watches (as its follows)."""
        by_board: dict[tuple[str, str], list[int]] = {}
        for view in self.views.values():
            if view.index is not None:
                by_board.setdefault((view.board.ref, view.window), []).append(view.index)
        for (ref, window), indexes in by_board.items():
            await services.live_watch_cohorts(ref=ref, window=window, indexes=indexes, watcher=fanout.hub().token)

    def windows(self) -> list[View]:
        return list(self.views)

    # ----------------------------------------------------------------- broadcaster -> client

    def take(self, delivery: fanout.Delivery) -> None:
        """A cohort's ``standings``: passed on when it is the cohort a view watches, newer, and
        shows something else than the view's last message."""
        payload: events.CohortStandingsPayload = delivery.payload  # type: ignore[assignment]
        view = self.views.get((payload["leaderboard"], payload["period"]))
        if view is None or view.cohort is None or payload["cohort"] != view.cohort:
            return  # a cohort this socket no longer watches (it moved)
        if not self.on_period(view, payload["period_id"]) or payload["version"] <= view.version:
            return
        view.version = payload["version"]
        limit = view.limit
        shown = delivery.frame(("cohort-rows", limit), lambda: _rows(payload, limit))
        if shown == view.shown:
            return  # the board changed elsewhere: nothing this view shows moved
        view.shown = shown
        self.host.push(delivery.frame(("cohort", limit), lambda: {**payload, "entries": payload["entries"][:limit]}))

    def on_player(self, payload: events.PlayerPayload) -> None:
        """The followed player's ``player`` message: a MINE view whose cohort it names another moves."""
        if payload["player_id"] != self.own:
            return
        for kind, standing in payload["periods"].items():
            view = self.views.get((payload["leaderboard"], kind))
            if view is None or view.wanted != MINE or "cohort" not in standing:
                continue
            named = standing.get("cohort")
            index = cohort_reads.cohort_index(view.board, named) if named else None
            if index != view.index:
                self.host.run_held(self._move(view, index, standing["period_id"]))

    def on_reset(self, view_key: View, period_id: str) -> bool:
        """A rollover of a watched window: True when it is news to the view. A MINE view's
        player is in no cohort of the new period yet (their next ``player`` message names one)."""
        view = self.views.get(view_key)
        if view is None or not self.on_period(view, period_id):
            return False
        if view.wanted == MINE and view.index is not None:
            self.host.run_held(self._move(view, None, period_id, announce=False))
        return True

    def on_period(self, view: CohortView, period_id: str) -> bool:
        """Move to a newer period id (versions start again); False for an older one (period ids
        of one window sort as text, as sockets/game.py's _on_period says)."""
        if period_id < view.period_id:
            return False
        if period_id != view.period_id:
            view.period_id, view.version, view.shown = period_id, 0, None
        return True

    # ----------------------------------------------------------------- moving

    async def _move(self, view: CohortView, index: int | None, period_id: str, *, announce: bool = True) -> None:
        try:
            async with self.lock:
                if self.views.get((view.board.slug, view.window)) is not view or period_id < view.period_id:
                    return  # unsubscribed, or a later move overtook this one
                current = periods.window_current(view.board, view.window, clock.now())
                if current.id != period_id:
                    return  # a message of another period than the current one
                await self._watch(view, index, current, announce=announce)
        except UNAVAILABLE_ERRORS as error:
            report_unavailable(error, during="a socket's cohort move (it moves with the next player message)")

    async def _watch(
        self, view: CohortView, index: int | None, period: periods.Period, *, announce: bool = True
    ) -> None:
        """Point ``view`` at cohort ``index`` (None: none) of the current period: note the interest
        and join its group before reading it (so a change after the read is sent), leave the
        group it watched, and send its snapshot."""
        before = view.index
        view.index = index
        # Known before the read: should the read fail, the broadcaster's messages still reach the view.
        view.cohort = cohort_reads.cohort_label(view.board, index)[0] if index is not None else None
        if index is not None:
            await self.host.join(events.cohort_group(view.board.ref, view.window, index))
            await services.live_watch_cohorts(
                ref=view.board.ref, window=view.window, indexes=[index], watcher=fanout.hub().token
            )
        if before != index:
            await self._leave(view, before)
        if index is None:
            view.shown = None
            if announce:
                await self.host.send_json(events.cohort_standings(view.board, period, None, view.version))
            return
        snap = await cohort_reads.cohort_snapshot(
            board=view.board, period=period, index=index, limit=view.limit, version="current"
        )
        tier = cohort_reads.cohort_label(view.board, index)[1]
        view.version = max(view.version, snap.version if snap else 0)
        online = await presence_selectors.online_among(
            game=self.host.game, player_ids=[e.player_id for e in snap.board.entries] if snap else []
        )
        payload = events.cohort_standings(view.board, period, snap, view.version, online)
        # A cohort everyone left (erasures) is still the one watched: shown empty, by its id.
        payload["cohort"], payload["tier"] = view.cohort, tier
        view.shown = fanout.encode(_rows(payload, view.limit))
        await self.host.send_json(payload)

    async def _leave(self, view: CohortView, index: int | None) -> None:
        """Leave a cohort's group; the process's last watcher takes its interest back."""
        if index is None:
            return
        group = events.cohort_group(view.board.ref, view.window, index)
        if await self.host.leave(group):
            token = fanout.hub().token
            await services.live_unwatch_cohort(ref=view.board.ref, window=view.window, index=index, watcher=token)
            if group in fanout.hub().groups:
                # Another socket of the process joined meanwhile, and its note may have gone to
                # Redis before this removal: note it again rather than wait for its renewal.
                await services.live_watch_cohorts(
                    ref=view.board.ref, window=view.window, indexes=[index], watcher=token
                )

    async def _cohort_of(self, board: config.BoardConfig, period: periods.Period) -> int | None:
        if self.own is None:
            return None
        return (await cohort_reads.cohorts_of(board=board, period=period, player_ids=[self.own])).get(self.own)

    def _renew_regularly(self) -> None:
        if not self.renewing:
            self.renewing = True
            self.host.repeat(services.FOLLOW_REFRESH_SECS, self.renew)


def _rows(payload: events.CohortStandingsPayload, limit: int) -> list[Any]:
    """What a view showing ``limit`` rows shows of a cohort's message (its version aside)."""
    return [
        payload["period_id"],
        payload["cohort"],
        payload["cohort_size"],
        payload["total"],
        payload["entries"][:limit],
    ]
