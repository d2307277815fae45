"""Writes of a board's settings (the manage API, admin and commands go through the model's
rules): create or replace, change some, and the checks that keep what Redis holds meaningful:
a board's stored sort keys (its mode, order and tie rule stay while any window holds scores),
and a competition's entrants (its rules stay while the current period has any)."""

from __future__ import annotations

import datetime as dt
from typing import Any, cast

from django.conf import settings as django_settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from core import clock, errors, keys
from core.audit import SYSTEM, Action, Actor, audit_record
from core.board_rules import RuleError
from core.config import BoardConfig
from core.errors import ServiceError
from core.models import COMPETITION_FIELDS, Game, Leaderboard
from core.redis import get_redis, run_sync

from . import periods

# What a board's stored sort keys depend on: changing one under scores would re-rank them wrongly.
KEY_SETTINGS = ("mode", "order", "ties", "subscore_order")
# The settings a PUT or PATCH body may carry, as the model's field names.
SETTINGS = (
    "name",
    "description",
    "mode",
    "order",
    "windows",
    "window_labels",
    "cron",
    "timezone",
    "starts_at",
    "ends_at",
    "ties",
    "subscore_order",
    "format",
    "min_score",
    "max_score",
    *COMPETITION_FIELDS,
)
# What a board's competition is read from: its own settings, and the windows and season that
# decide its window (the one window of a board competes when none is named).
COMPETITION_INPUTS = frozenset({*COMPETITION_FIELDS, "windows", "starts_at", "ends_at"})


async def _has_scores(ref: str) -> bool:
    client = get_redis()
    board_keys = cast("list[str]", await client.zrange(keys.boards_index(ref), 0, -1))
    if not board_keys:
        return False
    pipe = client.pipeline(transaction=False)
    for board_key in board_keys:
        pipe.zcard(board_key)
    return any(await pipe.execute())


def board_has_scores(*, board: Leaderboard) -> bool:
    """Whether any window of the board still holds scores in Redis (current or kept periods)."""
    return bool(run_sync(_has_scores, keys.board_ref(board.game.slug, board.slug)))


async def _entrants(key: str) -> int:
    return int(await get_redis().zcard(key))


def competition_entrants(*, board: BoardConfig) -> tuple[periods.Period, int] | None:
    """The competing window's current period and how many players entered it (the entry
    scripts' set); None for a board that does not compete."""
    if board.competition is None:
        return None
    period = periods.window_current(board, board.competition.window, clock.now())
    key = keys.entry_entrants(keys.board(board.ref, period.kind, period.id))
    return period, run_sync(_entrants, key)


def _check_competition(board: Leaderboard, changed: set[str]) -> None:
    """409 when the change moves the rules of a competition whose current period has entrants:
    they entered under those rules (and a capped period may already be full under them)."""
    moved = changed & COMPETITION_INPUTS
    if not board.pk or not moved:
        return
    saved = BoardConfig.from_model(Leaderboard.objects.get(pk=board.pk), board.game)
    # Compared as parsed: naming the window a board's only window already implied changes nothing.
    if saved.competition is None or saved.competition == board.competition():
        return
    running = competition_entrants(board=saved)
    if running is not None and running[1] > 0:
        period, entrants = running
        raise errors.competition_running(settings=moved, window=period.kind, period_id=period.id, entrants=entrants)


def _invalid(error: ValidationError) -> ServiceError:
    field, messages = next(iter(error.message_dict.items()))
    name = "slug" if field == "__all__" else field
    return errors.invalid(name, " ".join(messages))


def _save(board: Leaderboard, changed: set[str], *, created: bool, by: Actor) -> Leaderboard:
    moved = sorted(f for f in changed if f in KEY_SETTINGS)
    if board.pk and moved and board_has_scores(board=board):
        raise errors.board_has_scores(settings=moved)
    try:
        board.full_clean()
    except ValidationError as error:
        raise _invalid(error) from None
    try:
        board.competition()  # passed full_clean; asked again for the exact path ('tiers[1].promote')
    except RuleError as error:
        raise errors.invalid(error.field, str(error)) from None
    _check_competition(board, changed)
    try:
        with transaction.atomic():
            board.save()
            if created or changed:  # an unchanged PUT or PATCH did nothing worth a line
                audit_record(
                    action=Action.CREATE_BOARD if created else Action.CHANGE_BOARD,
                    game_slug=board.game.slug,
                    by=by,
                    detail={"board": board.slug, "changed": sorted(changed)},
                )
    except IntegrityError:
        raise errors.conflict("The board was created meanwhile; retry.", field="slug") from None
    return board


def _stored(field: str, value: Any) -> Any:
    """A setting as the board stores it: a league's tiers and reward rules without the keys a
    request left out (null), so that what is stored reads back as it was written."""
    if field in ("tiers", "rewards") and isinstance(value, list):
        return [{k: v for k, v in item.items() if v is not None} if isinstance(item, dict) else item for item in value]
    return value


def leaderboard_put(*, game: Game, slug: str, settings: dict[str, Any], by: Actor = SYSTEM) -> tuple[Leaderboard, bool]:
    """Create the board ``slug`` of the game, or replace all its settings (omitted ones take
    their defaults); returns it and whether it was created. A deactivated board comes back.
    A creation or a change is in the audit trail, with the settings it changed."""
    board = Leaderboard.objects.filter(game=game, slug=slug).first()
    created = board is None
    if board is None:
        limit = game.max_boards if game.max_boards is not None else django_settings.MAX_BOARDS_PER_GAME
        if Leaderboard.objects.filter(game=game).count() >= limit:
            raise errors.board_limit(limit=limit)
        board = Leaderboard(game=game, slug=slug)
    before = {f: getattr(board, f) for f in SETTINGS}
    fresh = Leaderboard(game=game, slug=slug)
    for field in SETTINGS:
        setattr(board, field, _stored(field, settings.get(field, getattr(fresh, field))))
    if not board.name:
        board.name = slug.replace("-", " ").capitalize()
    if not board.active:
        leaderboard_reopen_mark(board=board)
    changed = {f for f in SETTINGS if getattr(board, f) != before[f]}
    return _save(board, changed, created=created, by=by), created


def leaderboard_reopen_mark(*, board: Leaderboard) -> None:
    """Mark a board taken out of play as back in play (the caller saves it): from now, each period
    it was closed in goes on as a new generation (games/periods.py). The moment is kept to the
    millisecond, like the generation ids it names, and each reopening gets its own, so that two
    generations never share an id."""
    moment = clock.from_ms(clock.now_ms())
    if board.reopened_at is not None and moment <= board.reopened_at:
        moment = board.reopened_at + dt.timedelta(milliseconds=1)
    board.active = True
    board.reopened_at = moment


def leaderboard_patch(*, board: Leaderboard, changes: dict[str, Any], by: Actor = SYSTEM) -> Leaderboard:
    """Change some of the board's settings (in the audit trail when any changed)."""
    changed = set()
    for field, value in changes.items():
        if field not in SETTINGS:
            raise errors.invalid(field, f"Unknown setting {field!r}.")
        value = _stored(field, value)
        if getattr(board, field) != value:
            setattr(board, field, value)
            changed.add(field)
    return _save(board, changed, created=False, by=by)
