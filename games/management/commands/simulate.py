"""``manage.py simulate GAME``: post a few scores per second through the real HTTP API.

For the demo (``make run`` starts it for the demo game unless DEMO=0): a
newcomer sees the board move at once, and players come online and leave as their
sessions start and end. It issues itself an API key, posts like a game server
would (over HTTP, so everything from auth to the broadcaster runs), and revokes
the key when it stops.
"""

from __future__ import annotations

import http.client
import json
import logging
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

# Log lines, not command output: in make run this is a long-running process (JSON with LOG_FORMAT=json).
logger = logging.getLogger("games.simulate")

SIMULATOR_KEY_NAME = "simulator"
# Waits this long for the server to come up before giving up.
SERVER_WAIT_SECS = 30.0
# Most sessions are of players near the top, so the visible board moves.
HOT_PLAYERS = 40
# Players playing at once (each posts a score every few seconds, so each stays online).
SESSION_PLAYERS = 25
# On average one session ends (and another starts) this often.
SESSION_CHANGE_MEAN_SECS = 12.0


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
        # Its keys of earlier runs go first (revoked, or left by a killed process): one
        # per run would pile up on the game's admin page.
        for stale in ApiKey.objects.filter(game=found, name=SIMULATOR_KEY_NAME):
            stale.delete()
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
        found = next((b for b in GameConfig.from_model(game, "0").boards if b.active), None)
        if found is None:
            raise CommandError(f"{game.slug} has no active leaderboard to post to.")
        config = found
        period = config.windows[-1]
        board = run_sync(lambda: selectors.leaderboard_page(board=config, period=period, limit=200))
        scores = {e.player_id: e.score for e in board.entries} or {f"player-{i}": 0 for i in range(20)}
        rng = random.Random()
        sessions = Sessions(list(scores), rng)
        connection_class = http.client.HTTPSConnection if target.scheme == "https" else http.client.HTTPConnection
        connection = connection_class(target.hostname, target.port, timeout=10)
        headers = {"Authorization": f"Bearer {raw_key}", "Content-Type": "application/json"}

        def post(path: str, body: dict[str, Any]) -> tuple[int, bytes]:
            connection.request("POST", f"/api/v1/games/{game.slug}/{path}", json.dumps(body), headers)
            response = connection.getresponse()
            return response.status, response.read()

        logger.info("simulating %g submissions/s to %s via %s", rate, game.slug, target.geturl())
        started = time.monotonic()
        deadline = started + SERVER_WAIT_SECS
        sent = 0
        while not stopping() and not (duration and time.monotonic() - started > duration):
            try:
                left = sessions.turn_over(time.monotonic())
                if left:
                    post("presence", {"offline": left})
                player_id = sessions.pick()
                step = rng.randint(50, 1500)
                new = scores[player_id] + step if config.higher_is_better else max(0, scores[player_id] - step)
                status, payload = post(f"leaderboards/{config.slug}/scores", {"player_id": player_id, "score": new})
            except (OSError, http.client.HTTPException):
                connection.close()
                if time.monotonic() > deadline and sent == 0:
                    raise CommandError(f"The server at {target.geturl()} does not answer.") from None
                time.sleep(0.5)
                continue
            if status == 200:
                scores[player_id] = new
                sent += 1
            elif status != 429:
                logger.warning("simulated submission refused: %s %r", status, payload[:200])
            time.sleep(rng.expovariate(rate))
        connection.close()


class Sessions:
    """Who is playing now: SESSION_PLAYERS of the players, mostly near the top; now and then
    one leaves (reported offline) and another starts, so the online list moves as it would."""

    def __init__(self, players: list[str], rng: random.Random) -> None:
        self.players = players
        self.rng = rng
        self.playing = rng.sample(players[:HOT_PLAYERS], min(SESSION_PLAYERS, len(players[:HOT_PLAYERS])))
        self.next_change = 0.0

    def pick(self) -> str:
        return self.rng.choice(self.playing)

    def turn_over(self, now: float) -> list[str]:
        """The players whose session ends now (at most one), replaced by a newcomer."""
        if now < self.next_change or len(self.players) <= len(self.playing):
            return []
        self.next_change = now + self.rng.expovariate(1 / SESSION_CHANGE_MEAN_SECS)
        leaving = self.playing.pop(self.rng.randrange(len(self.playing)))
        pool = self.players[:HOT_PLAYERS] if self.rng.random() < 0.7 else self.players
        self.playing.append(self.rng.choice([p for p in pool if p not in self.playing and p != leaving] or [leaving]))
        return [leaving]
