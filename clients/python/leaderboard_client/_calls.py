"""Every API call as a plain description (method, path, query, body, idempotency), shared by
the sync and the async client, and the retry rule they both follow."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

# The API takes at most this many scores per batch request: more are sent in several.
MAX_BATCH_ITEMS = 1000
# ...and this many player ids per presence report.
MAX_PRESENCE_IDS = 1000


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    params: Mapping[str, Any] = field(default_factory=dict)
    json: Any = None
    idempotency_key: str | None = None
    # A write the API answers alike however often it is sent (a reward's claim): safe to retry.
    repeatable: bool = False

    @property
    def retryable(self) -> bool:
        """Reads always; writes with an Idempotency-Key (a retry is then applied once), or that
        are the same when repeated."""
        return self.method == "GET" or self.idempotency_key is not None or self.repeatable

    def headers(self) -> dict[str, str]:
        return {"Idempotency-Key": self.idempotency_key} if self.idempotency_key else {}


@dataclass(frozen=True)
class RetryPolicy:
    """How 429 and 503 answers (and lost connections, for retryable calls) are retried."""

    max_retries: int = 3
    # Waits longer than this are not waited for: the error is raised instead.
    max_wait_secs: float = 30.0
    # Without a Retry-After (a lost connection): this, doubled each time.
    backoff_secs: float = 0.5

    def wait(self, attempt: int, retry_after: float | None) -> float | None:
        """Seconds to wait before attempt ``attempt + 1``, or None to give up."""
        if attempt >= self.max_retries:
            return None
        seconds = retry_after if retry_after is not None else self.backoff_secs * 2**attempt
        return seconds if seconds <= self.max_wait_secs else None


def _p(value: str) -> str:
    return quote(value, safe="")


def _period_path(board: str, period: str, period_id: str | None) -> str:
    path = f"/leaderboards/{_p(board)}/{_p(period)}"
    return path + (f"/{_p(period_id)}" if period_id else "")


def new_key() -> str:
    return uuid.uuid4().hex


def score_body(
    player_id: str, score: int, display_name: str | None, metadata: Mapping[str, Any] | None
) -> dict[str, Any]:
    body: dict[str, Any] = {"player_id": player_id, "score": score}
    if display_name is not None:
        body["display_name"] = display_name
    if metadata is not None:
        body["metadata"] = dict(metadata)
    return body


def submit_score(game: str, board: str, body: dict[str, Any], idempotency_key: str | None) -> Call:
    path = f"/games/{_p(game)}/leaderboards/{_p(board)}/scores"
    return Call("POST", path, json=body, idempotency_key=idempotency_key)


def submit_batches(game: str, items: Iterable[Mapping[str, Any]], idempotency_key: str | None) -> list[Call]:
    """One call per MAX_BATCH_ITEMS items, each with its own key (``<key>:<n>`` when given)."""
    listed = [dict(item) for item in items]
    calls = []
    for n, start in enumerate(range(0, len(listed), MAX_BATCH_ITEMS)):
        key = f"{idempotency_key}:{n}" if idempotency_key else new_key()
        chunk = listed[start : start + MAX_BATCH_ITEMS]
        calls.append(Call("POST", f"/games/{_p(game)}/scores/batch", json={"scores": chunk}, idempotency_key=key))
    return calls


def report_presence(game: str, online: Sequence[str], offline: Sequence[str]) -> list[Call]:
    """One call per MAX_PRESENCE_IDS ids (a heartbeat repeats harmlessly: no key needed)."""
    online, offline = list(online), list(offline)
    calls: list[Call] = []
    while online or offline or not calls:
        take_on = online[:MAX_PRESENCE_IDS]
        take_off = offline[: MAX_PRESENCE_IDS - len(take_on)]
        online, offline = online[len(take_on) :], offline[len(take_off) :]
        calls.append(Call("POST", f"/games/{_p(game)}/presence", json={"online": take_on, "offline": take_off}))
    return calls


def join(game: str, board: str, player_id: str, display_name: str | None, rating: int | None) -> Call:
    body: dict[str, Any] = {"player_id": player_id}
    if display_name is not None:
        body["display_name"] = display_name
    if rating is not None:
        body["rating"] = rating
    return Call("POST", f"/games/{_p(game)}/leaderboards/{_p(board)}/entries", json=body)


def grant_attempts(game: str, board: str, player_id: str, add: int) -> Call:
    return Call(
        "POST", f"/games/{_p(game)}/leaderboards/{_p(board)}/players/{_p(player_id)}/attempts", json={"add": add}
    )


def end(game: str, board: str) -> Call:
    # Not retried after a lost answer: a repeat finds the season over (409 not_endable).
    return Call("POST", f"/games/{_p(game)}/leaderboards/{_p(board)}/end")


def claim(game: str, grant_id: str) -> Call:
    return Call("POST", f"/games/{_p(game)}/rewards/{_p(grant_id)}/claim", repeatable=True)


def link_code(game: str, player_id: str) -> Call:
    return Call("POST", f"/games/{_p(game)}/players/{_p(player_id)}/link-code")


def games() -> Call:
    return Call("GET", "/games")


def game(game: str) -> Call:
    return Call("GET", f"/games/{_p(game)}")


def leaderboards(game: str) -> Call:
    return Call("GET", f"/games/{_p(game)}/leaderboards")


def page(game: str, board: str, period: str, period_id: str | None, offset: int, limit: int) -> Call:
    path = f"/games/{_p(game)}" + _period_path(board, period, period_id)
    return Call("GET", path, params={"offset": offset, "limit": limit})


def standing(game: str, board: str, period: str, period_id: str | None, player_id: str) -> Call:
    return Call("GET", f"/games/{_p(game)}" + _period_path(board, period, period_id) + f"/players/{_p(player_id)}")


def _scoped(params: dict[str, Any], scope: str) -> dict[str, Any]:
    # The board's scope is the API's default: left out, the URL is what it always was.
    return params if scope == "board" else {**params, "scope": scope}


def around(game: str, board: str, period: str, period_id: str | None, player_id: str, radius: int, scope: str) -> Call:
    path = f"/games/{_p(game)}" + _period_path(board, period, period_id) + f"/players/{_p(player_id)}/around"
    return Call("GET", path, params=_scoped({"radius": radius}, scope))


def friends(game: str, board: str, period: str, period_id: str | None, player_ids: Sequence[str], scope: str) -> Call:
    path = f"/games/{_p(game)}" + _period_path(board, period, period_id) + "/players"
    return Call("GET", path, params=_scoped({"ids": ",".join(player_ids)}, scope))


def cohorts(game: str, board: str, period: str, period_id: str | None, offset: int, limit: int) -> Call:
    path = f"/games/{_p(game)}" + _period_path(board, period, period_id) + "/cohorts"
    return Call("GET", path, params={"offset": offset, "limit": limit})


def cohort(game: str, board: str, period: str, period_id: str | None, cohort: str, offset: int, limit: int) -> Call:
    path = f"/games/{_p(game)}" + _period_path(board, period, period_id) + f"/cohorts/{_p(cohort)}"
    return Call("GET", path, params={"offset": offset, "limit": limit})


def export(game: str, board: str, period: str, period_id: str, format: str) -> Call:
    """A period's standings as a file (``period_id`` ``current`` for the current period)."""
    return Call("GET", f"/games/{_p(game)}{_period_path(board, period, period_id)}/export", {"format": format})


