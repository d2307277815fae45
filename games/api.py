"""The JSON API (django-ninja) of scores and standings, and what every endpoint shares:
the API object, its error envelope, the bearer-key scheme. leaderboard_site/api.py
mounts this module's routers beside those of presence and accounts. Endpoints adapt
HTTP to services and selectors only."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse
from ninja import NinjaAPI, Query, Router
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.security import HttpBearer
from pydantic import ValidationError as PydanticValidationError

from . import config, selectors, services
from .errors import ServiceError, not_found
from .models import is_player_id
from .schemas import (
    BatchIn,
    BatchOut,
    BoardOut,
    ErrorOut,
    FriendsOut,
    GameOut,
    PeriodOut,
    RecentOut,
    ScoreIn,
    ScoreOut,
    StandingOut,
)

MAX_PAGE_LIMIT = 200
MAX_AROUND_RADIUS = 50
MAX_FRIENDS = 100
MAX_OFFSET = 10**9
IDEMPOTENCY_KEY_RE = re.compile(r"^[\x20-\x7e]{1,255}$")


class BearerKey(HttpBearer):
    """Only documents the scheme and extracts the token; services.request_authorize checks it.

    Async so that ninja awaits it instead of running it on a thread."""

    async def __call__(self, request: HttpRequest) -> str | None:  # type: ignore[override]
        scheme, _, token = request.headers.get(self.header, "").partition(" ")
        return token.strip() or None if scheme.lower() == self.openapi_scheme else None

    def authenticate(self, request: HttpRequest, token: str) -> str | None:
        return token or None


api = NinjaAPI(
    title="Leaderboard API",
    version="1",
    description='Post scores from game servers; read standings. Errors are `{"error": {"code", "message", "field"}}`.',
    urls_namespace="api",
    docs_url=None,
)

ERRORS: dict[int, type] = {
    400: ErrorOut,
    401: ErrorOut,
    403: ErrorOut,
    404: ErrorOut,
    413: ErrorOut,
    422: ErrorOut,
    429: ErrorOut,
    503: ErrorOut,
}
READ_ERRORS: dict[int, type] = {404: ErrorOut, 422: ErrorOut}


def error_response(
    request: HttpRequest, status: int, code: str, message: str, field: str | None = None
) -> HttpResponse:
    return api.create_response(request, {"error": {"code": code, "message": message, "field": field}}, status=status)


@api.exception_handler(ServiceError)
def _service_error(request: HttpRequest, exc: ServiceError) -> HttpResponse:
    response = error_response(request, exc.status, exc.code, exc.message, exc.field)
    for name, value in exc.headers.items():
        response[name] = value
    return response


@api.exception_handler(ValidationError)
def _validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    first = exc.errors[0] if exc.errors else {"loc": (), "msg": "Invalid request."}
    loc = [str(part) for part in first.get("loc", ()) if part not in ("body", "payload", "query", "path")]
    field = ".".join(loc) or None
    message = first.get("msg", "Invalid value.")
    if first.get("type") == "missing":
        message = "This field is required."
    elif first.get("type") == "extra_forbidden":
        message = "Unknown field."
    return error_response(request, 422, "invalid", message, field)


@api.exception_handler(HttpError)
def _http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    if exc.status_code == 400:
        return error_response(request, 400, "malformed_json", "The request body is not valid JSON.")
    return error_response(request, exc.status_code, "error", exc.message)


@api.exception_handler(AuthenticationError)
def _auth_error(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    return error_response(request, 401, "missing_api_key", "Send the API key as 'Authorization: Bearer <key>'.")


@api.exception_handler(RequestDataTooBig)
def _too_big(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
    return error_response(request, 413, "body_too_large", "The request body is over 1 MiB.")


# --------------------------------------------------------------------------- writes

writes = Router(tags=["scores"])


def _idempotency(request: HttpRequest, body: Any) -> tuple[str | None, str]:
    raw = request.headers.get("Idempotency-Key")
    if raw is None:
        return None, ""
    if not IDEMPOTENCY_KEY_RE.match(raw):
        raise ServiceError(422, "invalid", "1-255 printable ASCII characters.", field="Idempotency-Key")
    return raw, _fingerprint(body)


def _score_out(result: services.Submitted) -> dict[str, Any]:
    return {
        "player_id": result.player_id,
        "display_name": result.display_name,
        "periods": {
            kind: {"period_id": s.period_id, "score": s.score, "rank": s.rank} for kind, s in result.periods.items()
        },
    }


@writes.post(
    "/games/{game}/scores",
    response={200: ScoreOut, **ERRORS},
    auth=BearerKey(),
    summary="Submit one score",
)
async def submit_score(request: HttpRequest, game: str, payload: ScoreIn) -> HttpResponse:
    """Applies the score to every period board of the game at once and returns the
    player's new score and rank in each. Send `Idempotency-Key` to make retries safe."""
    authorized = await services.request_authorize(raw_key=request.auth, game_slug=game)  # type: ignore[attr-defined]
    key, fingerprint = _idempotency(request, payload.model_dump())
    idempotency = services.Idempotency(authorized.api_key.prefix, key, fingerprint) if key else None
    try:
        result = await services.score_submit(
            game=authorized.game,
            player_id=payload.player_id,
            score=payload.score,
            display_name=payload.display_name,
            idempotency=idempotency,
        )
    except ServiceError as error:
        error.headers = {**authorized.rate_headers, **error.headers}
        raise
    return ok_response(request, _score_out(result), authorized, replayed=result.replayed)


