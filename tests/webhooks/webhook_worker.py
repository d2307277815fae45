"""A process of its own for tests/webhooks/test_delivery_crash.py, run as
``python -m tests.webhooks.webhook_worker <command>`` in a node's environment (its own database):

- ``setup URL``: game 'crash' with an endpoint at URL; prints its secret;
- ``emit N``: N player.erased events of it, each in a transaction of its own, handed to the
  webhooks (their deliveries written and queued) by one outbox run;
- ``deliver BUDGET_SECS``: one delivery run; prints delivered, retried, failed, skipped, ran.
"""

from __future__ import annotations

import asyncio
import os
import sys

import django


def _setup(url: str) -> None:
    from core import clock, services
    from webhooks.services.endpoints import endpoint_create

    game = services.game_create(slug="crash", name="Crash")
    print(endpoint_create(game=game, url=url, now=clock.now()).secret)


def _emit(count: int) -> None:
    from django.db import transaction

    from core import clock, outbox

    for i in range(count):
        with transaction.atomic():
            outbox.event_emit(outbox.PlayerErased(game="crash", player_id=f"p{i}", erased_at=clock.iso(clock.now())))
    outbox.outbox_deliver()


def _deliver(budget_secs: float) -> None:
    from core.redis import close_redis
    from webhooks.services.delivery import webhooks_run

    async def run() -> None:
        try:
            result = await webhooks_run(budget_secs=budget_secs)
        finally:
            await close_redis()
        print(result.delivered, result.retried, result.failed, result.skipped, int(result.ran))

    asyncio.run(run())


def main(argv: list[str]) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard_site.settings")
    django.setup()
    command, *args = argv
    if command == "setup":
        _setup(args[0])
    elif command == "emit":
        _emit(int(args[0]))
    elif command == "deliver":
        _deliver(float(args[0]))
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
