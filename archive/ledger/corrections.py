"""Corrections: an admin sets or adjusts a player's score on the current boards; the
change is applied and appended to the ledger in one script, so a replay reproduces it."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.db import transaction

from core import clock, errors, keys, text
from core.audit import SYSTEM, Action, Actor, audit_record
from core.config import BoardConfig
from core.models import MAX_SAFE_SCORE, PLAYER_ID_MESSAGE, Leaderboard, is_player_id
from core.outbox import CorrectedStanding, ScoreCorrected, event_emit
from core.redis import get_redis, run_sync
from core.worksets import mark_boards
from games import periods
from games import services as game_services
from games.scripts import board as game_board_scripts
from games.services import PeriodStanding

from .board_scripts import Correction
from .board_scripts import score_correct as score_correct_script
from .events import CORRECTION_REASON_MAX_CHARS


@dataclass(frozen=True)
class Corrected:
    player_id: str
    periods: dict[str, PeriodStanding]


def _check_correction(board: BoardConfig, player_id: str, value: int, subscore: int | None, reason: str) -> None:
    if not is_player_id(player_id):
        raise errors.invalid("player_id", PLAYER_ID_MESSAGE)
    if type(value) is not int or abs(value) > MAX_SAFE_SCORE:  # bool and float included
        raise errors.invalid("value", "Must be an integer with |value| <= 2^53-1.")
    if subscore is not None:
        if not board.has_subscore:
            raise errors.invalid("subscore", "This leaderboard has no subscores (its ties are not 'subscore').")
        if type(subscore) is not int or abs(subscore) > MAX_SAFE_SCORE:
            raise errors.invalid("subscore", "Must be an integer with |subscore| <= 2^53-1.")
    if board.mode == Leaderboard.Mode.INCREMENT:
        # An amount added to the total: the per-submission bounds do not apply, it may be negative.
        if value == 0 and not subscore:
            raise errors.invalid("value", "A correction of 0 changes nothing.")
    else:
        if board.min_score is not None and value < board.min_score:
            raise errors.out_of_bounds(field="value", minimum=board.min_score)
        if board.max_score is not None and value > board.max_score:
            raise errors.out_of_bounds(field="value", maximum=board.max_score)
    if len(reason) > CORRECTION_REASON_MAX_CHARS:
        raise errors.invalid("reason", f"At most {CORRECTION_REASON_MAX_CHARS} characters.")
    if text.has_control_characters(reason):
        raise errors.invalid("reason", text.CONTROL_MESSAGE)


def score_correct(
    *,
    board: Leaderboard | BoardConfig,
    player_id: str,
    value: int,
    subscore: int | None = None,
    reason: str = "",
    by: Actor = SYSTEM,
) -> Corrected:
    """An admin's correction of a player's score on the board's current periods, recorded in its ledger.

    Increment boards: ``value`` is added (negative to take away). Best and latest
    boards: the score becomes ``value``, even if that is worse than the best. A
    ``subscore`` (boards with ties 'subscore') is added or set likewise; without one the
    player's subscore stays. Raises ServiceError: 422 bad input, 404 unknown player, 403
    hidden player (unhide them first), 422 score_overflow (a total past ±(2^53-1)).
    """
    config = board if isinstance(board, BoardConfig) else BoardConfig.from_model(board, board.game)
    _check_correction(config, player_id, value, subscore, reason)
    # A typo in an admin form must not create a player: the game must know them.
    if not run_sync(lambda: get_redis().hexists(keys.names(config.game_slug), player_id)):
        raise errors.player_not_found(player_id=player_id, field="player_id")
    now = clock.now()
    current = periods.board_current(config, now)
    correction = Correction(
        player_id=player_id,
        value=config.sort_base(value),
        sub=None if subscore is None else config.sub_oriented(subscore),
        score=value,
        subscore=subscore,
        reason=reason,
    )
    reply = run_sync(
        lambda: score_correct_script(
            get_redis(),
            board=game_services.board_rules(config),
            now_ms=clock.to_ms(now),
            grace_ms=settings.ARCHIVE_GRACE_SECS * 1000,
            periods=game_services.window_periods(current),
            correction=correction,
        )
    )
    if isinstance(reply, game_board_scripts.Refused):
        if reply.code is game_board_scripts.Refusal.HIDDEN:
            raise errors.player_hidden(message="This player is hidden: unhide them before correcting.")
        raise errors.score_overflow(window=reply.detail, limit=MAX_SAFE_SCORE, field="value")
    run_sync(lambda: get_redis().zadd(keys.live_changes(), {config.ref: clock.to_ms(now)}, nx=True))
    # The drain must store its ledger entry, and the close run see the jobs it may have scheduled.
    run_sync(lambda: mark_boards([config], now, periods.board_current))
    standings = reply.periods
    detail = {
        "leaderboard": config.slug,
        "value": value,
        "scores": {kind: s.score for kind, s in standings.items()},
    }
    if subscore is not None:
        detail["subscore"] = subscore
    # The audit entry and the event together (the correction itself is in the ledger already).
    with transaction.atomic():
        audit_record(
            action=Action.CORRECT, game_slug=config.game_slug, player_id=player_id, by=by, reason=reason, detail=detail
        )
        event_emit(
            ScoreCorrected(
                game=config.game_slug,
                leaderboard=config.slug,
                player_id=player_id,
                value=value,
                subscore=subscore,
                reason=reason,
                windows={
                    kind: CorrectedStanding(period_id=s.period_id, score=s.score, rank=s.rank, subscore=s.subscore)
                    for kind, s in standings.items()
                },
                corrected_at=clock.iso(now),
            )
        )
    return Corrected(player_id=player_id, periods=standings)
