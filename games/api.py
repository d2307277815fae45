"""Scores and standings endpoints of the JSON API (mounted in leaderboard_site/api.py).
Endpoints adapt HTTP to services and selectors only; core/api.py holds what every
endpoint shares (the error envelope, the bearer scheme, ``@authorized``)."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.http import HttpRequest
from ninja import Query, Router
from pydantic import TypeAdapter
from pydantic import ValidationError as PydanticValidationError

from core import branding, clock, competition_rules, config, errors, text
from core.api import ERRORS, READ_ERRORS, Authorized, BearerKey, Ok, authorized, checked_player_id, game_or_404
from core.api import errors as error_responses
from core.errors import ServiceError
from core.models import SLUG_MESSAGE, SLUG_RE, Game, Leaderboard, is_player_id

from . import leaderboards, periods, selectors, services
from .schemas import (
    BatchIn,
    BatchItemIn,
    BatchOut,
    GameOut,
    LeaderboardIn,
    LeaderboardOut,
    LeaderboardPatch,
    PlayersFoundOut,
    ProfileOut,
    RecentOut,
    ScoreIn,
    ScoreOut,
)

MAX_PAGE_LIMIT = 200
MAX_AROUND_RADIUS = 50
MAX_FRIENDS = 100
MAX_OFFSET = 10**9
# Lists bounded by what a tenant creates (issue 21): each answer costs its page, not the number
# of games or boards (a board's JSON takes ~0.1 ms: its windows' current periods).
GAMES_PAGE_DEFAULT = 20
GAMES_PAGE_MAX = 50
# A game's JSON shows its first boards; GET /games/{game}/leaderboards pages through the rest.
GAME_BOARDS_SHOWN = 10
BOARDS_PAGE_DEFAULT = 50
BOARDS_PAGE_MAX = 100
# A player's profile reads this many boards per page (each a pipelined read of its windows).
PROFILE_BOARDS_DEFAULT = 20
PROFILE_BOARDS_MAX = 50
IDEMPOTENCY_KEY_RE = re.compile(r"^[\x20-\x7e]{1,255}$")


# --------------------------------------------------------------------------- writes

writes = Router(tags=["scores"])


def _idempotency(request: HttpRequest, body: Any) -> tuple[str | None, str]:
    raw = request.headers.get("Idempotency-Key")
    if raw is None:
        return None, ""
    if not IDEMPOTENCY_KEY_RE.match(raw):
        raise errors.invalid("Idempotency-Key", "1-255 printable ASCII characters.")
    return raw, _fingerprint(body)


def _score_out(result: services.Submitted) -> dict[str, Any]:
    # Built inline, not through a function per period: a batch of 1,000 has 4,000 of them.
    periods = {
        kind: {"period_id": s.period_id, "score": s.score, "rank": s.rank}
        if s.subscore is None
        else {"period_id": s.period_id, "score": s.score, "rank": s.rank, "subscore": s.subscore}
        for kind, s in result.periods.items()
    }
    return {
        "player_id": result.player_id,
        "display_name": result.display_name,
        "leaderboard": result.leaderboard,
        "periods": periods,
        "metadata": result.metadata,
    }


@writes.post(
    "/games/{game}/leaderboards/{board}/scores",
    response={200: ScoreOut, **ERRORS},
    auth=BearerKey(),
    summary="Submit one score",
)
@authorized
async def submit_score(request: HttpRequest, key: Authorized, game: str, board: str, payload: ScoreIn) -> Ok:
    """Applies the score to every window of the leaderboard at once and returns the player's
    new score and rank in each. Send `Idempotency-Key` to make retries safe."""
    idempotency_key, fingerprint = _idempotency(request, {**payload.model_dump(), "leaderboard": board})
    idempotency = services.Idempotency(key.api_key.prefix, idempotency_key, fingerprint) if idempotency_key else None
    found = selectors.board_or_404(game=key.game, slug=board)
    result = await services.score_submit(
        game=key.game,
        board=found,
        player_id=payload.player_id,
        score=payload.score,
        subscore=payload.subscore,
        display_name=payload.display_name,
        metadata=payload.metadata,
        idempotency=idempotency,
    )
    return Ok(_score_out(result), replayed=result.replayed)


def _fingerprint(body: Any) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


# A whole batch validated in one call (pydantic's core loops over the items), when it is valid.
_BATCH_ITEMS = TypeAdapter(list[BatchItemIn])


def _items(raws: list[Any], *, with_fingerprint: bool) -> tuple[list[services.Submission | ServiceError], list[str]]:
    """Each batch item as a submission (or the error that refuses it alone), and its
    idempotency fingerprint if one is needed. All at once while the batch is valid, else one
    by one, so that each bad item gets its own error."""
    try:
        parsed = _BATCH_ITEMS.validate_python(raws)
    except PydanticValidationError:
        checked = [_item(raw, i, with_fingerprint=with_fingerprint) for i, raw in enumerate(raws)]
        return [item for item, _ in checked], [fingerprint for _, fingerprint in checked]
    items: list[services.Submission | ServiceError] = [
        services.Submission(i.player_id, i.score, i.display_name, i.metadata, i.leaderboard, i.subscore) for i in parsed
    ]
    fingerprints = [_fingerprint(i.model_dump()) for i in parsed] if with_fingerprint else [""] * len(parsed)
    return items, fingerprints


def _item(raw: Any, index: int, *, with_fingerprint: bool) -> tuple[services.Submission | ServiceError, str]:
    """One batch item, validated alone, and its idempotency fingerprint (if one is needed)."""
    try:
        item = BatchItemIn.model_validate(raw)
    except PydanticValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or None
        message = "This field is required." if first["type"] == "missing" else first["msg"]
        problem = errors.invalid(f"scores[{index}]" + (f".{field}" if field else ""), message)
        return problem, _fingerprint(raw) if with_fingerprint else ""
    submission = services.Submission(
        item.player_id, item.score, item.display_name, item.metadata, item.leaderboard, item.subscore
    )
    return submission, _fingerprint(item.model_dump()) if with_fingerprint else ""


@writes.post(
    "/games/{game}/scores/batch",
    response={200: BatchOut, **ERRORS},
    auth=BearerKey(),
    summary="Submit up to 1,000 scores to any of the game's leaderboards",
)
@authorized(items=lambda kwargs: len(kwargs["payload"].scores))
async def submit_batch(request: HttpRequest, key: Authorized, game: str, payload: BatchIn) -> Ok:
    """Each item names its `leaderboard` and is applied atomically on its own, in two pipelined
    round trips; `results` follow the order of `scores`, each a score response or an `error`
    object. With an `Idempotency-Key`, each item is remembered by its position and a retry
    replays all."""
    idempotency_key, _ = _idempotency(request, None)  # items carry their own fingerprints
    items, fingerprints = _items(payload.scores, with_fingerprint=bool(idempotency_key))
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


# --------------------------------------------------------------------------- managing boards

# A board's settings: read by anyone, written with a manage key. One router, since the
# methods of one path must be declared together.
boards = Router(tags=["leaderboards"])


async def _board_model(key: Authorized, board: str) -> Leaderboard:
    found = await Leaderboard.objects.select_related("game").filter(game_id=key.game.id, slug=board).afirst()
    if found is None:
        raise errors.board_not_found(game=key.game, board=board)
    return found


async def board_json(game_slug: str, board_slug: str) -> dict[str, Any]:
    # The save's signal emptied this process's config cache: this reads the change.
    fresh = await game_or_404(game_slug)
    return board_out(selectors.board_or_404(game=fresh, slug=board_slug))


@boards.put(
    "/games/{game}/leaderboards/{board}",
    response={200: LeaderboardOut, **ERRORS},
    auth=BearerKey(),
    summary="Create or replace a leaderboard (manage key)",
)
@authorized(manage=True)
async def put_board(request: HttpRequest, key: Authorized, game: str, board: str, payload: LeaderboardIn) -> Ok:
    """All the board's settings (omitted ones take their defaults). Its mode, order and tie
    rule can't change while it holds scores (409 `board_has_scores`)."""
    if not re.match(SLUG_RE, board):
        raise errors.invalid("slug", SLUG_MESSAGE)
    model = await Game.objects.aget(pk=key.game.id)
    await sync_to_async(leaderboards.leaderboard_put)(
        game=model, slug=board, settings=payload.model_dump(), by=key.actor
    )
    return Ok(await board_json(game, board))