def ok_response(
    request: HttpRequest, body: dict[str, Any], authorized: services.Authorized, *, replayed: bool
) -> HttpResponse:
    # Rendered directly: the response= schemas document the shape, and checking
    # our own output on every request cost a fifth of a batch's time.
    response = api.create_response(request, body, status=200)
    for name, value in authorized.rate_headers.items():
        response[name] = value
    if replayed:
        response["Idempotent-Replayed"] = "true"
    return response


def _fingerprint(body: Any) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _item(raw: Any, index: int, *, with_fingerprint: bool) -> tuple[services.Submission | ServiceError, str]:
    """One batch item, validated alone, and its idempotency fingerprint (if one is needed)."""
    try:
        item = ScoreIn.model_validate(raw)
    except PydanticValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or None
        message = "This field is required." if first["type"] == "missing" else first["msg"]
        problem = ServiceError(422, "invalid", message, field=f"scores[{index}]" + (f".{field}" if field else ""))
        return problem, _fingerprint(raw) if with_fingerprint else ""
    submission = services.Submission(item.player_id, item.score, item.display_name)
    return submission, _fingerprint(item.model_dump()) if with_fingerprint else ""


@writes.post(
    "/games/{game}/scores/batch",
    response={200: BatchOut, **ERRORS},
    auth=BearerKey(),
    summary="Submit up to 1,000 scores",
)
async def submit_batch(request: HttpRequest, game: str, payload: BatchIn) -> HttpResponse:
    """Each item is applied atomically on its own, in one pipelined round trip; `results`
    follow the order of `scores`, each a score response or an `error` object. With an
    `Idempotency-Key`, each item is remembered by its position and a retry replays all."""
    authorized = await services.request_authorize(raw_key=request.auth, game_slug=game)  # type: ignore[attr-defined]
    key, _ = _idempotency(request, None)  # items carry their own fingerprints
    items, fingerprints = zip(
        *(_item(raw, i, with_fingerprint=bool(key)) for i, raw in enumerate(payload.scores)), strict=True
    )
    results = await services.score_submit_many(
        game=authorized.game,
        items=items,
        idempotency=services.Idempotency(authorized.api_key.prefix, key, "") if key else None,
        item_fingerprints=fingerprints,
    )
    out: list[dict[str, Any]] = []
    for i, result in enumerate(results):
        if isinstance(result, services.Submitted):
            out.append(_score_out(result))
            continue
        field = result.field or ""
        if not field.startswith("scores["):
            field = f"scores[{i}]" + (f".{field}" if field else "")
        out.append({"error": {**result.as_dict(), "field": field}})
    submitted = [r for r in results if isinstance(r, services.Submitted)]
    replayed = bool(submitted) and all(r.replayed for r in submitted)
    return ok_response(request, {"results": out}, authorized, replayed=replayed)


