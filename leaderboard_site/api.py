"""The one JSON API at /api/v1/: each app's router, mounted on the shared NinjaAPI (core/api.py)."""

from __future__ import annotations

from accounts.api import router as accounts
from archive.api import listing as archive_listing
from archive.api import router as archive
from competitions.api import router as competitions
from competitions.cohorts_api import router as cohorts
from competitions.rewards_api import router as rewards
from competitions.settlement_api import router as settlements
from core.api import api
from games.api import boards, reads, writes
from presence.api import router as presence
from webhooks.api import router as webhooks

api.add_router("", boards)
api.add_router("", writes)
# Before the reads: '/leaderboards/{board}/players/{player_id}/attempts' is not a period read.
api.add_router("", competitions)
# Before the reads and the archive: '/leaderboards/{board}/{period}/cohorts' is not a period id.
api.add_router("", cohorts)
api.add_router("", settlements)
# Before the reads too: '/leaderboards/{board}/players/players/league' is a player's league.
api.add_router("", rewards)
# A board's '/periods' before the reads' '/leaderboards/{board}/{period}', which would take it.
api.add_router("", archive_listing)
# Before the archive's routes: its '/leaderboards/{board}/{period}/{period_id}' would take '.../players'.
api.add_router("", reads)
api.add_router("", presence)
api.add_router("", accounts)
api.add_router("", archive)
api.add_router("", webhooks)

__all__ = ["api"]
