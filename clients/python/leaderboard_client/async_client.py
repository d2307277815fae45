"""``AsyncClient``: the sync client's calls (client.py), awaited, with the same retries."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from typing import IO, Any, Literal, cast, overload

import httpx

from . import _calls as calls
from ._calls import Call
from .client import _Base
from .errors import LeaderboardError
from .types import (
    ArchivedPeriods,
    AttemptsGranted,
    BatchResult,
    BoardPage,
    CohortBoard,
    CohortFriendsPage,
    CohortsPage,
    CompetitionEntry,
    ExportFormat,
    FriendsPage,
    Game,
    Leaderboard,
    LinkCode,
    NamedPlayer,
    Period,
    PlayerLeague,
    PlayerPresence,
    PlayerRewards,
    PresencePage,
    PresenceReport,
    Profile,
    Recent,
    RewardGrant,
    RewardStatus,
    Scope,
    ScoreItem,
    ScoreResult,
    Settlement,
    Standing,
)


class AsyncClient(_Base):
    """The asyncio client: the same calls, awaited. ``async with AsyncClient(...) as lb:``."""

    def __init__(self, base_url: str, *, game: str, api_key: str | None = None, **options: Any) -> None:
        super().__init__(base_url, game=game, api_key=api_key, **options)
        self._http = httpx.AsyncClient(base_url=self._base_url, headers=self._headers, timeout=self._timeout)

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _send(self, call: Call) -> Any:
        attempt = 0
        while True:
            try:
                return self._result(await self._http.request(**self._request(call)))
            except httpx.TransportError as error:
                failure: LeaderboardError = self._transport_error(error)
            except LeaderboardError as error:
                failure = error
            await asyncio.sleep(self._next_wait(call, failure, attempt))
            attempt += 1

    async def submit_score(
        self,
        board: str,
        player_id: str,
        score: int,
        *,
        display_name: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> ScoreResult:
        body = calls.score_body(player_id, score, display_name, metadata)
        key = idempotency_key or calls.new_key()
        return cast(ScoreResult, await self._send(calls.submit_score(self.game, board, body, key)))

    async def submit_scores(
        self, items: Iterable[ScoreItem], *, idempotency_key: str | None = None
    ) -> list[BatchResult]:
        results: list[BatchResult] = []
        for call in calls.submit_batches(self.game, cast(Iterable[Mapping[str, Any]], items), idempotency_key):
            results += (await self._send(call))["results"]
        return results

    async def report_presence(self, *, online: Sequence[str] = (), offline: Sequence[str] = ()) -> PresenceReport:
        return self._merge_reports([await self._send(c) for c in calls.report_presence(self.game, online, offline)])

    async def join(
        self, board: str, player_id: str, *, display_name: str | None = None, rating: int | None = None
    ) -> CompetitionEntry:
        call = calls.join(self.game, board, player_id, display_name, rating)
        return cast(CompetitionEntry, await self._send(call))

    async def grant_attempts(self, board: str, player_id: str, add: int = 1) -> AttemptsGranted:
        return cast(AttemptsGranted, await self._send(calls.grant_attempts(self.game, board, player_id, add)))

    async def end(self, board: str) -> Leaderboard:
        return cast(Leaderboard, await self._send(calls.end(self.game, board)))

    async def claim(self, grant_id: str) -> RewardGrant:
        return cast(RewardGrant, await self._send(calls.claim(self.game, grant_id)))

    async def link_code(self, player_id: str) -> LinkCode:
        return cast(LinkCode, await self._send(calls.link_code(self.game, player_id)))

    async def games(self) -> list[Game]:
        return cast(list[Game], await self._send(calls.games()))

    async def game_info(self) -> Game:
        return cast(Game, await self._send(calls.game(self.game)))

    async def leaderboards(self) -> list[Leaderboard]:
        return cast(list[Leaderboard], await self._send(calls.leaderboards(self.game)))

    async def page(
        self, board: str, period: Period = "all-time", *, period_id: str | None = None, offset: int = 0, limit: int = 50
    ) -> BoardPage:
        return cast(BoardPage, await self._send(calls.page(self.game, board, period, period_id, offset, limit)))

    async def standing(self, board: str, period: Period, player_id: str, *, period_id: str | None = None) -> Standing:
        return cast(Standing, await self._send(calls.standing(self.game, board, period, period_id, player_id)))

    @overload
    async def around(
        self, board: str, period: Period, player_id: str, *, radius: int = ..., period_id: str | None = ...,
        scope: Literal["board"] = ...,
    ) -> BoardPage: ...  # fmt: skip
    @overload
    async def around(
        self, board: str, period: Period, player_id: str, *, radius: int = ..., period_id: str | None = ...,
        scope: Literal["cohort"],
    ) -> CohortBoard: ...  # fmt: skip
    async def around(
        self,
        board: str,
        period: Period,
        player_id: str,
        *,
        radius: int = 5,
        period_id: str | None = None,
        scope: Scope = "board",
    ) -> BoardPage | CohortBoard:
        call = calls.around(self.game, board, period, period_id, player_id, radius, scope)
        return cast(BoardPage, await self._send(call))

    @overload
    async def friends(
        self, board: str, period: Period, player_ids: Sequence[str], *, period_id: str | None = ...,
        scope: Literal["board"] = ...,
    ) -> FriendsPage: ...  # fmt: skip
    @overload
    async def friends(
        self, board: str, period: Period, player_ids: Sequence[str], *, period_id: str | None = ...,
        scope: Literal["cohort"],
    ) -> CohortFriendsPage: ...  # fmt: skip
    async def friends(
        self,
        board: str,
        period: Period,
        player_ids: Sequence[str],
        *,
        period_id: str | None = None,
        scope: Scope = "board",
    ) -> FriendsPage | CohortFriendsPage:
        call = calls.friends(self.game, board, period, period_id, player_ids, scope)
        return cast(FriendsPage, await self._send(call))

    async def cohorts(
        self, board: str, period: Period, *, period_id: str | None = None, offset: int = 0, limit: int = 50
    ) -> CohortsPage:
        return cast(CohortsPage, await self._send(calls.cohorts(self.game, board, period, period_id, offset, limit)))

    async def cohort(
        self,
        board: str,
        period: Period,
        cohort: str,
        *,
        period_id: str | None = None,
        offset: int = 0,
        limit: int = 50,
    ) -> CohortBoard:
        call = calls.cohort(self.game, board, period, period_id, cohort, offset, limit)
        return cast(CohortBoard, await self._send(call))

    async def settlement(
        self,
        board: str,
        period: Period,
        period_id: str,
        *,
        cohort: str | None = None,
        player_id: str | None = None,
        offset: int = 0,
        limit: int = 50,
    ) -> Settlement:
        call = calls.settlement(self.game, board, period, period_id, cohort, player_id, offset, limit)
        return cast(Settlement, await self._send(call))

    async def settlement_preview(
        self,
        board: str,
        period: Period,
        *,
        cohort: str | None = None,
        player_id: str | None = None,
        offset: int = 0,
        limit: int = 50,
    ) -> Settlement:
        call = calls.settlement(self.game, board, period, None, cohort, player_id, offset, limit)
        return cast(Settlement, await self._send(call))

    async def export(
        self, board: str, period: Period, *, to: IO[bytes], period_id: str = "current", format: ExportFormat = "csv"
    ) -> int:
        """As :meth:`Client.export`: the file written into ``to`` as it streams in."""
        call = calls.export(self.game, board, period, period_id, format)
        attempt = 0
        while True:
            written = 0
            try:
                async with self._http.stream(**self._request(call)) as response:
                    if response.status_code >= 400:
                        await response.aread()
                        self._result(response)
                    async for chunk in response.aiter_bytes():
                        written += to.write(chunk)
                    return written
            except httpx.TransportError as error:
                if written:
                    raise self._transport_error(error) from error
                failure: LeaderboardError = self._transport_error(error)
            except LeaderboardError as error:
                failure = error
            await asyncio.sleep(self._next_wait(call, failure, attempt))
            attempt += 1

    async def player(self, player_id: str) -> Profile:
        return cast(Profile, await self._send(calls.player(self.game, player_id)))

    async def find_players(self, query: str, *, limit: int = 20) -> list[NamedPlayer]:
        return cast(list[NamedPlayer], (await self._send(calls.find_players(self.game, query, limit)))["players"])

    async def recent(self, *, limit: int = 20) -> list[Recent]:
        return cast(list[Recent], await self._send(calls.recent(self.game, limit)))

    async def presence(self, *, offset: int = 0, limit: int = 50) -> PresencePage:
        return cast(PresencePage, await self._send(calls.presence(self.game, offset, limit)))

    async def player_presence(self, player_id: str) -> PlayerPresence:
        return cast(PlayerPresence, await self._send(calls.player_presence(self.game, player_id)))

    async def archived_periods(
        self, board: str, *, period: Period | None = None, offset: int = 0, limit: int = 50
    ) -> ArchivedPeriods:
        return cast(ArchivedPeriods, await self._send(calls.archived_periods(self.game, board, period, offset, limit)))

    async def rewards(
        self, player_id: str, *, status: RewardStatus | None = None, offset: int = 0, limit: int = 20
    ) -> PlayerRewards:
        return cast(PlayerRewards, await self._send(calls.rewards(self.game, player_id, status, offset, limit)))

    async def league(self, board: str, player_id: str, *, offset: int = 0, limit: int = 20) -> PlayerLeague:
        return cast(PlayerLeague, await self._send(calls.league(self.game, board, player_id, offset, limit)))
