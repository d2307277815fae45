"""Reads of rewards (issue 22): a player's grants in a game, newest first, for the API and for
game servers that look for what a player who was offline has waiting."""

from __future__ import annotations

import datetime as dt

from django.db.models import Q, QuerySet

from ..models import Grant

# The filters the API offers, by the status a grant shows (``grant_status``).
STATUSES: tuple[str, ...] = (Grant.Status.PENDING, Grant.Status.CLAIMED, Grant.Status.EXPIRED)


def grant_status(grant: Grant, now: dt.datetime) -> str:
    """The status a grant has at ``now``: a pending one past its window is expired, whether or
    not the sweep has marked it yet (a claim of it is refused all the same)."""
    if grant.status == Grant.Status.PENDING and grant.expires_at <= now:
        return Grant.Status.EXPIRED
    return grant.status


def _with_status(rows: QuerySet[Grant], status: str | None, now: dt.datetime) -> QuerySet[Grant]:
    pending = Q(status=Grant.Status.PENDING)
    if status == Grant.Status.PENDING:
        return rows.filter(pending, expires_at__gt=now)
    if status == Grant.Status.EXPIRED:
        return rows.filter(Q(status=Grant.Status.EXPIRED) | (pending & Q(expires_at__lte=now)))
    if status == Grant.Status.CLAIMED:
        return rows.filter(status=Grant.Status.CLAIMED)
    if status is not None:
        raise ValueError(f"status {status!r}: one of {', '.join(STATUSES)}")
    return rows


async def player_grants(
    *, game_id: int, player_id: str, status: str | None, now: dt.datetime, offset: int, limit: int
) -> tuple[int, list[Grant]]:
    """The player's grants in the game that show ``status`` at ``now`` (None: all), newest first,
    ``limit`` from ``offset``, and how many there are on all pages."""
    rows = _with_status(Grant.objects.filter(game_id=game_id, player_id=player_id), status, now)
    total = await rows.acount()
    if offset >= total:
        return total, []
    page = rows.select_related("board").order_by("-granted_at", "-id")[offset : offset + limit]
    return total, [grant async for grant in page]
