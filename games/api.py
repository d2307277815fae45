"""Scores and standings endpoints of the JSON API (mounted in leaderboard_site/api.py).
Endpoints adapt HTTP to services and selectors only; core/api.py holds what every
endpoint shares (the error envelope, the bearer scheme, ``@authorized``)."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from django.http import HttpRequest
from ninja import Query, Router
from pydantic import ValidationError as PydanticValidationError

from core import config, text
from core.api import ERRORS, READ_ERRORS, Authorized, BearerKey, Ok, authorized, checked_player_id, game_or_404
from core.errors import ServiceError, not_found
from core.models import is_player_id
from core.schemas import ErrorOut

from . import selectors, services
from .schemas import (
    BatchIn,
    BatchOut,
    BoardOut,
    FriendsOut,
    GameOut,
    PeriodOut,
    PlayersFoundOut,
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
@authorized
async def submit_score(request: HttpRequest, key: Authorized, game: str, payload: ScoreIn) -> Ok:
    """Applies the score to every period board of the game at once and returns the
    player's new score and rank in each. Send `Idempotency-Key` to make retries safe."""
    idempotency_key, fingerprint = _idempotency(request, payload.model_dump())
    idempotency = services.Idempotency(key.api_key.prefix, idempotency_key, fingerprint) if idempotency_key else None
    result = await services.score_submit(
        game=key.game,
        player_id=payload.player_id,
        score=payload.score,
        display_name=payload.display_name,
        idempotency=idempotency,
    )
    return Ok(_score_out(result), replayed=result.replayed)


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
@authorized(items=lambda kwargs: len(kwargs["payload"].scores))
async def submit_batch(request: HttpRequest, key: Authorized, game: str, payload: BatchIn) -> Ok:
    """Each item is applied atomically on its own, in one pipelined round trip; `results`
    follow the order of `scores`, each a score response or an `error` object. With an
    `Idempotency-Key`, each item is remembered by its position and a retry replays all."""
    idempotency_key, _ = _idempotency(request, None)  # items carry their own fingerprints
    items, fingerprints = zip(
        *(_item(raw, i, with_fingerprint=bool(idempotency_key)) for i, raw in enumerate(payload.scores)), strict=True
    )
    results = await services.score_submit_many(
        game=key.game,
        items=items,
        idempotency=services.Idempotency(key.api_key.prefix, idempotency_key, "") if idempotency_key else None,
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
    return Ok({"results": out}, replayed=replayed)


# --------------------------------------------------------------------------- reads

reads = Router(tags=["standings"])


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


def board_out(board: selectors.Board) -> dict[str, Any]:
    return {
        "period": board.period.kind,
        "period_id": board.period.id,
        "resets_at": board.period.ends_at,
        "total": board.total,
        "entries": [vars(e) for e in board.entries],
    }


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


# A search returns at most this many players.
MAX_FOUND_PLAYERS = 50


@reads.get("/games/{game}/players", response={200: PlayersFoundOut, **READ_ERRORS}, summary="Find players by name")
async def find_players(
    request: HttpRequest,
    game: str,
    q: str = Query(..., min_length=1, max_length=64, description="The start of a display name, or a player id."),
    limit: int = Query(20, ge=1, le=MAX_FOUND_PLAYERS),
) -> Any:
    """Fast at any size: one range read of an index of names (no scan of the players)."""
    if text.has_control_characters(q):
        raise ServiceError(422, "invalid", text.CONTROL_MESSAGE, field="q")
    found = await selectors.players_named(game=await game_or_404(game), query=q, limit=limit)
    return {"players": [vars(p) for p in found]}


def player_ids_param(ids: str) -> list[str]:
    """The ``ids`` query parameter of the friends views: distinct, valid, 1 to MAX_FRIENDS."""
    parsed = list(dict.fromkeys(i for i in ids.split(",") if i))
    if not parsed:
        raise ServiceError(422, "invalid", "Give at least one player id.", field="ids")
    if len(parsed) > MAX_FRIENDS:
        raise ServiceError(422, "invalid", f"At most {MAX_FRIENDS} player ids.", field="ids")
    for player_id in parsed:
        if not is_player_id(player_id):
            raise ServiceError(422, "invalid", f"{player_id[:70]!r} is not a valid player id.", field="ids")
    return parsed


def not_on_board(player_id: str) -> ServiceError:
    return not_found(f"Player {player_id!r} has no score on this board.")


Ids = Query(..., description="Comma-separated player ids, at most 100.")
Offset = Query(0, ge=0, le=MAX_OFFSET)
Limit = Query(50, ge=1, le=MAX_PAGE_LIMIT)
Radius = Query(5, ge=0, le=MAX_AROUND_RADIUS)

# Order matters: the literal 'players' routes come before archive/api.py's '{period_id}'
# (leaderboard_site/api.py mounts this router first).


@reads.get(
    "/games/{game}/leaderboards/{period}/players", response={200: FriendsOut, **READ_ERRORS}, summary="Friends view"
)
async def friends(request: HttpRequest, game: str, period: str, ids: str = Ids) -> Any:
    """The given players ranked within the whole current board."""
    board, missing = await selectors.players_ranked(
        game=await game_or_404(game), period=period, player_ids=player_ids_param(ids)
    )
    return {**board_out(board), "missing": missing}


@reads.get(
    "/games/{game}/leaderboards/{period}/players/{player_id}",
    response={200: StandingOut, **READ_ERRORS},
    summary="A player's standing",
)
async def standing(request: HttpRequest, game: str, period: str, player_id: str) -> Any:
    found = await selectors.player_standing(
        game=await game_or_404(game), period=period, player_id=checked_player_id(player_id)
    )
    if found is None:
        raise not_on_board(player_id)
    return vars(found)


@reads.get(
    "/games/{game}/leaderboards/{period}/players/{player_id}/around",
    response={200: BoardOut, **READ_ERRORS},
    summary="Players around a player",
)
async def around(request: HttpRequest, game: str, period: str, player_id: str, radius: int = Radius) -> Any:
    """The player with up to `radius` entries each side; the window shifts at the top and
    bottom of the board so that it stays full where the board allows."""
    board = await selectors.players_around(
        game=await game_or_404(game), period=period, player_id=checked_player_id(player_id), radius=radius
    )
    if board is None:
        raise not_on_board(player_id)
    return board_out(board)


@reads.get("/games/{game}/leaderboards/{period}", response={200: BoardOut, **READ_ERRORS}, summary="Current standings")
async def leaderboard(request: HttpRequest, game: str, period: str, offset: int = Offset, limit: int = Limit) -> Any:
    """`period` is daily, weekly, monthly or all-time; past the end, `entries` is empty."""
    board = await selectors.leaderboard_page(game=await game_or_404(game), period=period, offset=offset, limit=limit)
    return board_out(board)
