"""``manage.py broadcast``: the live broadcaster process (see live/broadcaster.py)."""

from __future__ import annotations

import asyncio
import logging
import signal
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from live import broadcaster

logger = logging.getLogger("live.broadcaster")


class Command(BaseCommand):
    help = "Send coalesced live standings to websocket watchers, one message per board per tick."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--tick-ms", type=int, default=settings.BROADCAST_TICK_MS, help="milliseconds between ticks"
        )

    def handle(self, *args: Any, tick_ms: int, **options: Any) -> None:
        if tick_ms < 10:
            from django.core.management.base import CommandError

            raise CommandError("--tick-ms must be at least 10")

        async def main() -> None:
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(signum, stop.set)
            # A log line, not command output: a long-running process's start is an event (JSON in
            # LOG_FORMAT=json); bench/fanout.py waits for these words.
            logger.info("broadcasting every %d ms", tick_ms)
            await broadcaster.run(tick_ms=tick_ms, stop=stop)

        asyncio.run(main())
