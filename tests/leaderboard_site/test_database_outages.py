"""A PostgreSQL outage, reproduced on a real server: its database reached through a TCP proxy
the test pauses (a hung database: connections are accepted, nothing is answered) and closes (a
database down: connections are refused).

What a user sees must not depend on how long the database stays away: archive reads, pages and
the health check answer 503 with Retry-After within about DB_STATEMENT_TIMEOUT_SECS, scores go
on (on the configuration last read), and everything answers 200 once the database is back.
Needs the PostgreSQL the PostgreSQL run of the suite uses (skipped when none answers).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from leaderboard_site.asgi import DB_UPKEEP_SECS
from tests.postgres import Database, TcpProxy, fresh_database
from tests.real_server import node_env, setup_node, start_web, stop_all

pytestmark = pytest.mark.wall_clock

GAME = "dbhang"
CONFIG_CACHE_SECS = 1
STATEMENT_TIMEOUT_SECS = 2
# What a user may wait for a 503 with the database hung: the timeout, and a second of slack
# for a busy machine. Before the timeouts, a hung database held every such request for good.
ANSWER_WITHIN_SECS = STATEMENT_TIMEOUT_SECS + 1.0
# Back to 200 within: a process connects again a second after its last failure
# (core/postgresql/base.py, RETRY_AFTER_OUTAGE_SECS), the API replaces a cut connection within
# its upkeep's second, and slack for a busy machine.
RECOVERY_WITHIN_SECS = 5.0
# A read that hangs past this has no timeout at all: the test says so instead of waiting.
CLIENT_TIMEOUT_SECS = 15.0


@pytest.fixture(scope="module")
def database() -> Iterator[Database]:
    with fresh_database() as database:
        yield database


@dataclass
class Answer:
    status: int
    retry_after: str | None
    seconds: float
    code: str | None = None


def _timed(request: Callable[[], httpx.Response]) -> Answer:
    """The answer to ``request`` and how long it took (status 0: none within CLIENT_TIMEOUT_SECS)."""
    started = time.monotonic()
    try:
        response = request()
    except httpx.TimeoutException:
        return Answer(0, None, time.monotonic() - started)
    seconds = time.monotonic() - started
    body = response.json() if response.headers.get("content-type", "").startswith("application/json") else {}
    code = body["error"]["code"] if "error" in body else None
    return Answer(response.status_code, response.headers.get("retry-after"), seconds, code)


def _get(url: str) -> Answer:
    return _timed(lambda: httpx.get(url, timeout=CLIENT_TIMEOUT_SECS))


@dataclass
class Site:
    url: str
    key: str
    proxy: TcpProxy

    @property
    def archive_url(self) -> str:
        return f"{self.url}/api/v1/games/{GAME}/leaderboards/main/periods"

    def submit(self, player: str, score: int) -> Answer:
        return _timed(
            lambda: httpx.post(
                f"{self.url}/api/v1/games/{GAME}/leaderboards/main/scores",
                json={"player_id": player, "score": score},
                headers={"Authorization": f"Bearer {self.key}"},
                timeout=CLIENT_TIMEOUT_SECS,
            )
        )


@pytest.fixture(scope="module")
def site(database: Database, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    proxy = TcpProxy((database.host, database.port))
    proxy.start()
    env = node_env(
        tmp_path_factory.mktemp("db-outage"),
        DATABASE_URL=database.through(proxy.port),
        # Configs read again after a second: the outage meets a reload within the test.
        GAME_CONFIG_CACHE_SECS=str(CONFIG_CACHE_SECS),
        DB_STATEMENT_TIMEOUT_SECS=str(STATEMENT_TIMEOUT_SECS),
    )
    node = setup_node(env, GAME)  # migrations through the proxy
    try:
        url = start_web(node, log=Path(env["VAR_DIR"]) / "web.log")
        yield Site(url, node.raw_key, proxy)
    finally:
        stop_all(node)
        proxy.stop()


def _what_needs_the_database(site: Site) -> dict[str, Answer]:
    return {
        "archive": _get(site.archive_url),
        "page": _get(f"{site.url}/games/{GAME}/history/"),
        "health": _get(f"{site.url}/healthz"),
    }


def _assert_unavailable(name: str, answer: Answer) -> None:
    assert (name, answer.status, answer.retry_after) == (name, 503, "5"), answer
    assert answer.seconds < ANSWER_WITHIN_SECS, f"{name} waited {answer.seconds:.1f} s"


def _assert_all_answer_200_once_back(site: Site, player: str) -> None:
    """Everything answers 200 within a few seconds of the database's return: a process tries it
    again a second after its last failure, and the API replaces a cut connection within a second."""
    deadline = time.monotonic() + RECOVERY_WITHIN_SECS
    while True:
        statuses = {name: answer.status for name, answer in _what_needs_the_database(site).items()}
        if set(statuses.values()) == {200} or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert statuses == dict.fromkeys(("archive", "page", "health"), 200)
    assert site.submit(player, 1).status == 200


def _during_the_outage(site: Site) -> tuple[dict[str, Answer], Answer]:
    """What needs the database, then a score, once configs are due to be read again."""
    time.sleep(CONFIG_CACHE_SECS + 0.5)
    return _what_needs_the_database(site), site.submit("during-outage", 1)


def _assert_outage_answered(answers: dict[str, Answer], submitted: Answer) -> None:
    for name, answer in answers.items():
        _assert_unavailable(name, answer)
    assert answers["archive"].code == "unavailable"
    # The score needs only Redis: the game and key configs last read are served meanwhile.
    assert submitted.status == 200, submitted
    assert submitted.seconds < ANSWER_WITHIN_SECS, f"the score waited {submitted.seconds:.1f} s"


def test_it_answers_a_hung_database_with_503_within_its_timeout_and_keeps_scoring(site):
    _assert_all_answer_200_once_back(site, "before-hang")
    # This read opens the API's connection after the API's upkeep (it runs first, being due), so
    # the next read, within that second, finds it open (asgi.py, DB_UPKEEP_SECS).
    time.sleep(DB_UPKEEP_SECS)
    assert _get(site.archive_url).status == 200
    site.proxy.pause()
    try:
        in_flight = _get(site.archive_url)  # sent on that connection, never answered
        answers, submitted = _during_the_outage(site)
    finally:
        site.proxy.resume()

    _assert_unavailable("archive, on an open connection", in_flight)
    _assert_outage_answered(answers, submitted)
    _assert_all_answer_200_once_back(site, "after-hang")


def test_it_answers_a_refusing_database_with_503_and_keeps_scoring(site):
    _assert_all_answer_200_once_back(site, "before-refusal")
    site.proxy.refuse()
    try:
        answers, submitted = _during_the_outage(site)
    finally:
        site.proxy.resume()

    _assert_outage_answered(answers, submitted)
    _assert_all_answer_200_once_back(site, "after-refusal")
