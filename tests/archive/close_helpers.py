"""Helpers of the close-job and archive tests (E1): fill boards at an injected time, read them back."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from archive import selectors as archive_selectors
from archive.models import ArchivedPeriod, ArchivedStanding
from core import keys
from core.config import GameConfig
from core.models import Game
from core.redis import get_redis, run_sync
from games import services
from tests import redis_replies
from tests.conftest import clock_at


def at(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text)


def ms(moment: dt.datetime) -> int:
    return int(moment.timestamp() * 1000)


def config_of(game: Game) -> GameConfig:
    return GameConfig.from_model(game, "0")


def submit_all(game: Game, scores: Iterable[tuple[str, int, str | None]], now: dt.datetime) -> None:
    """Submit (player_id, score, display name) items at ``now``, pipelined like a batch."""
    items = [services.Submission(player_id, score, name, leaderboard="main") for player_id, score, name in scores]
    config = config_of(game)
    for start in range(0, len(items), 2000):
        with clock_at(now):
            results = run_sync(lambda s=start: services.score_submit_many(game=config, items=items[s : s + 2000]))
        assert all(isinstance(r, services.Submitted) for r in results), results[:3]


def live_rows(game: Game, period: str, period_id: str, now: dt.datetime, page: int = 1000) -> list[tuple]:
    """Every entry of a board through the public read of a named period, all pages."""
    config = config_of(game)
    rows: list[tuple] = []
    offset = 0
    while True:
        with clock_at(now):
            board = run_sync(
                lambda o=offset: archive_selectors.period_page(
                    board=config.boards[0], period=period, period_id=period_id, offset=o, limit=page
                )
            )
        rows += [(e.rank, e.player_id, e.display_name, e.score) for e in board.entries]
        offset += page
        if offset >= board.total:
            return rows


def archived_rows(archived: ArchivedPeriod) -> list[tuple]:
    """The archive's standings in board order (ties by player_id in byte order, as Redis lists them)."""
    rows = ArchivedStanding.objects.filter(archived_period=archived).values_list(
        "rank", "player_id", "display_name", "score"
    )
    return sorted(rows, key=lambda r: (r[0], r[1].encode()))


def pttl(key: str) -> int:
    return run_sync(lambda: get_redis().pttl(key))


def zscores(key: str) -> dict[str, float]:
    return dict(run_sync(lambda: redis_replies.scored(key)))


def board_key(game: Game, period: str, period_id: str) -> str:
    return keys.board(keys.board_ref(game.slug, "main"), period, period_id)