@boards.patch(
    "/games/{game}/leaderboards/{board}",
    response={200: LeaderboardOut, **ERRORS},
    auth=BearerKey(),
    summary="Change some settings of a leaderboard (manage key)",
)
@authorized(manage=True)
async def patch_board(request: HttpRequest, key: Authorized, game: str, board: str, payload: LeaderboardPatch) -> Ok:
    changes = payload.model_dump(exclude_unset=True)
    model = await _board_model(key, board)
    await sync_to_async(leaderboards.leaderboard_patch)(board=model, changes=changes, by=key.actor)
    return Ok(await board_json(game, board))


# --------------------------------------------------------------------------- reads

reads = Router(tags=["standings"])


def _periods_out(board: config.BoardConfig, current: list[periods.Period]) -> list[dict[str, Any]]:
    return [
        {
            "period": p.kind,
            "name": board.window_label(p.kind),
            "period_id": p.id,
            "starts_at": p.starts_at,
            "resets_at": p.ends_at,
        }
        for p in current
    ]


def _competition_out(board: config.BoardConfig, current: list[periods.Period]) -> dict[str, Any] | None:
    """The competition's rules and its current period, so that a client draws its screen from
    the board's JSON alone."""
    rules = board.competition
    if rules is None:
        return None
    period = next(p for p in current if p.kind == rules.window)
    closes = periods.entry_closes_at(period, rules.entry_window_secs)
    return {
        "window": rules.window,
        "entry": rules.entry,
        "max_entrants": rules.max_entrants,
        "entry_window_secs": rules.entry_window_secs,
        "max_attempts": rules.max_attempts,
        "cohort_size": rules.cohort_size,
        "cohort_fill": rules.cohort_fill,
        "cohort_by": rules.cohort_by,
        **competition_rules.league_json(rules),
        "period": {
            "id": period.id,
            "starts_at": period.starts_at,
            "entry_closes_at": closes,
            "cohorts_at": periods.cohorts_formed_at(period, rules),
            "ends_at": period.ends_at,
            "settles_at": periods.settles_at(period, rules),
        },
    }


