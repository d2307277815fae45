"""Taking a leaderboard out of play (DELETE with a manage key): it refuses scores from then
on, and its windows are archived at once as if they had ended, so its final standings are
read from the archive like any finished period's."""

from __future__ import annotations

from django.db import transaction

from core import clock
from core.audit import SYSTEM, Action, Actor, audit_record
from core.models import Leaderboard
from core.outbox import BoardClosed, event_emit

from .close_jobs import close_jobs_due_now


def leaderboard_deactivate(*, board: Leaderboard, by: Actor = SYSTEM) -> int:
    """Deactivate the board and make its unarchived periods' close jobs due now; returns how
    many. Its all-time window (no end) stays in Redis and readable; a PUT brings the board back,
    each of these periods going on as a new generation (games/periods.py). Taking it out of play
    is announced (``board.closed``) with it, in one transaction."""
    if board.active:
        with transaction.atomic():
            board.active = False
            # To the millisecond, like the generation ids (games/periods.py) it decides.
            board.closed_at = clock.from_ms(clock.now_ms())
            board.save(update_fields=["active", "closed_at"])
            audit_record(
                action=Action.CLOSE_BOARD,
                game_slug=board.game.slug,
                player_id="",
                by=by,
                detail={"leaderboard": board.slug},
            )
            event_emit(BoardClosed(game=board.game.slug, leaderboard=board.slug, closed_at=clock.iso(clock.now())))
    return close_jobs_due_now(board=board)
