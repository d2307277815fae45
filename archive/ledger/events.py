"""What every part of the ledger shares: the consumer group, stream ids, and the row of one entry."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from core import clock

from ..models import ScoreEvent

logger = logging.getLogger("archive.ledger")

# The consumer group that copies every board's ledger stream to the database. One
# group: each entry is stored once, whichever drain process reads it.
LEDGER_GROUP = "ledger-db"

StreamId = tuple[int, int]
Progress = Callable[[int, int], None]
_KINDS = frozenset(ScoreEvent.Kind.values)
# A competing board's entry events (issue 22): no score, and the board's clock stays.
ENTRY_KINDS = frozenset({ScoreEvent.Kind.JOIN, ScoreEvent.Kind.ATTEMPTS, ScoreEvent.Kind.COHORT})
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


# The ScoreEvent fields a ledger entry fills, in the order of entry_values()' tuples.
EVENT_FIELDS: tuple[str, ...] = (
    "game",
    "leaderboard",
    "event_id",
    "stream_ms",
    "stream_seq",
    "kind",
    "player_id",
    "display_name",
    "value",
    "mode",
    "metadata",
    "at",
    "reason",
    "subscore",
)
_METADATA = EVENT_FIELDS.index("metadata")
_ATTNAMES = tuple(f"{name}_id" if name in ("game", "leaderboard") else name for name in EVENT_FIELDS)
EventValues = tuple[Any, ...]


def entry_values(game_id: int, board_id: int, event_id: str, fields: dict[str, str]) -> EventValues | Erasure:
    """The ScoreEvent row of one stream entry as plain values in EVENT_FIELDS order (fields as
    submit_score.lua / score_correct.lua write them; metadata as its JSON text), or the
    erasure player_erase.lua wrote."""
    try:
        ms, seq = split_id(event_id)
        kind = fields["k"]
        if kind == ERASE_KIND:
            return Erasure(player_id=fields["p"], stream_id=(ms, seq), at_ms=int(fields["t"]))
        if kind not in _KINDS:
            raise ValueError(f"unknown kind {kind!r}")
        metadata = fields.get("x") or None
        if metadata is not None and not isinstance(json.loads(metadata), dict):
            raise ValueError("metadata is not an object")
        # Entry events carry no mode: a join its rating in 'v' (if any), attempts granted how
        # many, a placement its cohort's index.
        entry_only = kind in ENTRY_KINDS
        return (
            game_id,
            board_id,
            event_id,
            ms,
            seq,
            kind,
            fields["p"],
            fields.get("n", "")[:64],
            int(fields.get("v", "0")) if entry_only else int(fields["v"]),
            "" if entry_only else fields["m"],
            metadata,
            clock.from_ms(fields["t"]),
            fields.get("r", "")[:CORRECTION_REASON_MAX_CHARS],
            int(fields["s"]) if fields.get("s") else None,
        )
    except (KeyError, ValueError, OverflowError, TypeError) as error:
        raise MalformedEntry(f"malformed entry: {type(error).__name__}: {error}") from None


def parse_entry(game_id: int, board_id: int, event_id: str, fields: dict[str, str]) -> ScoreEvent | Erasure:
    """The ScoreEvent of one stream entry (unsaved), or its erasure."""
    values = entry_values(game_id, board_id, event_id, fields)
    if isinstance(values, Erasure):
        return values
    event = ScoreEvent(**dict(zip(_ATTNAMES, values, strict=True)))
    event.metadata = json.loads(values[_METADATA]) if values[_METADATA] else None
    return event


def event_row(game_id: int, board_id: int, event_id: str, fields: dict[str, str]) -> ScoreEvent | Erasure | None:
    """The row of one stream entry (or an erasure), or None (logged) for one the scripts did
    not write (the rebuild)."""
    try:
        return parse_entry(game_id, board_id, event_id, fields)
    except MalformedEntry as error:
        logger.error("ledger entry %s of board %s skipped: %s (%r)", event_id, board_id, error, fields)
        return None
