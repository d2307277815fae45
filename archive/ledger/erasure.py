"""What the database keeps of an erased player, removed: their score events, and their
name and id on archived standings (the rank stays, held by "deleted player").

Called by the erasure itself (moderation.services.player_erase) and again by the drain
and the rebuild when they meet the erasure's ledger entry, since what was in flight at
the time (entries not stored yet, a period being archived) lands after it.
"""

from __future__ import annotations

import datetime as dt

from django.db.models import Q

from core.models import ERASED_PLAYER_NAME, Game, Leaderboard, erased_player_id

from ..models import ArchivedStanding, ScoreEvent
from .events import StreamId


def player_forget(
    *,
    game: Game,
    player_id: str,
    board: Leaderboard | None = None,
    before: StreamId | None = None,
    ended_by: dt.datetime | None = None,
) -> tuple[int, int]:
    """Delete the player's score events (of one board's ledger before ``before``, or all) and
    anonymise their standings (in periods that ended by ``ended_by``, or all: a later period
    holds the scores of whoever uses the id after the erasure). Returns (events, standings)."""
    events = ScoreEvent.objects.filter(game=game, player_id=player_id)
    standings = ArchivedStanding.objects.filter(archived_period__game=game, player_id=player_id)
    if board is not None:
        events = events.filter(leaderboard=board)
        standings = standings.filter(archived_period__leaderboard=board)
    if before is not None:
        events = events.filter(Q(stream_ms__lt=before[0]) | Q(stream_ms=before[0], stream_seq__lt=before[1]))
    deleted, _ = events.delete()
    if ended_by is not None:
        standings = standings.filter(archived_period__ends_at__lte=ended_by)
    anonymised = 0
    # One row at a time: each gets its own stand-in id (a player has one row per period).
    for standing in standings.only("pk"):
        standing.player_id = erased_player_id()
        standing.display_name = ERASED_PLAYER_NAME
        standing.metadata = None
        standing.save(update_fields=["player_id", "display_name", "metadata"])
        anonymised += 1
    return deleted, anonymised
