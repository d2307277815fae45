"""A period's standings as a file: CSV or JSON Lines, streamed a chunk at a time.

The period is read where it lives (archive/selectors.py: an open one from Redis, a finished one
from its complete archive), page by page, so a million rows cost one chunk of memory. The
whole request is checked before the first byte (``export_open``): an unknown board, window or
period is an error with its status, not an empty file. A failure after that (Redis or the
database gone mid-way) ends the response without its last chunk, which HTTP clients report as
an incomplete transfer rather than a short file.

An open period is read while it still takes scores: a player whose score moves them across a
page boundary during the export can appear twice or not at all. A closed period's archive is
final. (docs/api.md, "Exports".)
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Literal

from django.db.models import Q

from core import errors
from core.board_rules import format_score
from core.config import BoardConfig
from games import periods
from games import selectors as board_reads
from games.selectors import Entry

from . import selectors
from .selectors import Archived

# Rows per read: one Redis script or one indexed query each. Memory follows this, never the
# period's size; 2,000 rows are ~200 KB of text, and a read of them ~5 ms.
EXPORT_CHUNK_ROWS = 2_000

ExportFormat = Literal["csv", "jsonl"]
CONTENT_TYPES: dict[str, str] = {"csv": "text/csv; charset=utf-8", "jsonl": "application/jsonl; charset=utf-8"}
# The period id that names the window's current period, whatever its id.
CURRENT = "current"

# A spreadsheet runs a cell that starts with one of these as a formula (OWASP, "CSV injection"):
# text cells a player wrote (names, metadata) get a leading apostrophe in CSV. Player ids cannot
# hold a formula (their alphabet has no '=', '+', '@' or parentheses) and are written as they are.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_FILENAME_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class Export:
    """What one export reads: checked, before any byte is sent."""

    board: BoardConfig
    period: periods.Period
    archive: Archived | None  # None: the period is read from Redis
    format: ExportFormat

    @property
    def content_type(self) -> str:
        return CONTENT_TYPES[self.format]

    def filename(self, game_slug: str) -> str:
        name = f"{game_slug}-{self.board.slug}-{self.period.kind}-{self.period.id}"
        return _FILENAME_UNSAFE.sub("", name) + "." + self.format


async def export_open(*, board: BoardConfig, period: str, period_id: str, format: str) -> Export:
    """The export of one period (``period_id`` ``current`` for the window's current one);
    404 as the period's reads answer, 422 for an unknown format."""
    if format not in CONTENT_TYPES:
        raise errors.invalid("format", "format must be csv or jsonl.")
    resolved, archive = await selectors.named_period(board, period, None if period_id == CURRENT else period_id)
    return Export(board=board, period=resolved, archive=archive, format=format)  # type: ignore[arg-type]


async def export_chunks(export: Export) -> AsyncIterator[bytes]:
    """The file, a chunk of rows at a time (CSV starts with its header row)."""
    subscores = export.board.has_subscore
    if export.format == "csv":
        yield _csv_rows([_header(subscores)])
    async for entries in _entries(export):
        if export.format == "csv":
            yield _csv_rows([_csv_row(export.board, entry, subscores) for entry in entries])
        else:
            yield "".join(_json_line(export.board, entry, subscores) for entry in entries).encode()


async def _entries(export: Export) -> AsyncIterator[list[Entry]]:
    if export.archive is not None:
        async for chunk in _archived_entries(export.archive):
            yield chunk
        return
    offset = 0
    while True:
        page = await board_reads.board_page(
            board=export.board, period=export.period, offset=offset, limit=EXPORT_CHUNK_ROWS
        )
        if page.entries:
            yield page.entries
        offset += EXPORT_CHUNK_ROWS
        if len(page.entries) < EXPORT_CHUNK_ROWS or offset >= page.total:
            return


async def _archived_entries(archive: Archived) -> AsyncIterator[list[Entry]]:
    """Final standings in board order (rank, then player id in byte order), by keyset: each read
    starts after the last row of the one before, on the (period, rank, player_id) index, so a
    tie of a million players is read in chunks too."""
    after: tuple[int, str] | None = None
    while True:
        rows = selectors.standings_in_order(archive)
        if after is not None:
            rank, player_id = after
            # The lower bound on rank alone lets the index seek to the chunk; an OR by itself
            # makes SQLite and PostgreSQL walk the period from its first row on every chunk.
            rows = rows.filter(rank__gte=rank).filter(Q(rank__gt=rank) | Q(ordered_id__gt=player_id))
        chunk = [
            selectors.entry_of(*row)
            async for row in rows.values_list("player_id", "rank", "display_name", "score", "metadata", "subscore")[
                :EXPORT_CHUNK_ROWS
            ]
        ]
        if not chunk:
            return
        yield chunk
        if len(chunk) < EXPORT_CHUNK_ROWS:
            return
        after = (chunk[-1].rank, chunk[-1].player_id)


def _header(subscores: bool) -> list[object]:
    return ["rank", "player_id", "display_name", "score", "shown", *(["subscore"] if subscores else []), "metadata"]


def _csv_row(board: BoardConfig, entry: Entry, subscores: bool) -> list[object]:
    metadata = json.dumps(entry.metadata, ensure_ascii=False, separators=(",", ":")) if entry.metadata else ""
    return [
        entry.rank,
        entry.player_id,
        _cell(entry.display_name),
        entry.score,
        format_score(entry.score, board.format),
        *([entry.subscore if entry.subscore is not None else ""] if subscores else []),
        _cell(metadata),
    ]


def _cell(text: str) -> str:
    return "'" + text if text.startswith(_FORMULA_START) else text


def _csv_rows(rows: list[list[object]]) -> bytes:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerows(rows)  # RFC 4180's line ends
    return buffer.getvalue().encode()


def _json_line(board: BoardConfig, entry: Entry, subscores: bool) -> str:
    row: dict[str, object] = {
        "rank": entry.rank,
        "player_id": entry.player_id,
        "display_name": entry.display_name,
        "score": entry.score,
        "shown": format_score(entry.score, board.format),
    }
    if subscores:
        row["subscore"] = entry.subscore
    row["metadata"] = entry.metadata
    return json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n"