# --------------------------------------------------------------------------- reads

reads = Router(tags=["standings"])


async def game_or_404(slug: str) -> config.GameConfig:
    game = await config.get_game(slug)
    if game is None:
        raise ServiceError(404, "game_not_found", f"No game {slug!r}.")
    return game


def _periods_out(game: config.GameConfig) -> list[dict[str, Any]]:
    return [
        {"period": p.kind, "period_id": p.id, "starts_at": p.starts_at, "resets_at": p.ends_at}
        for p in selectors.current_periods(game=game)
    ]


def _game_out(game: config.GameConfig) -> dict[str, Any]:
    return {
        "slug": game.slug,
        "name": game.name,
        "description": game.description,
        "mode": game.mode,
        "order": game.order,
        "timezone": game.timezone,
        "periods": _periods_out(game),
    }


def _board_out(board: selectors.Board) -> dict[str, Any]:
    return {
        "period": board.period.kind,
        "period_id": board.period.id,
        "resets_at": board.period.ends_at,
        "total": board.total,
        "entries": [vars(e) for e in board.entries],
    }


def checked_player_id(value: str) -> str:
    if not is_player_id(value):
        raise ServiceError(422, "invalid", "1-64 characters of A-Z a-z 0-9 _ . : -", field="player_id")
    return value


@reads.get("/games", response=list[GameOut], summary="List games")
async def list_games(request: HttpRequest) -> Any:
    """Active games with their periods, current period ids and when each resets next."""
    return [_game_out(g) for g in await config.list_games()]


@reads.get("/games/{game}", response={200: GameOut, 404: ErrorOut}, summary="One game")
async def get_game(request: HttpRequest, game: str) -> Any:
    return _game_out(await game_or_404(game))


@reads.get("/games/{game}/periods/current", response={200: list[PeriodOut], 404: ErrorOut}, summary="Current periods")
async def current_periods(request: HttpRequest, game: str) -> Any:
    return _periods_out(await game_or_404(game))


@reads.get("/games/{game}/recent", response={200: list[RecentOut], **READ_ERRORS}, summary="Recent submissions")
async def recent(request: HttpRequest, game: str, limit: int = Query(20, ge=1, le=50)) -> Any:
    return [vars(r) for r in await selectors.recent_submissions(game=await game_or_404(game), limit=limit)]


def _ids(ids: str) -> list[str]:
    parsed = list(dict.fromkeys(i for i in ids.split(",") if i))
    if not parsed:
        raise ServiceError(422, "invalid", "Give at least one player id.", field="ids")
    if len(parsed) > MAX_FRIENDS:
        raise ServiceError(422, "invalid", f"At most {MAX_FRIENDS} player ids.", field="ids")
    for player_id in parsed:
        if not is_player_id(player_id):
            raise ServiceError(422, "invalid", f"{player_id[:70]!r} is not a valid player id.", field="ids")
    return parsed


async def _friends(game: str, period: str, ids: str, period_id: str | None) -> dict[str, Any]:
    board, missing = await selectors.players_ranked(
        game=await game_or_404(game), period=period, player_ids=_ids(ids), period_id=period_id
    )
    return {**_board_out(board), "missing": missing}


async def _standing(game: str, period: str, player_id: str, period_id: str | None) -> dict[str, Any]:
    standing = await selectors.player_standing(
        game=await game_or_404(game), period=period, player_id=checked_player_id(player_id), period_id=period_id
    )
    if standing is None:
        raise not_found(f"Player {player_id!r} has no score on this board.")
    return vars(standing)