def board_out(board: config.BoardConfig) -> dict[str, Any]:
    """A leaderboard's JSON: its settings, each window's current period, and its competition's."""
    current = selectors.current_periods(board=board)
    return {
        "slug": board.slug,
        "name": board.name,
        "description": board.description,
        "mode": board.mode,
        "order": board.order,
        "windows": _periods_out(board, current),
        "window_labels": board.window_labels,
        "cron": board.cron,
        "timezone": board.timezone,
        "starts_at": board.starts_at,
        "ends_at": board.ends_at,
        "ties": board.ties,
        "subscore_order": board.subscore_order,
        "format": board.format,
        "min_score": board.min_score,
        "max_score": board.max_score,
        "competition_window": board.competition_window,
        "entry": board.entry,
        "max_entrants": board.max_entrants,
        "entry_window_secs": board.entry_window_secs,
        "max_attempts": board.max_attempts,
        "cohort_size": board.cohort_size,
        "cohort_fill": board.cohort_fill,
        "cohort_by": board.cohort_by,
        **competition_rules.league_json(board.competition),
        "competition": _competition_out(board, current),
        "active": board.active,
        "open": board.is_open(clock.now()),
    }


def _game_out(game: config.GameConfig) -> dict[str, Any]:
    return {
        "slug": game.slug,
        "name": game.name,
        "description": game.description,
        "timezone": game.timezone,
        "leaderboards": [board_out(b) for b in game.boards[:GAME_BOARDS_SHOWN]],
        "leaderboards_total": len(game.boards),
        "short_name": game.shown_name,
        "accent": game.accent or None,
        "logo_url": branding.logo_path(game.slug, game.logo_version) if game.logo_version else None,
        "socket": {"path": f"/ws/games/{game.slug}/", "port": settings.LIVE_SOCKET_PORT or None},
    }


def entry_json(entry: selectors.Entry | selectors.Standing) -> dict[str, Any]:
    """An entry or a standing as the API shows it: ``subscore`` only on boards that have them."""
    shown = {name: getattr(entry, name) for name in entry.__slots__}
    if shown["subscore"] is None:
        del shown["subscore"]
    return shown


def standings_out(board: config.BoardConfig, page: selectors.Board) -> dict[str, Any]:
    return {
        "leaderboard": board.slug,
        "period": page.period.kind,
        "period_id": page.period.id,
        "resets_at": page.period.ends_at,
        "total": page.total,
        "entries": [entry_json(e) for e in page.entries],
    }


