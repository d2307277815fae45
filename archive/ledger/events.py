"""What every part of the ledger shares: the consumer group, stream ids, and the row of one entry."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass

from core import clock

from ..models import ScoreEvent

logger = logging.getLogger("archive.ledger")

# The consumer group that copies every board's ledger stream to the database. One
# group: each entry is stored once, whichever drain process reads it.
LEDGER_GROUP = "ledger-db"

StreamId = tuple[int, int]
Progress = Callable[[int, int], None]
# An admin's reason for a correction, stored with its ledger entry.
CORRECTION_REASON_MAX_CHARS = 200


def split_id(event_id: str) -> StreamId:
    ms, _, seq = event_id.partition("-")
    return int(ms), int(seq)


# The stream entry kind that erases a player (moderation's player_erase.lua writes it).
ERASE_KIND = "erase"


@dataclass(frozen=True)
class Erasure:
    """A player's erasure, in the ledger's order: what the table holds of them before it goes."""

    player_id: str
    stream_id: StreamId
    at_ms: int


class MalformedEntry(ValueError):
    """A stream entry the scripts did not write (only they write the stream)."""


def parse_entry(game_id: int, board_id: int, event_id: str, fields: dict[str, str]) -> ScoreEvent | Erasure:
    """The row of one stream entry (fields as submit_score.lua / score_correct.lua write
    them), or the erasure player_erase.lua wrote."""
    try:
        ms, seq = split_id(event_id)
        kind = fields["k"]
        if kind == ERASE_KIND:
            return Erasure(player_id=fields["p"], stream_id=(ms, seq), at_ms=int(fields["t"]))
        if kind not in ScoreEvent.Kind.values:
            raise ValueError(f"unknown kind {kind!r}")
        metadata = json.loads(fields["x"]) if fields.get("x") else None
        if metadata is not None and not isinstance(metadata, dict):
            raise ValueError("metadata is not an object")
        return ScoreEvent(
            game_id=game_id,
            leaderboard_id=board_id,
            event_id=event_id,
            stream_ms=ms,
            stream_seq=seq,
            kind=kind,
            player_id=fields["p"],
            display_name=fields.get("n", "")[:64],
            value=int(fields["v"]),
            mode=fields["m"],
            metadata=metadata,
            at=clock.from_ms(fields["t"]),
            reason=fields.get("r", "")[:CORRECTION_REASON_MAX_CHARS],
        )
    except (KeyError, ValueError, OverflowError, TypeError) as error:
        raise MalformedEntry(f"malformed entry: {type(error).__name__}: {error}") from None


def event_row(game_id: int, board_id: int, event_id: str, fields: dict[str, str]) -> ScoreEvent | Erasure | None:
    """The row of one stream entry (or an erasure), or None (logged) for one the scripts did
    not write (the rebuild)."""
    try:
        return parse_entry(game_id, board_id, event_id, fields)
    except MalformedEntry as error:
        logger.error("ledger entry %s of board %s skipped: %s (%r)", event_id, board_id, error, fields)
        return None
