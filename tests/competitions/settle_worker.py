"""A process of its own for tests/competitions/test_settlement_crash.py, run as
``python -m tests.competitions.settle_worker <command>`` in a node's environment (its own
database, the suite's Redis):

- ``setup``: a game ``crash`` with a competing season board ``cup`` (a league of three tiers in
  cohorts of 2, a reward for each cohort's winner), six players joined and five scored, and its
  competition ended (``competition_end``), so that its close job is due now;
- ``run [MARKER]``: one run of the close jobs; with MARKER, the settlement writes its tier moves,
  then writes MARKER and waits, inside its transaction, for the test to kill it.
"""

from __future__ import annotations

import datetime as dt
import os
import sys
import time
from pathlib import Path

import django

TIERS = [
    {"slug": "bronze", "promote": "1"},
    {"slug": "silver", "promote": "1", "demote": "1"},
    {"slug": "gold", "demote": "1"},
]


def _setup() -> None:
    from asgiref.sync import async_to_sync

    from archive.services import competition_end
    from competitions.services import entry
    from core import clock
    from core import services as core_services
    from core.config import get_game
    from core.models import Leaderboard
    from games import services as games

    game = core_services.game_create(slug="crash", name="Crash", max_submissions_per_minute=0)
    now = clock.now()
    board = Leaderboard(
        game=game,
        slug="cup",
        name="Cup",
        windows=["all-time"],
        starts_at=now - dt.timedelta(hours=1),
        ends_at=now + dt.timedelta(days=1),
        entry="join",
        cohort_size=2,
        cohort_by="tier",
        tiers=TIERS,
        start_tier="silver",
        rewards=[{"from_rank": 1, "reward": {"coins": 10}}],
    )
    board.full_clean()
    board.save()

    async def play() -> None:
        config = await get_game("crash")
        assert config is not None
        cup = config.board_named("cup")
        assert cup is not None
        for i in range(6):
            await entry.entry_join(game=config, board=cup, player_id=f"p{i}")
            if i < 5:
                await games.score_submit(game=config, board=cup, player_id=f"p{i}", score=10 * i)

    async_to_sync(play)()
    competition_end(board=board)


def _run(marker: Path | None) -> None:
    from archive.services import close_jobs_run
    from competitions.services import league

    if marker is not None:
        apply = league.tiers_apply

        def hanging(**kwargs: object) -> int:
            written = apply(**kwargs)  # type: ignore[arg-type]
            marker.write_text(str(os.getpid()))
            time.sleep(3600)  # killed here, inside the settlement's transaction
            return written

        league.tiers_apply = hanging
    print(close_jobs_run())


def main(argv: list[str]) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard_site.settings")
    django.setup()
    if argv[0] == "setup":
        _setup()
    else:
        _run(Path(argv[1]) if len(argv) > 1 else None)


if __name__ == "__main__":
    main(sys.argv[1:])