@reads.get("/games", response={200: list[GameOut], **error_responses(422, 503)}, summary="List games")
async def list_games(
    request: HttpRequest,
    offset: int = Query(0, ge=0, le=MAX_OFFSET),
    limit: int = Query(GAMES_PAGE_DEFAULT, ge=1, le=GAMES_PAGE_MAX),
) -> Any:
    """Active games by name, a page at a time, each with its first leaderboards, each window's
    current period and when it resets next. A page shorter than ``limit`` is the last."""
    return [_game_out(g) for g in (await config.list_games())[offset : offset + limit]]


@reads.get("/games/{game}", response={200: GameOut, **error_responses(404, 503)}, summary="One game")
async def get_game(request: HttpRequest, game: str) -> Any:
    return _game_out(await game_or_404(game))


@boards.get(
    "/games/{game}/leaderboards",
    response={200: list[LeaderboardOut], **error_responses(404, 422, 503)},
    summary="Leaderboards",
)
async def list_boards(
    request: HttpRequest,
    game: str,
    offset: int = Query(0, ge=0, le=MAX_OFFSET),
    limit: int = Query(BOARDS_PAGE_DEFAULT, ge=1, le=BOARDS_PAGE_MAX),
) -> Any:
    """The game's leaderboards in the order they were made, a page at a time (the game's
    ``leaderboards_total`` says how many there are)."""
    return [board_out(b) for b in (await game_or_404(game)).boards[offset : offset + limit]]


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
        raise errors.invalid("q", text.CONTROL_MESSAGE)
    found = await selectors.players_named(game=await game_or_404(game), query=q, limit=limit)
    return {"players": [vars(p) for p in found]}


def player_ids_param(ids: str) -> list[str]:
    """The ``ids`` query parameter of the friends views: distinct, valid, 1 to MAX_FRIENDS."""
    parsed = list(dict.fromkeys(i for i in ids.split(",") if i))
    if not parsed:
        raise errors.invalid("ids", "Give at least one player id.")
    if len(parsed) > MAX_FRIENDS:
        raise errors.invalid("ids", f"At most {MAX_FRIENDS} player ids.")
    for player_id in parsed:
        if not is_player_id(player_id):
            raise errors.invalid("ids", f"{player_id[:70]!r} is not a valid player id.")
    return parsed


def not_on_board(player_id: str) -> ServiceError:
    return errors.not_found(f"Player {player_id!r} has no score on this board.")


Ids = Query(..., description=f"Comma-separated player ids, at most {MAX_FRIENDS}.")
Offset = Query(0, ge=0, le=MAX_OFFSET)
Limit = Query(50, ge=1, le=MAX_PAGE_LIMIT)
Radius = Query(5, ge=0, le=MAX_AROUND_RADIUS)


async def board_of(game: str, board: str) -> config.BoardConfig:
    """The game's leaderboard named in the path (404 game_not_found / board_not_found)."""
    return selectors.board_or_404(game=await game_or_404(game), slug=board)


@reads.get(
    "/games/{game}/players/{player_id}",
    response={200: ProfileOut, **READ_ERRORS},
    exclude_unset=True,
    summary="A player on every board",
)
async def player_profile(
    request: HttpRequest,
    game: str,
    player_id: str,
    offset: int = Query(0, ge=0, le=MAX_OFFSET),
    limit: int = Query(PROFILE_BOARDS_DEFAULT, ge=1, le=PROFILE_BOARDS_MAX),
) -> Any:
    """The player's standing in the current period of every window of the game's leaderboards
    (a page of them, in the order they were made): one call for a profile screen. 404 if the
    game has never seen the player."""
    found = await game_or_404(game)
    checked_player_id(player_id)
    name = await selectors.display_name(game=found, player_id=player_id)
    if name is None or await selectors.is_hidden(game=found, player_id=player_id):
        raise errors.not_found(f"No player {player_id!r} in this game.")
    page = found.boards[offset : offset + limit]
    profile = await selectors.player_profile(boards=page, player_id=player_id)
    boards = {b.slug: {p.kind: p.id for p in selectors.current_periods(board=b)} for b in page}
    return {
        "leaderboards_total": len(found.boards),
        "player_id": player_id,
        "display_name": name,
        "leaderboards": {
            slug: {
                window: {"period_id": boards[slug][window], "standing": entry_json(s) if s else None}
                for window, s in windows.items()
            }
            for slug, windows in profile.items()
        },
    }


@boards.get(
    "/games/{game}/leaderboards/{board}",
    response={200: LeaderboardOut, **error_responses(404, 503)},
    summary="One board",
)
async def get_board(request: HttpRequest, game: str, board: str) -> Any:
    return board_out(await board_of(game, board))
