"""Corrections: an admin sets or adjusts a player's score on the current boards; the
change is applied and appended to the ledger in one script, so a replay reproduces it."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from core import clock, keys, text
from core.audit import SYSTEM, Action, Actor, audit_record
from core.config import GameConfig
from core.errors import ServiceError
from core.models import MAX_SAFE_SCORE, PLAYER_ID_MESSAGE, Game, Leaderboard, is_player_id
from core.redis import get_redis, run_sync
from games import periods
from games.services import PeriodStanding

from .. import scripts
from .events import CORRECTION_REASON_MAX_CHARS


@dataclass(frozen=True)
class Corrected:
    player_id: str
    periods: dict[str, PeriodStanding]


def _config(game: Game | GameConfig) -> GameConfig:
    return game if isinstance(game, GameConfig) else GameConfig.from_model(game, "0")


def _check_correction(game: GameConfig, player_id: str, value: int, reason: str) -> None:
    if not is_player_id(player_id):
        raise ServiceError(422, "invalid", PLAYER_ID_MESSAGE, field="player_id")
    if type(value) is not int or abs(value) > MAX_SAFE_SCORE:  # bool and float included
        raise ServiceError(422, "invalid", "Must be an integer with |value| <= 2^53-1.", field="value")
    if game.mode == Leaderboard.Mode.INCREMENT:
        # An amount added to the total: the per-submission bounds do not apply, it may be negative.
        if value == 0:
            raise ServiceError(422, "invalid", "A correction of 0 changes nothing.", field="value")
    else:
        if game.min_score is not None and value < game.min_score:
            raise ServiceError(422, "out_of_bounds", f"Must be at least {game.min_score} in this game.", field="value")
        if game.max_score is not None and value > game.max_score:
            raise ServiceError(422, "out_of_bounds", f"Must be at most {game.max_score} in this game.", field="value")
    if len(reason) > CORRECTION_REASON_MAX_CHARS:
        raise ServiceError(422, "invalid", f"At most {CORRECTION_REASON_MAX_CHARS} characters.", field="reason")
    if text.has_control_characters(reason):
        raise ServiceError(422, "invalid", text.CONTROL_MESSAGE, field="reason")


def score_correct(
    *, game: Game | GameConfig, player_id: str, value: int, reason: str = "", by: Actor = SYSTEM
) -> Corrected:
    """An admin's correction of a player's score on the game's current boards, recorded in the ledger.

    Increment games: ``value`` is added (negative to take away). Best and latest
    games: the score becomes ``value``, even if that is worse than the best.
    Raises ServiceError: 422 bad input, 404 unknown player, 403 hidden player
    (unhide them first), 422 score_overflow (an increment past 2^53-1).
    """
    config = _config(game)
    _check_correction(config, player_id, value, reason)
    now = clock.now()
    current = [periods.current(kind, config.timezone, now) for kind in config.periods]
    slug = config.slug
    key_list = [
        keys.names(slug),
        keys.hidden(slug),
        keys.boards_index(slug),
        keys.dirty(slug),
        keys.close_jobs(slug),
        keys.ledger(slug),
        *(keys.board(slug, p.kind, p.id) for p in current),
    ]
    args: list[str | int] = [
        config.mode,
        clock.to_ms(now),
        MAX_SAFE_SCORE,
        len(current),
        settings.ARCHIVE_GRACE_SECS * 1000,
        player_id,
        config.sort_key(value),
        value,
        reason,
    ]
    for p in current:
        args += [p.kind, p.id, "" if p.ends_at_ms is None else p.ends_at_ms]
    raw = run_sync(lambda: scripts.SCORE_CORRECT(get_redis(), key_list, args))
    if raw[0] == "err":
        if raw[1] == "unknown":
            raise ServiceError(404, "player_not_found", f"No player {player_id!r} in this game.", field="player_id")
        if raw[1] == "hidden":
            raise ServiceError(
                403, "player_hidden", "This player is hidden: unhide them before correcting.", field="player_id"
            )
        raise ServiceError(
            422, "score_overflow", f"The {raw[2]} total would pass 2^53-1 and stop being exact.", field="value"
        )
    standings = {}
    for i in range(1, len(raw), 4):
        kind, period_id, sort_key, rank = raw[i : i + 4]
        standings[kind] = PeriodStanding(kind, period_id, config.score_from_sort_key(sort_key), int(rank))
    detail = {"value": value, "scores": {kind: s.score for kind, s in standings.items()}}
    audit_record(action=Action.CORRECT, game_slug=slug, player_id=player_id, by=by, reason=reason, detail=detail)
    return Corrected(player_id=player_id, periods=standings)
