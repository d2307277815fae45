"""Setting aside what a background copy to the database cannot store (core.models.DeadLetter).

A batch that the database refuses is retried one row at a time; the rows it still
refuses become dead letters, and the copy goes on. Only a refusal of the data
counts: a database that is unreachable (OperationalError) fails the whole run,
which the next beat repeats.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from django.db import DataError, IntegrityError, transaction

from . import clock, text
from .models import DeadLetter, Game

logger = logging.getLogger(__name__)

# What a database raises for a row it will not store: a NUL in text on PostgreSQL
# (DataError, or psycopg's ValueError), a number beyond the column (DataError, or the
# sqlite3 driver's OverflowError), a constraint (IntegrityError).
REFUSED_ROW_ERRORS: tuple[type[BaseException], ...] = (DataError, IntegrityError, ValueError, OverflowError)
# A dead letter keeps this much of the error's text.
DEAD_LETTER_ERROR_MAX_CHARS = 500

T = TypeVar("T")


def set_aside(*, game: Game, source: str, key: str, payload: Any, error: str) -> DeadLetter:
    logger.error("%s entry %s of %s set aside: %s", source, key, game.slug, text.printable(error))
    return DeadLetter.objects.create(
        game=game,
        source=source,
        key=text.printable(key)[:80],
        payload=json.dumps(payload, ensure_ascii=True, default=str),
        error=text.printable(error)[:DEAD_LETTER_ERROR_MAX_CHARS],
        created_at=clock.now(),
    )


def store_or_set_aside(
    *,
    game: Game,
    source: str,
    rows: Sequence[T],
    store: Callable[[Sequence[T]], object],
    describe: Callable[[T], tuple[str, Any]],
) -> int:
    """Store ``rows`` with one ``store(rows)``; if the database refuses the batch, store them one
    by one and set aside those it still refuses (``describe(row)`` -> key, payload). Returns
    how many were set aside."""
    try:
        with transaction.atomic():
            store(rows)
        return 0
    except REFUSED_ROW_ERRORS:
        pass
    refused = 0
    for row in rows:
        try:
            with transaction.atomic():
                store([row])
        except REFUSED_ROW_ERRORS as error:
            key, payload = describe(row)
            set_aside(game=game, source=source, key=key, payload=payload, error=f"{type(error).__name__}: {error}")
            refused += 1
    return refused
