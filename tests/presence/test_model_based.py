"""Model-based presence test: random heartbeats, offlines, pages, watchers, scores,
clock steps, prunes and claims, compared with tests/presence/reference.py.

How it runs. Each hypothesis example is a list of operations on one game, with an
injected clock that starts at T0 and only moves forward by the steps drawn (often
exactly the timeout, or one ms either side of it). The services run on the sync
bridge's event loop (``run_sync``), which keeps one Redis client across examples;
Redis is flushed at the start of every example.

What it checks, after every operation: the whole online page (counts, players in
order, display names, last-seen times), every pool player's presence and
last-seen time, ``online_among`` of the whole pool; at a prune, who was removed
and in which order; at a claim, that a client applying every claim sees exactly
the players still listed (no lost and no repeated leave) and the right counts.
Reads never depend on whether a prune ran: the model has no prune state that a
read looks at.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from core.config import GameConfig
from core.models import Game
from core.redis import get_redis, run_sync
from games import services as game_services
from presence import selectors, services
from tests.conftest import clock_at
from tests.presence.reference import ReferencePresence

pytestmark = pytest.mark.django_db(transaction=True)

# Ties and byte order matter: '0' < 'B' < '_u' < 'a' < 'a1'. A small pool, so that
# random operations often meet on one player (two pages, a server, an offline).
POOL: tuple[str, ...] = ("a", "B", "a1", "_u", "0")
NEVER_SEEN = "ghost"
SOCKETS: tuple[str, ...] = ("s1", "s2")
WATCHER_SOCKETS: tuple[str, ...] = ("w1", "w2", "w3")
NAMES: tuple[str | None, ...] = (None, "Ann", "Bo")
T0 = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)
MAX_OPS_PER_EXAMPLE = 50
GO_ON_CHOICES = 50
EXAMPLES_PER_TIMEOUT = 150
# Scores on the unlimited anti-spam setting: the score path is only a heartbeat here.
UNLIMITED = 0


# --------------------------------------------------------------------------- operations


@dataclass(frozen=True)
class Report:
    online: tuple[str, ...]
    offline: tuple[str, ...]


@dataclass(frozen=True)
class Score:
    player_id: str
    display_name: str | None


@dataclass(frozen=True)
class PageBeat:
    player_id: str
    socket_id: str


@dataclass(frozen=True)
class PageLeave:
    player_id: str
    socket_id: str


@dataclass(frozen=True)
class WatcherBeat:
    socket_id: str


@dataclass(frozen=True)
class WatcherLeave:
    socket_id: str


@dataclass(frozen=True)
class Advance:
    ms: int


@dataclass(frozen=True)
class Prune:
    pass


@dataclass(frozen=True)
class Claim:
    pass


Operation = Report | Score | PageBeat | PageLeave | WatcherBeat | WatcherLeave | Advance | Prune | Claim


def _steps(timeout_ms: int) -> tuple[int, ...]:
    # Exactly the window and one ms either side of it: where the inclusive boundary shows.
    return (1, 1_000, timeout_ms // 3, timeout_ms // 2, timeout_ms - 1, timeout_ms, timeout_ms + 1, 2 * timeout_ms)


@st.composite
def _report(draw: st.DrawFn) -> Report:
    ids = draw(st.lists(st.sampled_from(POOL), max_size=3))  # repeats too: the service de-duplicates
    going = draw(st.sets(st.sampled_from(POOL), max_size=2)) if draw(st.booleans()) else set()
    return Report(tuple(p for p in ids if p not in going), tuple(sorted(going)))


def _operations(timeout_ms: int) -> st.SearchStrategy[list[Operation]]:
    # Half the time one of two players, so that pages, servers and offlines meet on one.
    player, socket = st.one_of(st.sampled_from(POOL[:2]), st.sampled_from(POOL)), st.sampled_from(SOCKETS)
    operation = st.one_of(
        _report(),
        st.builds(Report, online=st.just(()), offline=st.lists(player, min_size=1, max_size=2).map(tuple)),
        st.builds(Score, player, st.sampled_from(NAMES)),
        st.builds(PageBeat, player, socket),
        st.builds(PageLeave, player, socket),
        st.builds(WatcherBeat, st.sampled_from(WATCHER_SOCKETS)),
        st.builds(WatcherLeave, st.sampled_from(WATCHER_SOCKETS)),
        st.builds(Advance, st.sampled_from(_steps(timeout_ms))),
        st.builds(Advance, st.sampled_from(_steps(timeout_ms))),
        st.just(Prune()),
        st.just(Claim()),
    )

    @st.composite
    def following(draw: st.DrawFn) -> Operation | None:
        # The "go on?" choice and the operation form one span, so the shrinker deletes them together.
        return None if draw(st.integers(0, GO_ON_CHOICES)) == 0 else draw(operation)

    @st.composite
    def operations(draw: st.DrawFn) -> list[Operation]:
        # st.lists averages a handful of elements; stopping on a rare 0 averages about half the cap.
        drawn = [draw(operation)]
        while len(drawn) < MAX_OPS_PER_EXAMPLE and (op := draw(following())) is not None:
            drawn.append(op)
        return drawn

    return operations()


def _heartbeats(op: Operation) -> set[str]:
    if isinstance(op, Report):
        return set(op.online)
    if isinstance(op, Score | PageBeat):
        return {op.player_id}
    return set()


# --------------------------------------------------------------------------- the run


def at_ms(ms: int) -> dt.datetime:
    return T0 + dt.timedelta(milliseconds=ms)


@dataclass
class Run:
    game: GameConfig
    model: ReferencePresence
    now_ms: int = 0
    announced: set[str] = field(default_factory=set)  # what a client applying every claim believes is listed
    left_claimed: set[str] = field(default_factory=set)  # announced left, not seen since
    claims: int = 0

    @property
    def now(self) -> dt.datetime:
        return at_ms(self.now_ms)

    async def apply(self, where: str, op: Operation) -> None:
        game, model, now = self.game, self.model, self.now
        self.left_claimed -= _heartbeats(op)
        if isinstance(op, Report):
            with clock_at(now):
                got = await services.presence_report(game=game, online=list(op.online), offline=list(op.offline))
            joined, left = model.report(list(op.online), list(op.offline), self.now_ms)
            assert (got.joined, got.left) == (joined, left), f"{where}: joined/left counts"
        elif isinstance(op, Score):
            with clock_at(now):
                await game_services.score_submit(
                    game=game, board=game.boards[0], player_id=op.player_id, score=1, display_name=op.display_name
                )
            model.score(op.player_id, op.display_name, self.now_ms)
        elif isinstance(op, PageBeat):
            with clock_at(now):
                got_joined = await services.page_beat(game=game, player_id=op.player_id, socket_id=op.socket_id)
            assert got_joined == model.page_beat(op.player_id, op.socket_id, self.now_ms), f"{where}: joined?"
        elif isinstance(op, PageLeave):
            with clock_at(now):
                said = await services.page_leave(game=game, player_id=op.player_id, socket_id=op.socket_id)
            expected = model.page_leave(op.player_id, op.socket_id, self.now_ms)
            assert (said == "left") == (expected == "left"), f"{where}: page_leave said {said!r}, expected {expected!r}"
        elif isinstance(op, WatcherBeat):
            with clock_at(now):
                await services.watcher_beat(game=game, socket_id=op.socket_id)
            model.watcher_beat(op.socket_id, self.now_ms)
        elif isinstance(op, WatcherLeave):
            await services.watcher_leave(game=game, socket_id=op.socket_id)
            model.watcher_leave(op.socket_id)
        elif isinstance(op, Advance):
            self.now_ms += op.ms
        elif isinstance(op, Prune):
            with clock_at(now):
                removed = await services.presence_prune(game=game)
            assert removed == model.prune(self.now_ms), f"{where}: removed"
        else:
            await self.claim(where)

    async def claim(self, where: str) -> None:
        with clock_at(self.now):
            changes = await services.presence_claim_changes(announcer="test", game=self.game)
        assert changes is not None, f"{where}: the one announcer was refused the lease"
        self.claims += 1
        joined = [p.player_id for p in changes.joined]
        assert changes.version == self.claims, f"{where}: version"
        assert (changes.online, changes.watching) == (
            len(self.model.online_players(self.now_ms)),
            self.model.watching(self.now_ms),
        ), f"{where}: counts of the claim"
        assert len(set(joined)) == len(joined) and len(set(changes.left)) == len(changes.left), f"{where}: repeats"
        assert not set(joined) & set(changes.left), f"{where}: joined and left at once"
        for player in changes.joined:
            assert player.display_name == self.model.display_name(player.player_id), f"{where}: join's name"
        for player_id in changes.left:
            # The latest change wins, so a client may see the leave of a player whose join it
            # never saw; but a second leave needs a heartbeat between.
            assert player_id not in self.left_claimed, f"{where}: {player_id!r} announced left twice"
        self.left_claimed = (self.left_claimed | set(changes.left)) - set(joined)
        self.announced = (self.announced - set(changes.left)) | set(joined)
        assert self.announced == self.model.listed(), (
            f"{where}: a client applying every claim believes {sorted(self.announced)} are here, "
            f"the listed players are {sorted(self.model.listed())}"
        )

    async def check(self, where: str) -> None:
        game, model, now, now_ms = self.game, self.model, self.now, self.now_ms
        looked_up = (*POOL, NEVER_SEEN)
        # All at once: independent reads, so the round trips overlap.
        with clock_at(now):
            page, among, found = await asyncio.gather(
                selectors.presence_page(game=game, offset=0, limit=len(POOL) + 1),
                selectors.online_among(game=game, player_ids=looked_up),
                asyncio.gather(*(selectors.player_presence(game=game, player_id=p) for p in looked_up)),
            )
        expected = model.online_players(now_ms)
        assert (page.online, page.watching) == (len(expected), model.watching(now_ms)), f"{where}: counts"
        got = [(p.player_id, p.display_name, p.last_seen) for p in page.players]
        assert got == [(p, model.display_name(p), at_ms(ms)) for p, ms in expected], f"{where}: the online page"
        for player_id, presence in zip(looked_up, found, strict=True):
            last_seen = model.last_seen(player_id)
            assert (presence.online, presence.last_seen) == (
                model.online(player_id, now_ms),
                None if last_seen is None else at_ms(last_seen),
            ), f"{where}: player_presence of {player_id!r}"
        assert among == {p for p in looked_up if model.online(p, now_ms)}, f"{where}: online_among"


async def _run_example(game: GameConfig, operations: list[Operation]) -> None:
    await get_redis().flushdb()
    run = Run(game=game, model=ReferencePresence(timeout_ms=game.presence_timeout_secs * 1000))
    for index, op in enumerate(operations, start=1):
        where = f"operation {index} at +{run.now_ms} ms, {op}"
        await run.apply(where, op)
        await run.check(where)
    await run.apply("final prune", Prune())
    await run.check("final prune")
    await run.claim("final claim")


@pytest.mark.parametrize("timeout_secs", [30, 60])
def test_it_agrees_with_the_reference_presence(make_game: Callable[..., Game], timeout_secs: int) -> None:
    game = GameConfig.from_model(
        make_game("presence-model", presence_timeout_secs=timeout_secs, max_submissions_per_minute=UNLIMITED), "0"
    )

    @settings(
        max_examples=EXAMPLES_PER_TIMEOUT,
        deadline=None,
        database=None,
        print_blob=True,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(operations=_operations(timeout_secs * 1000))
    def example(operations: list[Operation]) -> None:
        note(f"timeout {timeout_secs} s")
        run_sync(_run_example, game, operations)

    example()
