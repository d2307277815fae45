"""Taking a leaderboard out of play (DELETE with a manage key): it refuses scores from then
on, and its windows are archived at once as if they had ended, so its final standings are
read from the archive like any finished period's. And ending a season's competition now
(``POST …/end``): its season ends at this instant, and its periods close and settle as at any end."""

from __future__ import annotations

from django.db import transaction

from core import clock, errors
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


def competition_end(*, board: Leaderboard, by: Actor = SYSTEM) -> int:
    """End a competing season board's competition now: its season's end moves to this instant
    (no more scores or joins), and its unarchived periods' close jobs fall due at their end (the
    competing one after its review buffer, settle_delay_secs); returns how many jobs. 409
    ``not_endable`` for a board that does not compete in a season, or whose season is over."""
    now = clock.from_ms(clock.now_ms())
    competition = board.competition()
    season = board.starts_at is not None and board.ends_at is not None
    if competition is None or not season or competition.window != "all-time":
        raise errors.not_endable(board=board.slug)
    assert board.ends_at is not None and board.starts_at is not None
    if board.ends_at <= now or not board.active or now <= board.starts_at:
        raise errors.not_endable(board=board.slug, running=False)
    with transaction.atomic():
        ends_was = board.ends_at
        board.ends_at = now
        board.save(update_fields=["ends_at"])
        audit_record(
            action=Action.END_COMPETITION,
            game_slug=board.game.slug,
            by=by,
            detail={"leaderboard": board.slug, "ends_at": clock.iso(board.ends_at), "was": clock.iso(ends_was)},
        )
    return close_jobs_due_now(board=board)
