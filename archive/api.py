"""Archive endpoints of the JSON API (mounted in leaderboard_site/api.py).

The named-period standings of archived periods need no endpoint of their own:
games/api.py serves them, and games/selectors.py reads the archive for them.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from django.http import HttpRequest
from ninja import Query, Router, Schema
from pydantic import Field

from games.api import READ_ERRORS, Limit, Offset, game_or_404

from . import selectors

router = Router(tags=["history"])


class ArchivedPeriodOut(Schema):
    period: str
    period_id: str
    starts_at: dt.datetime
    ends_at: dt.datetime = Field(description="Exclusive: the instant the period closed.")
    total: int = Field(description="Players on the final standings.")
    archived_at: dt.datetime = Field(description="When the final standings were written.")


class ArchivedPeriodsOut(Schema):
    total: int = Field(description="Archived periods matching the filter, on all pages.")
    periods: list[ArchivedPeriodOut]


@router.get(
    "/games/{game}/periods",
    response={200: ArchivedPeriodsOut, **READ_ERRORS},
    summary="Archived periods",
)
async def archived_periods(
    request: HttpRequest,
    game: str,
    period: Literal["daily", "weekly", "monthly"] | None = Query(None, description="Only periods of this kind."),
    offset: int = Offset,
    limit: int = Limit,
) -> Any:
    """Finished periods whose final standings are archived, newest first. Read each one's
    standings at `/games/{game}/leaderboards/{period}/{period_id}`."""
    total, archives = await selectors.archived_periods(
        game=await game_or_404(game), period=period, offset=offset, limit=limit
    )
    return {
        "total": total,
        "periods": [
            {
                "period": a.period.kind,
                "period_id": a.period.id,
                "starts_at": a.period.starts_at,
                "ends_at": a.period.ends_at,
                "total": a.total,
                "archived_at": a.archived_at,
            }
            for a in archives
        ],
    }
