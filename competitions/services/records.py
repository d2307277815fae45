"""What the services of a competition's durable records (rewards.py, league.py) share: the
settlement's transaction they write in, and the checks of what the settlement hands them."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar

from django.db import transaction

from core.competition_rules import COMPETING_WINDOWS

from ..models import PERIOD_ID_MAX_CHARS

_T = TypeVar("_T")


def chunks(items: Sequence[_T], size: int) -> Iterator[Sequence[_T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def in_callers_transaction(name: str) -> None:
    """RuntimeError unless called inside a transaction (the settlement's).

    A settlement's facts (its grants, its tier moves, its own record) commit together or not at
    all: a service that committed on its own could leave grants for a period whose settlement
    then rolled back."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError(f"{name} belongs inside the settlement's transaction (transaction.atomic())")


def window_check(window: str) -> None:
    """ValueError for a window that cannot compete: a caller's bug."""
    if window not in COMPETING_WINDOWS:
        raise ValueError(f"window {window!r} cannot compete ({', '.join(COMPETING_WINDOWS)})")


def period_id_check(period_id: str) -> None:
    """ValueError for a period id no column can hold: a caller's bug."""
    if not period_id or len(period_id) > PERIOD_ID_MAX_CHARS:
        raise ValueError(f"period id {period_id[:80]!r}: 1 to {PERIOD_ID_MAX_CHARS} characters")
