"""A web worker killed with kill -9 in the middle of a batch of 1,000 scores, through a real
uvicorn: the client's retry with the same Idempotency-Key, on a restarted server, leaves every
player with its score once, its display name, and its row from the player sync.

Where the worker dies is chosen by watching Redis, not by a timer: the worker is frozen
(SIGSTOP) as soon as Redis shows the first of its writes of one part (the boards' scripts, or
the game's), Redis is left to run what it was already sent, and then the worker is killed.
Frozen while Redis runs its board scripts, it has not read their replies, so it cannot have
sent the game's part: the state is the one between the two scripts (checked: all 1,000 applied,
no name), as long as the test sees the first board write while Redis still has most of the
1,000 items to run (tens of ms; it sees it after 100-300).

Killed in the game's part, the worker loses the game's mark for the player sync (written after
the game scripts' replies) and the replay writes no new one (the names are there): those
players reach the database by the sweep, which is why the sync runs here as beat runs it.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor

import httpx
import pytest

from core import keys
from core.redis import get_redis, run_sync
from tests.real_server import Node, manage, node_env, setup_node, start_web, stop_all

pytestmark = pytest.mark.wall_clock

GAME = "crash"
BOARD = "points"  # increment: a score applied twice would show doubled
ITEMS = 1000
WAIT_SECS = 20.0
# Redis has run all a frozen worker sent once its counts hold this long.
SETTLED_SECS = 0.3


def _wanted(part: str) -> dict[str, tuple[str, int]]:
    """The batch of the test that kills its worker in ``part``: player -> (display name, score)."""
    return {f"{part}-{i:04d}": (f"Player {i}", i + 1) for i in range(ITEMS)}


def _post(url: str, node: Node, part: str) -> httpx.Response:
    scores = [
        {"leaderboard": BOARD, "player_id": player, "score": score, "display_name": name}
        for player, (name, score) in _wanted(part).items()
    ]
    headers = {"Authorization": f"Bearer {node.raw_key}", "Idempotency-Key": f"flush-{part}"}
    url = f"{url}/api/v1/games/{GAME}/scores/batch"
    return httpx.post(url, json={"scores": scores}, headers=headers, timeout=WAIT_SECS)


def _counts() -> tuple[int, int]:
    """(items the board scripts applied (the board's ledger), display names the game scripts set)."""

    async def read() -> tuple[int, int]:
        # One round trip: the worker is frozen this much sooner after its first write.
        pipe = get_redis().pipeline(transaction=False)
        pipe.xlen(keys.ledger(keys.board_ref(GAME, BOARD)))
        pipe.hlen(keys.names(GAME))
        applied, named = await pipe.execute()
        return int(applied), int(named)

    return run_sync(read)


def _until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_SECS
    while not condition():
        assert time.monotonic() < deadline, what


def _settled() -> tuple[int, int]:
    """The counts once they stop moving."""
    before, since = _counts(), time.monotonic()
    while time.monotonic() - since < SETTLED_SECS:
        now = _counts()
        if now != before:
            before, since = now, time.monotonic()
    return before


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    """One node for both tests (its setup is half their time); each has players of its own."""
    node = setup_node(node_env(tmp_path_factory.mktemp("node")), GAME)
    manage(node.env, "createleaderboard", GAME, BOARD, "--mode", "increment")
    try:
        yield node
    finally:
        stop_all(node)


# Which of _counts() shows that the worker began a part: the boards' (its board scripts are
# running, and it waits for all their replies before it sends the game's) or the game's.
FIRST_WRITE = {"boards": 0, "game": 1}


def _kill_in(node: Node, url: str, part: str) -> tuple[int, int]:
    """POST the batch, freeze the worker at its first write of ``part``, let Redis finish
    what it was sent, kill the worker; the counts it left."""
    worker = node.processes[-1]  # uvicorn with one worker serves in its own process
    with ThreadPoolExecutor(1) as pool:
        doomed: Future[httpx.Response] = pool.submit(_post, url, node, part)
        _until(lambda: _counts()[FIRST_WRITE[part]] > 0 or doomed.done(), f"the worker never began the {part} part")
        assert not doomed.done(), f"the batch was answered before its {part} part was seen"
        os.kill(worker.pid, signal.SIGSTOP)
        left = _settled()
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait(timeout=WAIT_SECS)
        with pytest.raises(httpx.TransportError):  # the client never had an answer: it retries
            doomed.result()
    return left


def _board(url: str) -> dict[str, tuple[str, int]]:
    """What a reader sees on the board's all-time window: player -> (display name, score)."""
    seen: dict[str, tuple[str, int]] = {}
    for offset in range(0, ITEMS, 200):
        page = httpx.get(f"{url}/api/v1/games/{GAME}/leaderboards/{BOARD}/all-time?offset={offset}&limit=200")
        assert page.status_code == 200, page.text
        seen.update((e["player_id"], (e["display_name"], e["score"])) for e in page.json()["entries"])
    return seen


# The player sync as beat runs it: its 2 s run, then the 60 s sweep (which finds games whose
# mark a killed process never wrote) and a run after it; then the rows the database holds.
SYNC = """
import json
from core.models import Player
from games import tasks
runs = [tasks.sync_players(), tasks.sweep_pending_players(), tasks.sync_players()]
players = Player.objects.filter(game__slug="{game}", player_id__startswith="{part}-")
print(json.dumps({{"runs": runs, "rows": dict(players.values_list("player_id", "display_name"))}}))
"""


def _player_sync(node: Node, part: str) -> tuple[list[int], dict[str, str]]:
    out = json.loads(manage(node.env, "shell", "-c", SYNC.format(game=GAME, part=part)).strip().splitlines()[-1])
    return out["runs"], out["rows"]


def _wrong(want: Mapping[str, object], got: Mapping[str, object]) -> int:
    return sum(got.get(player) != value for player, value in want.items())


@pytest.mark.parametrize("part", ["boards", "game"])
def test_it_completes_a_batch_on_its_replay_after_its_worker_is_killed(node: Node, part: str) -> None:
    applied, named = _kill_in(node, start_web(node), part)
    if part == "boards":
        assert (applied, named) == (ITEMS, 0), "not killed between the board scripts and the game's"
    else:
        assert applied == ITEMS and named > 0

    url = start_web(node)
    replay = _post(url, node, part)

    assert replay.status_code == 200, replay.text
    assert replay.headers["Idempotent-Replayed"] == "true"  # nothing was applied again
    want = _wanted(part)
    answered = {
        r["player_id"]: (r["display_name"], r["periods"]["all-time"]["score"]) for r in replay.json()["results"]
    }
    seen = _board(url)
    runs, rows = _player_sync(node, part)
    # Counted, not listed: how many players the retry's answer, the board's readers and the
    # database got wrong (a name missing, a score doubled, a row missing).
    wrong = (_wrong(want, answered), _wrong(want, seen), _wrong({p: n for p, (n, _) in want.items()}, rows))
    assert wrong == (0, 0, 0), f"player sync runs (sync, sweep, sync) wrote {runs}"
    assert len(seen) == ITEMS
