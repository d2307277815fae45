"""``Client`` (sync; ``AsyncClient`` in async_client.py): one game's calls, with retries done right.

- Every write that can be retried carries an ``Idempotency-Key`` (made per logical
  submission unless you pass one), so a retry after a lost answer is applied once.
- 429 and 503 are retried after the server's ``Retry-After`` (up to ``RetryPolicy``);
  a lost connection is retried only for reads and keyed writes.
- Errors are raised as ``LeaderboardError`` subclasses carrying the API's code.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import IO, Any, Literal, cast, overload

import httpx

from . import _calls as calls
from ._calls import Call, RetryPolicy
from .errors import LeaderboardError, TransportError, error_for
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

USER_AGENT = "leaderboard-client-python/1.0"
DEFAULT_TIMEOUT_SECS = 10.0


class _Base:
    def __init__(
        self,
        base_url: str,
        *,
        game: str,
        api_key: str | None = None,
        retry: RetryPolicy | None = None,
        timeout_secs: float = DEFAULT_TIMEOUT_SECS,
    ) -> None:
        self.game = game
        self.retry = retry or RetryPolicy()
        self._base_url = base_url.rstrip("/") + "/api/v1"
        self._headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._timeout = timeout_secs

    @staticmethod
    def _result(response: httpx.Response) -> Any:
        try:
            body = response.json()
        except ValueError:
            body = None
        if response.status_code >= 400:
            raise error_for(response.status_code, body, response.headers)
        return body

    @staticmethod
    def _transport_error(error: httpx.TransportError) -> TransportError:
        return TransportError(0, "transport", f"{type(error).__name__}: {error}")

    def _request(self, call: Call) -> dict[str, Any]:
        return {"method": call.method, "url": call.path, "params": call.params or None, "json": call.json,
                "headers": call.headers()}  # fmt: skip

    def _next_wait(self, call: Call, failure: LeaderboardError, attempt: int) -> float:
        """Seconds before trying ``call`` again; raises ``failure`` when it is not to be retried.

        A 429 was refused before anything was applied: always safe to send again. A 503 or a
        lost connection may have been applied: only reads and keyed writes are retried."""
        retryable = failure.status == 429 or (failure.status in (0, 503) and call.retryable)
        wait = self.retry.wait(attempt, failure.retry_after) if retryable else None
        if wait is None:
            raise failure
        return wait

    @staticmethod
    def _merge_reports(reports: Sequence[PresenceReport]) -> PresenceReport:
        return PresenceReport(
            online=sum(r["online"] for r in reports),
            offline=sum(r["offline"] for r in reports),
            joined=sum(r["joined"] for r in reports),
            left=sum(r["left"] for r in reports),
        )


class Client(_Base):
    """The sync client. ``with Client(...) as lb:`` closes its connections at the end."""

    def __init__(self, base_url: str, *, game: str, api_key: str | None = None, **options: Any) -> None:
        super().__init__(base_url, game=game, api_key=api_key, **options)
        self._http = httpx.Client(base_url=self._base_url, headers=self._headers, timeout=self._timeout)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _send(self, call: Call) -> Any:
        attempt = 0
        while True:
            try:
                return self._result(self._http.request(**self._request(call)))
            except httpx.TransportError as error:
                failure: LeaderboardError = self._transport_error(error)
            except LeaderboardError as error:
                failure = error
            time.sleep(self._next_wait(call, failure, attempt))
            attempt += 1

    # ------------------------------------------------------------------ writes

    def submit_score(
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
        return cast(ScoreResult, self._send(calls.submit_score(self.game, board, body, key)))

    def submit_scores(self, items: Iterable[ScoreItem], *, idempotency_key: str | None = None) -> list[BatchResult]:
        """Any number of scores to any of the game's boards: batches of 1,000, results in order."""
        results: list[BatchResult] = []
        for call in calls.submit_batches(self.game, cast(Iterable[Mapping[str, Any]], items), idempotency_key):
            results += self._send(call)["results"]
        return results

    def report_presence(self, *, online: Sequence[str] = (), offline: Sequence[str] = ()) -> PresenceReport:
        return self._merge_reports([self._send(c) for c in calls.report_presence(self.game, online, offline)])

    def join(
        self, board: str, player_id: str, *, display_name: str | None = None, rating: int | None = None
    ) -> CompetitionEntry:
        """Enter the player in a competing board's current period (the same entry if they had).
        ``rating``: where cohorts are bands of rating (refused elsewhere)."""
        return cast(CompetitionEntry, self._send(calls.join(self.game, board, player_id, display_name, rating)))

    def grant_attempts(self, board: str, player_id: str, add: int = 1) -> AttemptsGranted:
        """More attempts for the player this period (a manage key). Not retried: grants add up."""
        return cast(AttemptsGranted, self._send(calls.grant_attempts(self.game, board, player_id, add)))

    def end(self, board: str) -> Leaderboard:
        """End a competing season board's competition now (a manage key): it takes no more scores,
        and settles after its settle_delay_secs. Not retried: a repeat is 409 ``not_endable``."""
        return cast(Leaderboard, self._send(calls.end(self.game, board)))

    def claim(self, grant_id: str) -> RewardGrant:
        """Claim a pending reward; a repeat (a retry too) answers the same claimed reward. 410 Gone
        (``reward_expired``) once its claim window has passed."""
        return cast(RewardGrant, self._send(calls.claim(self.game, grant_id)))

    def link_code(self, player_id: str) -> LinkCode:
        return cast(LinkCode, self._send(calls.link_code(self.game, player_id)))

    # ------------------------------------------------------------------ reads

    def games(self) -> list[Game]:
        return cast(list[Game], self._send(calls.games()))

    def game_info(self) -> Game:
        return cast(Game, self._send(calls.game(self.game)))

    def leaderboards(self) -> list[Leaderboard]:
        return cast(list[Leaderboard], self._send(calls.leaderboards(self.game)))

    def page(
        self, board: str, period: Period = "all-time", *, period_id: str | None = None, offset: int = 0, limit: int = 50
    ) -> BoardPage:
        return cast(BoardPage, self._send(calls.page(self.game, board, period, period_id, offset, limit)))

    def standing(self, board: str, period: Period, player_id: str, *, period_id: str | None = None) -> Standing:
        return cast(Standing, self._send(calls.standing(self.game, board, period, period_id, player_id)))

    @overload
    def around(
        self, board: str, period: Period, player_id: str, *, radius: int = ..., period_id: str | None = ...,
        scope: Literal["board"] = ...,
    ) -> BoardPage: ...  # fmt: skip
    @overload
    def around(
        self, board: str, period: Period, player_id: str, *, radius: int = ..., period_id: str | None = ...,
        scope: Literal["cohort"],
    ) -> CohortBoard: ...  # fmt: skip
    def around(
        self,
        board: str,
        period: Period,
        player_id: str,
        *,
        radius: int = 5,
        period_id: str | None = None,
        scope: Scope = "board",
    ) -> BoardPage | CohortBoard:
        """The player and their neighbours, on the whole board or (``scope="cohort"``) in their cohort."""
        return cast(BoardPage, self._send(calls.around(self.game, board, period, period_id, player_id, radius, scope)))

    @overload
    def friends(
        self, board: str, period: Period, player_ids: Sequence[str], *, period_id: str | None = ...,
        scope: Literal["board"] = ...,
    ) -> FriendsPage: ...  # fmt: skip
    @overload
    def friends(
        self, board: str, period: Period, player_ids: Sequence[str], *, period_id: str | None = ...,
        scope: Literal["cohort"],
    ) -> CohortFriendsPage: ...  # fmt: skip
    def friends(
        self,
        board: str,
        period: Period,
        player_ids: Sequence[str],
        *,
        period_id: str | None = None,
        scope: Scope = "board",
    ) -> FriendsPage | CohortFriendsPage:
        """The players ranked on the whole board or (``scope="cohort"``) each within their cohort."""
        return cast(FriendsPage, self._send(calls.friends(self.game, board, period, period_id, player_ids, scope)))

    def cohorts(
        self, board: str, period: Period, *, period_id: str | None = None, offset: int = 0, limit: int = 50
    ) -> CohortsPage:
        """A competing period's cohorts with their sizes (409 Conflict ``no_cohorts`` without cohorts)."""
        return cast(CohortsPage, self._send(calls.cohorts(self.game, board, period, period_id, offset, limit)))

    def cohort(
        self,
        board: str,
        period: Period,
        cohort: str,
        *,
        period_id: str | None = None,
        offset: int = 0,
        limit: int = 50,
    ) -> CohortBoard:
        """A page of one cohort, ranked within it."""
        call = calls.cohort(self.game, board, period, period_id, cohort, offset, limit)
        return cast(CohortBoard, self._send(call))

    def settlement(
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
        """How a finished competing period settled (404 NotFound ``not_settled`` until it has)."""
        call = calls.settlement(self.game, board, period, period_id, cohort, player_id, offset, limit)
        return cast(Settlement, self._send(call))

    def settlement_preview(
        self,
        board: str,
        period: Period,
        *,
        cohort: str | None = None,
        player_id: str | None = None,
        offset: int = 0,
        limit: int = 50,
    ) -> Settlement:
        """What the current period would settle if it ended now (nothing is written)."""
        call = calls.settlement(self.game, board, period, None, cohort, player_id, offset, limit)
        return cast(Settlement, self._send(call))

    def export(
        self, board: str, period: Period, *, to: IO[bytes], period_id: str = "current", format: ExportFormat = "csv"
    ) -> int:
        """Writes a period's standings as a file (CSV or JSON Lines) into ``to`` (a file opened
        "wb") as they stream in, and returns the bytes written. Errors are raised before any byte
        is written (and 429/503 retried then); a connection lost mid-way raises TransportError."""
        call = calls.export(self.game, board, period, period_id, format)
        attempt = 0
        while True:
            written = 0
            try:
                with self._http.stream(**self._request(call)) as response:
                    if response.status_code >= 400:
                        response.read()
                        self._result(response)
                    for chunk in response.iter_bytes():
                        written += to.write(chunk)
                    return written
            except httpx.TransportError as error:
                if written:
                    raise self._transport_error(error) from error
                failure: LeaderboardError = self._transport_error(error)
            except LeaderboardError as error:
                failure = error
            time.sleep(self._next_wait(call, failure, attempt))
            attempt += 1

    def player(self, player_id: str) -> Profile:
        return cast(Profile, self._send(calls.player(self.game, player_id)))

    def find_players(self, query: str, *, limit: int = 20) -> list[NamedPlayer]:
        return cast(list[NamedPlayer], self._send(calls.find_players(self.game, query, limit))["players"])

    def recent(self, *, limit: int = 20) -> list[Recent]:
        return cast(list[Recent], self._send(calls.recent(self.game, limit)))

    def presence(self, *, offset: int = 0, limit: int = 50) -> PresencePage:
        return cast(PresencePage, self._send(calls.presence(self.game, offset, limit)))

    def player_presence(self, player_id: str) -> PlayerPresence:
        return cast(PlayerPresence, self._send(calls.player_presence(self.game, player_id)))

    def archived_periods(
        self, board: str, *, period: Period | None = None, offset: int = 0, limit: int = 50
    ) -> ArchivedPeriods:
        return cast(ArchivedPeriods, self._send(calls.archived_periods(self.game, board, period, offset, limit)))

    def rewards(
        self, player_id: str, *, status: RewardStatus | None = None, offset: int = 0, limit: int = 20
    ) -> PlayerRewards:
        """The player's rewards, newest first (``status="pending"``: what they can claim now)."""
        return cast(PlayerRewards, self._send(calls.rewards(self.game, player_id, status, offset, limit)))

    def league(self, board: str, player_id: str, *, offset: int = 0, limit: int = 20) -> PlayerLeague:
        """The player's tier on a league board and their moves (409 Conflict on a board without tiers)."""
        return cast(PlayerLeague, self._send(calls.league(self.game, board, player_id, offset, limit)))
