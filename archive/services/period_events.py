"""The events a complete archive announces (core/outbox/, docs/events.md), written in the
transaction that marks the archive complete: ``period.archived`` for every period, exactly
once, and ``season.ended`` once the last period of a season board that held scores is in."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from django.urls import reverse

from core import clock
from core.config import BoardConfig
from core.models import Leaderboard
from core.outbox import PERIOD_EVENT_TOP, FinalPeriod, PeriodArchived, SeasonEnded, TopStanding, event_emit
from games import periods

from ..models import ArchivedPeriod, ArchivedStanding

# Whether a period not archived yet will be (its board holds or held scores): then its own archive
# is the season's last, and announces the end.
StillToArchive = Callable[[periods.Period], bool]


def standings_path(*, game: str, board: str, window: str, period_id: str) -> str:
    return reverse(
        "api:leaderboard_named", kwargs={"game": game, "board": board, "period": window, "period_id": period_id}
    )


def ends_season(config: BoardConfig, period: periods.Period) -> bool:
    """Whether ``period`` is one of the last of its board's season (it reaches the season's end)."""
    return config.ends_at is not None and period.ends_at is not None and period.ends_at >= config.ends_at


def season_lock(board: Leaderboard) -> None:
    """Hold the board's row until the transaction ends, so that the archives of a season's last
    periods finish one after the other and the last one sees all the others (PostgreSQL; SQLite
    runs one writing transaction at a time anyway)."""
    list(Leaderboard.objects.select_for_update().filter(pk=board.pk).values_list("pk", flat=True))


def period_archived_emit(
    *, config: BoardConfig, period: periods.Period, archived: ArchivedPeriod, now: dt.datetime
) -> None:
    assert period.starts_at is not None and period.ends_at is not None  # an archived period has both
    event_emit(
        PeriodArchived(
            game=config.game_slug,
            leaderboard=config.slug,
            window=period.kind,
            period_id=period.id,
            starts_at=clock.iso(period.starts_at),
            ends_at=clock.iso(period.ends_at),
            ended_early=now < period.ends_at,
            entrants=archived.total,
            archived_at=clock.iso(now),
            standings=standings_path(game=config.game_slug, board=config.slug, window=period.kind, period_id=period.id),
            top=[
                TopStanding(rank=row.rank, player_id=row.player_id, display_name=row.display_name, score=row.score)
                for row in ArchivedStanding.objects.filter(archived_period=archived)
                .order_by("rank", "player_id")
                .only("rank", "player_id", "display_name", "score")[:PERIOD_EVENT_TOP]
            ],
        )
    )


def season_ended_emit(*, board: Leaderboard, config: BoardConfig, still_to_archive: StillToArchive) -> bool:
    """Announce the season's end if each window's last period is archived, or never held a score.
    Call it inside the transaction that completed one of them, after ``season_lock``. Returns
    whether the season is over (announced now, or before)."""
    assert config.ends_at is not None
    last_instant = config.ends_at - dt.timedelta(milliseconds=1)
    finals = [periods.window_current(config, window, last_instant) for window in config.windows]
    archived = {
        (row.period, row.period_id): row
        for row in ArchivedPeriod.objects.filter(
            leaderboard=board, status=ArchivedPeriod.Status.COMPLETE, period__in=[f.kind for f in finals]
        )
    }
    done: list[FinalPeriod] = []
    for final in finals:
        if final.starts_at is None:
            continue  # the all-time window of a season without a start: never archived
        row = archived.get((final.kind, final.id))
        if row is None:
            if still_to_archive(final):
                return False
            continue
        path = standings_path(game=config.game_slug, board=config.slug, window=final.kind, period_id=final.id)
        done.append(FinalPeriod(window=final.kind, period_id=final.id, entrants=row.total, standings=path))
    event_emit(
        SeasonEnded(
            game=config.game_slug,
            leaderboard=config.slug,
            starts_at=clock.iso(config.starts_at) if config.starts_at else None,
            ends_at=clock.iso(config.ends_at),
            periods=done,
        ),
        once=f"season.ended:{board.pk}:{clock.iso(config.ends_at)}",
    )
    return True
