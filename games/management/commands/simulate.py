"""``manage.py simulate GAME``: post a few scores per second through the real HTTP API.

For the demo (``make run`` starts it for the demo game unless DEMO=0): a
newcomer sees the board move at once. It issues itself an API key, posts like a
game server would (over HTTP, so everything from auth to the broadcaster runs),
and revokes the key when it stops.
"""

from __future__ import annotations

import http.client
import json
import random
import signal
import time
from typing import Any
from urllib.parse import urlsplit

from django.core.management.base import BaseCommand, CommandError

from core import apikeys
from core.config import GameConfig
from core.models import ApiKey, Game
from core.redis import run_sync
from games import selectors

SIMULATOR_KEY_NAME = "simulator"
# Waits this long for the server to come up before giving up.
SERVER_WAIT_SECS = 30.0
# Most submissions go to players near the top, so the visible board moves.
HOT_PLAYERS = 40


class Command(BaseCommand):
    help = "Post a few scores per second to GAME through the HTTP API (demo traffic)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("game", help="game slug")
        parser.add_argument("--rate", type=float, default=3.0, help="submissions per second (default 3)")
        parser.add_argument("--url", default="http://127.0.0.1:8000", help="the server's base URL")
        parser.add_argument("--duration", type=float, default=0, help="stop after this many seconds (0: never)")

    def handle(self, *args: Any, game: str, rate: float, url: str, duration: float, **options: Any) -> None:
        if not 0 < rate <= 1000:
            raise CommandError("--rate must be above 0 and at most 1000")
        found = Game.objects.filter(slug=game).first()
        if found is None:
            raise CommandError(f"No game {game!r}.")
        target = urlsplit(url)
        if target.scheme not in {"http", "https"} or not target.hostname:
            raise CommandError("--url must be like http://127.0.0.1:8000")
        # Keys of earlier runs that were not revoked (a killed process) go first.
        for stale in ApiKey.objects.filter(game=found, name=SIMULATOR_KEY_NAME, revoked_at__isnull=True):
            apikeys.api_key_revoke(api_key=stale)
        api_key, raw_key = apikeys.api_key_create(game=found, name=SIMULATOR_KEY_NAME, requests_per_minute=60_000)
        stopping = False

        def stop(signum: int, frame: object) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        try:
            self._run(found, target, raw_key, rate, duration, lambda: stopping)
        finally:
            apikeys.api_key_revoke(api_key=api_key)

    def _run(self, game: Game, target: Any, raw_key: str, rate: float, duration: float, stopping: Any) -> None:
        config = GameConfig.from_model(game, "0")
        board = run_sync(lambda: selectors.leaderboard_page(game=config, period="all-time", limit=200))
        scores = {e.player_id: e.score for e in board.entries} or {f"player-{i}": 0 for i in range(20)}
        hot = list(scores)[:HOT_PLAYERS]
        rng = random.Random()
        connection_class = http.client.HTTPSConnection if target.scheme == "https" else http.client.HTTPConnection
        connection = connection_class(target.hostname, target.port, timeout=10)
        path = f"/api/v1/games/{game.slug}/scores"
        headers = {"Authorization": f"Bearer {raw_key}", "Content-Type": "application/json"}
        self.stderr.write(f"simulating {rate:g} submissions/s to {game.slug} via {target.geturl()}")
        started = time.monotonic()
        deadline = started + SERVER_WAIT_SECS
        sent = 0
        while not stopping() and not (duration and time.monotonic() - started > duration):
            player_id = rng.choice(hot) if rng.random() < 0.85 else rng.choice(list(scores))
            step = rng.randint(50, 1500)
            new = scores[player_id] + step if config.higher_is_better else max(0, scores[player_id] - step)
            body = json.dumps({"player_id": player_id, "score": new})
            try:
                connection.request("POST", path, body, headers)
                response = connection.getresponse()
                payload = response.read()
            except (OSError, http.client.HTTPException):
                connection.close()
                if time.monotonic() > deadline and sent == 0:
                    raise CommandError(f"The server at {target.geturl()} does not answer.") from None
                time.sleep(0.5)
                continue
            if response.status == 200:
                scores[player_id] = new
                sent += 1
            elif response.status != 429:
                self.stderr.write(f"{response.status}: {payload[:200]!r}")
            time.sleep(rng.expovariate(rate))
        connection.close()