async def _around(game: str, period: str, player_id: str, radius: int, period_id: str | None) -> dict[str, Any]:
    board = await selectors.players_around(
        game=await game_or_404(game),
        period=period,
        player_id=checked_player_id(player_id),
        radius=radius,
        period_id=period_id,
    )
    if board is None:
        raise not_found(f"Player {player_id!r} has no score on this board.")
    return _board_out(board)


async def _page(game: str, period: str, offset: int, limit: int, period_id: str | None) -> dict[str, Any]:
    board = await selectors.leaderboard_page(
        game=await game_or_404(game), period=period, period_id=period_id, offset=offset, limit=limit
    )
    return _board_out(board)


Ids = Query(..., description="Comma-separated player ids, at most 100.")
Offset = Query(0, ge=0, le=MAX_OFFSET)
Limit = Query(50, ge=1, le=MAX_PAGE_LIMIT)
Radius = Query(5, ge=0, le=MAX_AROUND_RADIUS)

# Order matters: the literal 'players' routes come before '{period_id}'.


@reads.get(
    "/games/{game}/leaderboards/{period}/players", response={200: FriendsOut, **READ_ERRORS}, summary="Friends view"
)
async def friends(request: HttpRequest, game: str, period: str, ids: str = Ids) -> Any:
    """The given players ranked within the whole current board."""
    return await _friends(game, period, ids, None)


@reads.get(
    "/games/{game}/leaderboards/{period}/players/{player_id}",
    response={200: StandingOut, **READ_ERRORS},
    summary="A player's standing",
)
async def standing(request: HttpRequest, game: str, period: str, player_id: str) -> Any:
    return await _standing(game, period, player_id, None)


@reads.get(
    "/games/{game}/leaderboards/{period}/players/{player_id}/around",
    response={200: BoardOut, **READ_ERRORS},
    summary="Players around a player",
)
async def around(request: HttpRequest, game: str, period: str, player_id: str, radius: int = Radius) -> Any:
    """The player with up to `radius` entries each side; the window shifts at the top and
    bottom of the board so that it stays full where the board allows."""
    return await _around(game, period, player_id, radius, None)


@reads.get("/games/{game}/leaderboards/{period}", response={200: BoardOut, **READ_ERRORS}, summary="Current standings")
async def leaderboard(request: HttpRequest, game: str, period: str, offset: int = Offset, limit: int = Limit) -> Any:
    """`period` is daily, weekly, monthly or all-time; past the end, `entries` is empty."""
    return await _page(game, period, offset, limit, None)


@reads.get(
    "/games/{game}/leaderboards/{period}/{period_id}/players",
    response={200: FriendsOut, **READ_ERRORS},
    summary="Friends view of a named period",
)
async def friends_named(request: HttpRequest, game: str, period: str, period_id: str, ids: str = Ids) -> Any:
    return await _friends(game, period, ids, period_id)


@reads.get(
    "/games/{game}/leaderboards/{period}/{period_id}/players/{player_id}",
    response={200: StandingOut, **READ_ERRORS},
    summary="A player's standing in a named period",
)
async def standing_named(request: HttpRequest, game: str, period: str, period_id: str, player_id: str) -> Any:
    return await _standing(game, period, player_id, period_id)


@reads.get(
    "/games/{game}/leaderboards/{period}/{period_id}/players/{player_id}/around",
    response={200: BoardOut, **READ_ERRORS},
    summary="Players around a player in a named period",
)
async def around_named(
    request: HttpRequest, game: str, period: str, period_id: str, player_id: str, radius: int = Radius
) -> Any:
    return await _around(game, period, player_id, radius, period_id)


@reads.get(
    "/games/{game}/leaderboards/{period}/{period_id}",
    response={200: BoardOut, **READ_ERRORS},
    summary="Standings of a named period",
)
async def leaderboard_named(
    request: HttpRequest, game: str, period: str, period_id: str, offset: int = Offset, limit: int = Limit
) -> Any:
    """A period by id (e.g. `2026-11-22`, `2026-W47`, `2026-11`): from Redis while it is open or not yet
    archived, then from the archive in the database, with the same shapes."""
    return await _page(game, period, offset, limit, period_id)