def settlement(
    game: str,
    board: str,
    period: str,
    period_id: str | None,
    cohort: str | None,
    player_id: str | None,
    offset: int,
    limit: int,
) -> Call:
    """A settled period's outcome, or (``period_id`` None) the current period's preview."""
    tail = "/settlement" if period_id is not None else "/settlement/preview"
    params: dict[str, Any] = {"offset": offset, "limit": limit}
    if cohort is not None:
        params["cohort"] = cohort
    if player_id is not None:
        params["player_id"] = player_id
    return Call("GET", f"/games/{_p(game)}" + _period_path(board, period, period_id) + tail, params=params)


def player(game: str, player_id: str) -> Call:
    return Call("GET", f"/games/{_p(game)}/players/{_p(player_id)}")


def find_players(game: str, query: str, limit: int) -> Call:
    return Call("GET", f"/games/{_p(game)}/players", params={"q": query, "limit": limit})


def recent(game: str, limit: int) -> Call:
    return Call("GET", f"/games/{_p(game)}/recent", params={"limit": limit})


def presence(game: str, offset: int, limit: int) -> Call:
    return Call("GET", f"/games/{_p(game)}/presence", params={"offset": offset, "limit": limit})


def player_presence(game: str, player_id: str) -> Call:
    return Call("GET", f"/games/{_p(game)}/presence/{_p(player_id)}")


def archived_periods(game: str, board: str, period: str | None, offset: int, limit: int) -> Call:
    params: dict[str, Any] = {"offset": offset, "limit": limit}
    if period:
        params["period"] = period
    return Call("GET", f"/games/{_p(game)}/leaderboards/{_p(board)}/periods", params=params)


def rewards(game: str, player_id: str, status: str | None, offset: int, limit: int) -> Call:
    params: dict[str, Any] = {"offset": offset, "limit": limit}
    if status:
        params["status"] = status
    return Call("GET", f"/games/{_p(game)}/players/{_p(player_id)}/rewards", params=params)


def league(game: str, board: str, player_id: str, offset: int, limit: int) -> Call:
    path = f"/games/{_p(game)}/leaderboards/{_p(board)}/players/{_p(player_id)}/league"
    return Call("GET", path, params={"offset": offset, "limit": limit})
