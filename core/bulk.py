"""Bulk writes of many rows (the ledger drain, the archive, a competition's settlement and the
events it emits): PostgreSQL COPY, SQLite executemany.

Rows are plain tuples in the order of ``columns`` (no model instances: building them
cost more than the insert). Both keep the callers' duplicate rules exactly:

- ``update=()`` stores the rows whose ``conflict`` key is not in the table yet and
  drops the others (a re-delivered ledger entry is stored once);
- ``update=(columns...)`` overwrites those columns of the rows already there (an
  archive run over an earlier run's rows); ``update_sql`` gives some of them an SQL
  expression of the row there (``{table}``) and the new one (``EXCLUDED``) instead of
  the new value (a league standing that keeps its ``since`` while its tier stays).

On PostgreSQL, a caller that knows none of the keys can be there yet (``fresh``: new
ledger entries, the first run of an archive) gets a plain COPY into the table; should
a key be there after all (a stream replayed after Redis lost its consumer group), the
COPY is rolled back to its savepoint and the rows go the staged way: COPY into a
temporary table, then one INSERT ... SELECT ... ON CONFLICT. SQLite has no COPY; its
fastest path is one prepared INSERT ... ON CONFLICT run over all rows (executemany).

Errors come back as Django's (IntegrityError, DataError) so that callers can set
refused rows aside as they do for the ORM.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import Model

Row = tuple[Any, ...]


def columns_of(model: type[Model], fields: Sequence[str]) -> list[str]:
    """The database columns of a model's fields (``game`` -> ``game_id``)."""
    return [str(model._meta.get_field(name).column) for name in fields]  # type: ignore[union-attr]


def insert_rows(
    *,
    model: type[Model],
    columns: Sequence[str],
    rows: Sequence[Row],
    conflict: Sequence[str],
    update: Sequence[str] = (),
    update_sql: Mapping[str, str] | None = None,
    fresh: bool = False,
) -> int:
    """Write ``rows`` into ``model``'s table (inside the caller's transaction, if any); returns
    how many rows were inserted or updated (a row its conflict left alone does not count)."""
    if not rows:
        return 0
    table = model._meta.db_table
    on_conflict = _on_conflict(table, conflict, update, update_sql or {})
    if connection.vendor == "postgresql":
        return _postgres(table, columns, rows, on_conflict, fresh)
    return _executemany(table, columns, rows, on_conflict)


def copy_rows(*, model: type[Model], columns: Sequence[str], rows: Iterable[Row], batch: int) -> int:
    """Write brand-new ``rows`` into ``model``'s table as the iterable yields them: on PostgreSQL
    one COPY, which stores each row while the caller computes the next (so the database's work
    and the caller's overlap); on SQLite a prepared INSERT per ``batch`` rows. For rows that
    cannot be there yet (a new parent's children): a conflict is an IntegrityError, and the
    caller's transaction rolls back. Returns how many."""
    if connection.vendor == "postgresql":
        return _copy(model._meta.db_table, columns, rows)
    written, chunk = 0, []
    for row in rows:
        chunk.append(row)
        if len(chunk) == batch:
            written += _executemany(model._meta.db_table, columns, chunk, "")
            chunk = []
    return written + (_executemany(model._meta.db_table, columns, chunk, "") if chunk else 0)


def _on_conflict(table: str, conflict: Sequence[str], update: Sequence[str], update_sql: Mapping[str, str]) -> str:
    qn = connection.ops.quote_name
    target = ", ".join(qn(c) for c in conflict)
    if not update:
        return f"ON CONFLICT ({target}) DO NOTHING"
    sets = (
        f"{qn(c)} = {update_sql[c].format(table=qn(table))}" if c in update_sql else f"{qn(c)} = EXCLUDED.{qn(c)}"
        for c in update
    )
    return f"ON CONFLICT ({target}) DO UPDATE SET " + ", ".join(sets)


def _executemany(table: str, columns: Sequence[str], rows: Sequence[Row], on_conflict: str) -> int:
    qn = connection.ops.quote_name
    marks = ", ".join(["%s"] * len(columns))
    sql = f"INSERT INTO {qn(table)} ({', '.join(qn(c) for c in columns)}) VALUES ({marks}) {on_conflict}"
    adapt = connection.ops.adapt_datetimefield_value
    with connection.cursor() as cursor:
        # Datetimes as Django stores them in SQLite (naive UTC text).
        cursor.executemany(sql, [tuple(adapt(v) if isinstance(v, dt.datetime) else v for v in row) for row in rows])
        return int(cursor.rowcount)


def _postgres(table: str, columns: Sequence[str], rows: Sequence[Row], on_conflict: str, fresh: bool) -> int:
    if fresh:
        try:
            with transaction.atomic():
                _copy(table, columns, rows)
            return len(rows)
        except IntegrityError:
            pass  # a key was there after all: the staged way below drops or updates it
    staging = f"bulk_{table}"[:63]
    qn = connection.ops.quote_name
    names = ", ".join(qn(c) for c in columns)
    with transaction.atomic(), connection.cursor() as cursor:
        # One per session and table, emptied at every commit, with the columns' types and
        # no constraints (the INSERT below checks them).
        cursor.execute(
            f"CREATE TEMPORARY TABLE IF NOT EXISTS {qn(staging)} ON COMMIT DELETE ROWS "
            f"AS SELECT {names} FROM {qn(table)} WITH NO DATA"
        )
        cursor.execute(f"TRUNCATE {qn(staging)}")
        _copy(staging, columns, rows)
        cursor.execute(f"INSERT INTO {qn(table)} ({names}) SELECT {names} FROM {qn(staging)} {on_conflict}")
        return int(cursor.rowcount)


def _copy(table: str, columns: Sequence[str], rows: Iterable[Row]) -> int:
    qn = connection.ops.quote_name
    statement = f"COPY {qn(table)} ({', '.join(qn(c) for c in columns)}) FROM STDIN"
    written = 0
    with connection.cursor() as cursor, connection.wrap_database_errors, cursor.cursor.copy(statement) as copy:
        for row in rows:
            copy.write_row(row)
            written += 1
    return written
