"""Errors: every error code the product answers with, its HTTP status, who meets it, and one
constructor per code; the one type the services raise (``ServiceError``, base.py); and what
counts as an outage (outages.py: Redis or the database unreachable is 503, not a bug).

No code string is written anywhere else: services raise
``errors.board_not_found(game=..., board=...)``, never ``ServiceError(404, "...")``. The API
renders a ``ServiceError`` as ``{"error": {"code", "message", "field"}}`` with its status, and
pages as a message.

The table (``CODES``, built by the ``_code`` lines below) is what docs/api.md's error tables and
the OpenAPI schema's error examples (core/openapi.py) are checked against
(tests/core/test_error_catalogue.py). A new code is one ``_code`` line, one constructor, a row in
docs/api.md's main table when an API client can meet it, and the operations that can answer it
in core/openapi.py's ``OPERATION_ERRORS``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, Protocol

from .. import clock
from .base import ServiceError as ServiceError
from .outages import DATABASE_ERRORS as DATABASE_ERRORS
from .outages import REDIS_DOWN_MESSAGE as REDIS_DOWN_MESSAGE
from .outages import REDIS_ERRORS as REDIS_ERRORS
from .outages import REDIS_FAILURES as REDIS_FAILURES
from .outages import UNAVAILABLE_ERRORS as UNAVAILABLE_ERRORS
from .outages import is_unavailable as is_unavailable
from .outages import report_unavailable as report_unavailable

# Who can meet a code: an API client ("api": docs/api.md lists it), a person on the site's pages
# ("site": log-in, sign-up, link codes), or an operator (admin, commands, background jobs: "ops").
Audience = Literal["api", "site", "ops"]


@dataclass(frozen=True)
class ErrorCode:
    code: str
    status: int
    when: str
    audience: Audience

    def error(self, message: str, *, field: str | None = None, headers: dict[str, str] | None = None) -> ServiceError:
        return ServiceError(self.status, self.code, message, field=field, headers=headers)


CODES: dict[str, ErrorCode] = {}


def _code(code: str, status: int, when: str, audience: Audience = "api") -> ErrorCode:
    if code in CODES:
        raise ValueError(f"error code {code!r} declared twice")
    CODES[code] = entry = ErrorCode(code, status, when, audience)
    return entry


# --------------------------------------------------------------------------- the table

MALFORMED_JSON = _code("malformed_json", 400, "The body is not valid JSON, or is empty.")
BAD_HOST = _code("bad_host", 400, "The `Host` header is not one this server serves (`ALLOWED_HOSTS`).")
BAD_REQUEST = _code("bad_request", 400, "A request Django refuses as malformed (too many fields, a bad header).")
MISSING_API_KEY = _code("missing_api_key", 401, "No `Authorization: Bearer <key>` header.")
INVALID_API_KEY = _code("invalid_api_key", 401, "The key is malformed or unknown.")
REVOKED_API_KEY = _code("revoked_api_key", 403, "The key has been revoked.")
WRONG_GAME = _code("wrong_game", 403, "The key belongs to another game.")
GAME_INACTIVE = _code("game_inactive", 403, "The game exists but is not accepting scores.")
PLAYER_HIDDEN = _code("player_hidden", 403, "The player is hidden (banned) in this game.")
SCOPE = _code("scope", 403, "A `submit` key called a board-managing endpoint: that needs a `manage` key.")
GAME_NOT_FOUND = _code("game_not_found", 404, "No game with this slug.")
BOARD_NOT_FOUND = _code("board_not_found", 404, "The game has no leaderboard with this slug.")
PERIOD_NOT_FOUND = _code("period_not_found", 404, "The period is unknown, not kept, malformed, or gone.")
COHORT_NOT_FOUND = _code(
    "cohort_not_found",
    404,
    "The period has no such cohort, or the player is in none (yet: balanced cohorts split later).",
)
NOT_FOUND = _code("not_found", 404, "The player has no score on this board; or no such API endpoint.")
NOT_SETTLED = _code(
    "not_settled", 404, "The competing period has not settled (yet): it runs, or waits for its review buffer."
)
REWARD_NOT_FOUND = _code("reward_not_found", 404, "The game has no reward with this id (unknown, or another game's).")
WEBHOOK_NOT_FOUND = _code(
    "webhook_not_found", 404, "The game has no webhook endpoint (or delivery of it) with this id."
)
PLAYER_NOT_FOUND = _code("player_not_found", 404, "The game knows no such player (erasure, correction).", "ops")
BOARD_MISSING = _code("board_missing", 404, "A period to archive is in neither Redis nor the archive.", "ops")
METHOD_NOT_ALLOWED = _code("method_not_allowed", 405, "The path exists, but not with this method.")
BODY_TIMEOUT = _code("body_timeout", 408, "The body was still incomplete `BODY_READ_TIMEOUT_SECS` after the headers.")
REWARD_EXPIRED = _code("reward_expired", 410, "A claim of a reward after its claim window (`expires_at`).")
BOARD_CLOSED = _code("board_closed", 409, "The board takes no scores now: outside its season, or out of play.")
BOARD_HAS_SCORES = _code("board_has_scores", 409, "A change of `mode`, `order` or `ties` while the board holds scores.")
COMPETITION_RUNNING = _code(
    "competition_running", 409, "A change of a competing board's entry rules while its current period has entrants."
)
CONFLICT = _code("conflict", 409, "The same board was created by another request at the same moment; retry.")
BOARD_LIMIT = _code("board_limit", 409, "A new board past the game's board limit (the message gives it).")
WEBHOOK_LIMIT = _code("webhook_limit", 409, "A new webhook endpoint past the game's limit (the message gives it).")
WEBHOOK_DISABLED = _code("webhook_disabled", 409, "A replay or test of a disabled webhook endpoint: enable it first.")
NOT_COMPETING = _code("not_competing", 409, "A join or an attempts grant on a board that runs no competition.")
NOT_A_LEAGUE = _code("not_a_league", 409, "A league read of a board that has no tiers.")
NOT_ENTERED = _code("not_entered", 409, "A score from a player who has not joined a board whose `entry` is `join`.")
ENTRY_CLOSED = _code("entry_closed", 409, "A join, or an open board's first score, after its period's entry window.")
BOARD_FULL = _code("board_full", 409, "A join, or an open board's first score, past the period's `max_entrants`.")
ATTEMPTS_EXHAUSTED = _code(
    "attempts_exhausted", 409, "A score past the player's attempts in the period (`max_attempts`)."
)
NOT_ENDABLE = _code(
    "not_endable", 409, "An end of a board that does not compete in a season, or whose season is not running."
)
NO_COHORTS = _code("no_cohorts", 409, "A cohort read of a board without cohorts, or of a window that does not compete.")
PERIOD_OPEN = _code("period_open", 409, "An archive of a period still open, without force.", "ops")
ARCHIVE_BUSY = _code("archive_busy", 409, "Another run is archiving the same period.", "ops")
BOARD_CHANGED = _code("board_changed", 409, "The board changed while it was being archived.", "ops")
CLAIM_LOST = _code("claim_lost", 409, "A close job's claim expired under its run.", "ops")
BODY_TOO_LARGE = _code("body_too_large", 413, "The body is over 1 MiB.")
METADATA_TOO_LARGE = _code("metadata_too_large", 413, "An entry's `metadata` is over 512 bytes as compact JSON.")
INVALID = _code("invalid", 422, "Validation failed: wrong type, missing or unknown field, a pattern, or a range.")
OUT_OF_BOUNDS = _code("out_of_bounds", 422, "The score is outside the board's `min_score`/`max_score`.")
SCORE_OVERFLOW = _code("score_overflow", 422, "An increment would take a total past what the board keeps exact.")
IDEMPOTENCY_MISMATCH = _code("idempotency_mismatch", 422, "The `Idempotency-Key` was used with a different body.")
INVALID_CODE = _code("invalid_code", 422, "A link code entered on the site is wrong, expired or used.", "site")
INVALID_LOGIN = _code("invalid_login", 422, "Wrong username or password.", "site")
NOT_ARCHIVED = _code("not_archived", 422, "An archive of an all-time window without a season.", "ops")
RATE_LIMITED = _code("rate_limited", 429, "The API key is over its per-minute limit.")
PLAYER_RATE_LIMITED = _code("player_rate_limited", 429, "The player is over the game's per-player limit.")
LINK_CODE_LIMIT = _code("link_code_limit", 429, "The player already has 3 live link codes.")
TOO_MANY_ATTEMPTS = _code("too_many_attempts", 429, "Too many wrong link codes entered on the site.", "site")
TOO_MANY_LOGINS = _code("too_many_logins", 429, "Too many failed log-ins.", "site")
TOO_MANY_SIGNUPS = _code("too_many_signups", 429, "Too many sign-ups from one network.", "site")
INTERNAL_ERROR = _code("internal_error", 500, "A bug: logged, and answered in the envelope.")
UNAVAILABLE = _code("unavailable", 503, "Redis or the database is unreachable (or hung for a second).")
LEDGER_FULL = _code("ledger_full", 503, "Scores arrive faster than the ledger's database copy takes them.")
NOT_REPLICATED = _code("not_replicated", 503, "With `SCORE_ACK=replica`, no replica confirmed the write in time.")
LINK_CODE_UNAVAILABLE = _code("link_code_unavailable", 503, "No free link code could be drawn; retry.")
REBUILD_BUSY = _code("rebuild_busy", 503, "Scores kept arriving faster than a rebuild could catch up.", "ops")


def api_codes() -> dict[str, ErrorCode]:
    """The codes an API client can meet (docs/api.md's error table lists exactly these)."""
    return {code: entry for code, entry in CODES.items() if entry.audience == "api"}


# --------------------------------------------------------------------------- shared texts

# Clients are told to retry after this long while Redis or the database is unreachable:
# a restart or a failover takes seconds.
UNAVAILABLE_RETRY_AFTER_SECS = 5
UNAVAILABLE_MESSAGE = (
    "The service is briefly unavailable; retry shortly. A write may or may not have been applied: "
    "retry it with the same Idempotency-Key to apply it exactly once."
)
API_KEY_MESSAGE = "Send the API key as 'Authorization: Bearer <key>'."
BODY_TOO_LARGE_MESSAGE = "The request body is over 1 MiB."
INTERNAL_ERROR_MESSAGE = "Something went wrong on our side; it has been logged."


class _Named(Protocol):
    """A game as the messages name it (core.models.Game or core.config.GameConfig)."""

    @property
    def name(self) -> str: ...


def _retry(secs: int) -> dict[str, str]:
    return {"Retry-After": str(max(1, secs))}


# --------------------------------------------------------------------------- 400, 401, 403


def malformed_json(*, empty: bool = False) -> ServiceError:
    if empty:
        return MALFORMED_JSON.error("The request body is empty; send a JSON object.")
    return MALFORMED_JSON.error("The request body is not valid JSON.")


def bad_host() -> ServiceError:
    return BAD_HOST.error("This host name is not served here.")


def bad_request() -> ServiceError:
    return BAD_REQUEST.error("The request was refused.")


def missing_api_key() -> ServiceError:
    return MISSING_API_KEY.error(API_KEY_MESSAGE)


def invalid_api_key() -> ServiceError:
    return INVALID_API_KEY.error("Unknown API key.")


def revoked_api_key() -> ServiceError:
    return REVOKED_API_KEY.error("This API key has been revoked.")


def wrong_game() -> ServiceError:
    return WRONG_GAME.error("This API key belongs to another game.")


def game_inactive() -> ServiceError:
    return GAME_INACTIVE.error("This game is not accepting scores.")


def player_hidden(*, field: str = "player_id", message: str = "This player is hidden in this game.") -> ServiceError:
    """``message`` says what the player cannot do (submit, be corrected) where that helps."""
    return PLAYER_HIDDEN.error(message, field=field)


def scope() -> ServiceError:
    return SCOPE.error("This needs an API key with the manage scope; this key may only submit.")


# --------------------------------------------------------------------------- 404, 405, 408


def game_not_found(*, slug: str) -> ServiceError:
    return GAME_NOT_FOUND.error(f"No game {slug[:70]!r}.")


def board_not_found(*, game: _Named, board: str) -> ServiceError:
    return BOARD_NOT_FOUND.error(f"{game.name} has no leaderboard {board[:70]!r}.", field="leaderboard")


def period_not_found(message: str) -> ServiceError:
    """``message`` says which: an unknown window, one the board does not keep, a bad id, gone."""
    return PERIOD_NOT_FOUND.error(message)


def not_found(what: str) -> ServiceError:
    return NOT_FOUND.error(what)


def reward_not_found(*, grant_id: str) -> ServiceError:
    """Unknown, or another game's: the two answer alike, so that a key learns nothing of other games."""
    return REWARD_NOT_FOUND.error(f"This game has no reward {grant_id[:40]!r}.", field="grant_id")


def player_not_found(*, player_id: str, game: _Named | None = None, field: str | None = None) -> ServiceError:
    if game is None:
        return PLAYER_NOT_FOUND.error(f"No player {player_id!r} in this game.", field=field)
    return PLAYER_NOT_FOUND.error(f"{game.name} has no player “{player_id}”.", field=field)


def board_missing(*, window: str, period_id: str) -> ServiceError:
    return BOARD_MISSING.error(
        f"No {window} board {period_id} is in Redis and it was never archived: nothing to archive. "
        "If Redis lost its data, run rebuild_leaderboards first."
    )


def method_not_allowed() -> ServiceError:
    return METHOD_NOT_ALLOWED.error("Method not allowed here.")


def body_timeout(*, secs: float) -> ServiceError:
    """The body was still incomplete ``secs`` after its headers (a stalled or trickling client)."""
    return BODY_TIMEOUT.error(
        f"The request body was still incomplete {secs:g} s after its headers: nothing was done, "
        "and the connection is closed."
    )


# --------------------------------------------------------------------------- 409


def board_closed(
    *, board: str, active: bool, starts_at: dt.datetime | None = None, ends_at: dt.datetime | None = None
) -> ServiceError:
    """Out of play (``active`` false), or outside the season from ``starts_at`` until ``ends_at``."""
    if not active:
        message = f"The leaderboard {board!r} is closed: it takes no more scores; its standings stay readable."
    else:
        season = f"from {clock.iso(starts_at) if starts_at else 'the start'}"
        season += f" until {clock.iso(ends_at)}" if ends_at else " on"
        message = f"The leaderboard {board!r} takes scores {season}."
    return BOARD_CLOSED.error(message, field="leaderboard")


def board_limit(*, limit: int) -> ServiceError:
    return BOARD_LIMIT.error(
        f"This game has {limit:,} leaderboards (in play or not), its limit: an operator can raise it "
        "(the game's max boards, in admin).",
        field="slug",
    )


def webhook_not_found(*, what: str, field: str) -> ServiceError:
    """Unknown, or another game's: the two answer alike."""
    return WEBHOOK_NOT_FOUND.error(f"This game has no webhook {what}.", field=field)


def webhook_limit(*, limit: int) -> ServiceError:
    return WEBHOOK_LIMIT.error(f"This game has {limit} webhook endpoints, its limit: delete one first.", field="url")


def webhook_disabled(*, reason: str) -> ServiceError:
    return WEBHOOK_DISABLED.error(
        f"The endpoint is disabled ({reason or 'by the studio'}): enable it first (PATCH enabled=true)."
    )


def board_has_scores(*, settings: Iterable[str]) -> ServiceError:
    moved = sorted(settings)
    return BOARD_HAS_SCORES.error(
        f"The {', '.join(moved)} of a board with scores can't change: its stored ranks depend on them. "
        "Make a new board instead.",
        field=moved[0] if moved else None,
    )


def not_competing(*, board: str) -> ServiceError:
    return NOT_COMPETING.error(
        f"The leaderboard {board!r} runs no competition: nobody joins it, and its attempts are unlimited.",
        field="leaderboard",
    )


def not_entered(*, board: str, period_id: str) -> ServiceError:
    return NOT_ENTERED.error(
        f"The player has not joined {board!r} for its period {period_id}: join it first "
        f"(POST …/leaderboards/{board}/entries).",
        field="player_id",
    )


def not_settled(*, period_id: str) -> ServiceError:
    return NOT_SETTLED.error(
        f"The period {period_id} has not settled: it settles when it ends, after the board's settle_delay_secs.",
        field="period_id",
    )


def not_endable(*, board: str, running: bool = True) -> ServiceError:
    if not running:
        return NOT_ENDABLE.error(f"The season of {board!r} is not running: it has not begun, or it is over.")
    return NOT_ENDABLE.error(
        f"Only a competing season ends early; {board!r} does not compete in its all-time window in a season "
        "(daily, weekly, monthly and custom periods end on their own).",
        field="leaderboard",
    )


def no_cohorts(*, board: str, message: str) -> ServiceError:
    return NO_COHORTS.error(message, field="leaderboard")


def cohort_not_found(*, cohort: str, period_id: str) -> ServiceError:
    return COHORT_NOT_FOUND.error(f"The period {period_id} has no cohort {cohort!r}.", field="cohort")


def no_cohort_yet(*, player_id: str, period_id: str) -> ServiceError:
    return COHORT_NOT_FOUND.error(
        f"{player_id!r} is in no cohort of the period {period_id}: not entered, or waiting for the balanced split "
        "(the board's competition.period.cohorts_at).",
        field="player_id",
    )


def not_a_league(*, board: str) -> ServiceError:
    return NOT_A_LEAGUE.error(
        f"The leaderboard {board!r} has no tiers: it runs no league, so nobody has a tier on it.",
        field="leaderboard",
    )


def entry_closed(*, period_id: str, closed_at: dt.datetime) -> ServiceError:
    return ENTRY_CLOSED.error(
        f"Entry to the period {period_id} closed at {clock.iso(closed_at)}; the next period opens it again.",
        field="player_id",
    )


def board_full(*, period_id: str, max_entrants: int) -> ServiceError:
    return BOARD_FULL.error(
        f"The period {period_id} has its {max_entrants:,} entrants (max_entrants); the next period opens it again.",
        field="player_id",
    )


def attempts_exhausted(*, period_id: str, used: int, allowed: int) -> ServiceError:
    return ATTEMPTS_EXHAUSTED.error(
        f"The player has used {used:,} of {allowed:,} attempts in the period {period_id}; "
        "a manage key can grant more (POST …/players/{player_id}/attempts).",
        field="player_id",
    )


def competition_running(*, settings: Iterable[str], window: str, period_id: str, entrants: int) -> ServiceError:
    changed = sorted(settings)
    return COMPETITION_RUNNING.error(
        f"The {', '.join(changed)} of this competition can't change while its {window} period {period_id} has "
        f"entrants ({entrants:,}): they entered under its rules. Change them once that period has ended.",
        field=changed[0] if changed else None,
    )


def conflict(message: str, *, field: str | None = None) -> ServiceError:
    return CONFLICT.error(message, field=field)


def period_open(*, window: str, period_id: str, ends_at: dt.datetime) -> ServiceError:
    return PERIOD_OPEN.error(
        f"The {window} period {period_id} is still open (it ends at {clock.iso(ends_at)}); "
        "force a snapshot to archive it now."
    )


def archive_busy(*, window: str | None = None, period_id: str | None = None) -> ServiceError:
    """Another run holds the period's lock (``window``, ``period_id``), or took it from this run (none)."""
    if window is None:
        return ARCHIVE_BUSY.error("This archive run lost its lock to another run; it stopped.")
    return ARCHIVE_BUSY.error(
        f"The {window} period {period_id} is being archived by another run right now; try again in a few minutes."
    )


def board_changed(*, window: str, period_id: str) -> ServiceError:
    return BOARD_CHANGED.error(
        f"The {window} board {period_id} changed while it was being archived (a player hidden or "
        "restored); the next attempt archives it again."
    )


def claim_lost() -> ServiceError:
    return CLAIM_LOST.error("The job's claim expired and was handed back; this run stopped.")


# --------------------------------------------------------------------------- 410


def reward_expired(*, grant_id: str, expires_at: dt.datetime) -> ServiceError:
    return REWARD_EXPIRED.error(
        f"The reward {grant_id[:40]!r} could be claimed until {clock.iso(expires_at)}; it has expired.",
        field="grant_id",
    )


# --------------------------------------------------------------------------- 413, 422


def body_too_large() -> ServiceError:
    return BODY_TOO_LARGE.error(BODY_TOO_LARGE_MESSAGE)


def metadata_too_large(*, size: int, limit: int) -> ServiceError:
    return METADATA_TOO_LARGE.error(
        f"Metadata is {size} bytes as compact JSON; at most {limit}.",
        field="metadata",
    )


def invalid(field: str | None, message: str) -> ServiceError:
    """The input named by ``field`` (None: the request as a whole) is refused, and ``message`` says why."""
    return INVALID.error(message, field=field)


def out_of_bounds(*, field: str, minimum: int | None = None, maximum: int | None = None) -> ServiceError:
    """Below the board's ``minimum``, or above its ``maximum`` (give the one that was passed)."""
    if minimum is not None:
        return OUT_OF_BOUNDS.error(f"Must be at least {minimum} on this board.", field=field)
    return OUT_OF_BOUNDS.error(f"Must be at most {maximum} on this board.", field=field)


def score_overflow(*, window: str, limit: int, field: str = "score") -> ServiceError:
    return SCORE_OVERFLOW.error(f"The {window} total would pass ±{limit:,} and stop being exact.", field=field)


def idempotency_mismatch() -> ServiceError:
    return IDEMPOTENCY_MISMATCH.error(
        "This Idempotency-Key was used with a different request body.", field="Idempotency-Key"
    )


def invalid_code(*, attempts_left: int) -> ServiceError:
    more = f" {attempts_left} more attempt{'s' if attempts_left != 1 else ''} before a pause." if attempts_left else ""
    return INVALID_CODE.error("This code is wrong, expired or already used." + more, field="code")


def invalid_login() -> ServiceError:
    return INVALID_LOGIN.error("Wrong username or password.", field="username")


def not_archived() -> ServiceError:
    return NOT_ARCHIVED.error("The all-time board never ends, so it is never archived.", field="period")


# --------------------------------------------------------------------------- 429


def rate_limited(message: str, *, retry_secs: int, headers: dict[str, str]) -> ServiceError:
    """``message`` names the budget that ran out; ``headers`` are the key's RateLimit headers."""
    return RATE_LIMITED.error(message, headers={**headers, **_retry(retry_secs)})


def player_rate_limited(*, per_minute: int, retry_secs: int) -> ServiceError:
    return PLAYER_RATE_LIMITED.error(
        f"This player may submit {per_minute} scores per minute to a board; retry in {max(1, retry_secs)} s.",
        field="player_id",
        headers=_retry(retry_secs),
    )


def link_code_limit(*, per_player: int, minutes: int, retry_secs: int) -> ServiceError:
    return LINK_CODE_LIMIT.error(
        f"At most {per_player} link codes per player per {minutes} minutes; retry in {max(1, retry_secs)} s.",
        headers=_retry(retry_secs),
    )


def too_many_attempts(*, wait: str, retry_secs: int) -> ServiceError:
    return TOO_MANY_ATTEMPTS.error(
        f"Too many wrong codes. Try again in {wait}.", field="code", headers=_retry(retry_secs)
    )


def too_many_logins(message: str, *, retry_secs: int) -> ServiceError:
    """``message`` says whether the account is slowed down or the address locked out, and for how long."""
    return TOO_MANY_LOGINS.error(message, headers=_retry(retry_secs))


def too_many_signups(*, wait: str, retry_secs: int) -> ServiceError:
    return TOO_MANY_SIGNUPS.error(
        f"Too many accounts were created from your network lately. Try again in {wait}.",
        headers=_retry(retry_secs),
    )


# --------------------------------------------------------------------------- 500, 503


def internal_error() -> ServiceError:
    return INTERNAL_ERROR.error(INTERNAL_ERROR_MESSAGE)


def unavailable() -> ServiceError:
    return UNAVAILABLE.error(UNAVAILABLE_MESSAGE, headers=_retry(UNAVAILABLE_RETRY_AFTER_SECS))


def ledger_full(*, retry_secs: int) -> ServiceError:
    return LEDGER_FULL.error(
        "Scores are arriving faster than they can be recorded; nothing was applied. Retry shortly.",
        headers=_retry(retry_secs),
    )


def not_replicated(*, timeout_ms: int) -> ServiceError:
    return NOT_REPLICATED.error(
        f"No replica confirmed this score within {timeout_ms} ms (SCORE_ACK=replica), so it "
        "is not acknowledged as stored. Retry with the same Idempotency-Key: it is applied exactly once.",
        headers=_retry(1),
    )


def link_code_unavailable() -> ServiceError:
    return LINK_CODE_UNAVAILABLE.error("Could not draw a free link code; try again.", headers=_retry(1))


def rebuild_busy() -> ServiceError:
    return REBUILD_BUSY.error("Scores kept arriving faster than the rebuild could catch up.", headers=_retry(60))
