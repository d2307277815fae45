"""``make bench-deep``: live views below a board's top (subscribe with an ``offset``), and what they cost.

    .venv/bin/python bench/deep_views.py [--clients 1000] [--rate 100] [--duration 30] [--pages 0,1,10,100,1000]

The stack is bench/fanout.py's (its functions, imported): an embedded Redis and SQLite in a
temp dir, one uvicorn worker for the API and one for the websockets (WEB_WS_WORKERS=1), the
live broadcaster (``manage.py broadcast``) and websocket clients in separate processes. The
board ('main', mode ``latest``) first gets ``--players`` (100,000) players through the batch
API, evenly spread scores. Then, per scenario, ``--clients`` watchers open and subscribe to
the daily board with limit 50:

* ``0``: all on the top page (offset 0): the existing path, cut from the broadcaster's top 100;
* ``N``: spread over N distinct deep pages (offset 100 + 50k, k spread evenly over 1,000 pages,
  ranks 100 to 50,099), each read by the websocket worker once per view and change
  (live/sockets/deep.py).

Each scenario submits ``--rate`` scores per second for ``--duration`` s through
POST .../scores (fanout's open-loop submitter). Three in four are *churn*: a random player
gets a random score, so players move through the deep pages and most pages change every
tick. One in four is *targeted*: a player on a page a tracked watcher shows gets a new score
inside that page, away from its edges (5 rows). The benchmark keeps the board's exact state
(it is the only writer, and no player has two submissions in flight), so it knows where each
lands. Latency runs from a targeted submission's 200 to the first message showing that player
with that score, per (tracked watcher of the page, submission); only these count, as they
are changes that move the watched rows. Deep reads per second come from
``leaderboard_live_deep_reads_total`` on the websocket worker's /metrics, scraped at the
window's start and end. Rewrites its part of docs/benchmarks.md (``deep-views`` markers).
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import json
import math
import os
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_DIR = Path(__file__).resolve().parent.parent
if str(REPO_DIR) not in sys.path:
    # Run as a script (bench/deep_views.py), the repository root is not on the path yet.
    sys.path.insert(0, str(REPO_DIR))

from bench import common, fanout  # noqa: E402
from bench.common import Request  # noqa: E402

DEFAULT_CLIENTS = 1000
DEFAULT_RATE_PER_SEC = 100.0
DEFAULT_DURATION_SECS = 30.0
DEFAULT_PLAYERS = 100_000
# 0: every watcher on the top page; N: watchers spread over N distinct deep pages.
DEFAULT_PAGES = "0,1,10,100,1000"
PAGE_LIMIT = 50
# The broadcaster's message carries the top 100 (live.events.LIVE_LIMIT_MAX): a view deeper reads its rows.
TOP_ROWS = 100
# Deep pages start at offset TOP_ROWS + PAGE_LIMIT * k, k < DEPTH_PAGES: ranks 100 to 50,099.
DEPTH_PAGES = 1000
# Watcher j shows view (j * VIEW_STRIDE) % views: the tracked watchers (the first few of each client
# process) then fall on views spread over the board, and every view gets as many watchers.
VIEW_STRIDE = 37
# Initial scores: player d<i> has (i + 1) * SCORE_STEP; churn scores are uniform over the same span.
# Wide gaps, so a targeted score always finds room between two rows (at most 1e14 < 2**53).
SCORE_STEP = 1_000_000_000
TARGETED_SHARE = 0.25
# A targeted score lands this many rows inside its page, so churn moving rows by one or two
# between two reads does not push it off the page.
MARGIN_ROWS = 5
# A player submitted this recently is not picked again (its last row must be seen first).
RECENT_SECS = 1.0
PICK_ATTEMPTS = 50
FILL_BATCH = 1000
FILL_CONNECTIONS = 4
DEEP_READS = "leaderboard_live_deep_reads_total"
FRAMES_SENT = "leaderboard_socket_messages_total"
# Deep reads per view and tick above this say that reads are not shared per view (the board
# changes in every tick: a submission every 10 ms).
PER_VIEW_TICK_MAX = 1.2
INF = float("inf")


# --------------------------------------------------------------------------- the board as the benchmark knows it


class BoardModel:
    """The board's exact standings (desc order, all scores distinct), moved as submissions are sent."""

    def __init__(self, players: int) -> None:
        self.scores = [(i + 1) * SCORE_STEP for i in range(players)]  # ascending
        self.player_at = {score: f"d{i}" for i, score in enumerate(self.scores)}
        self.score_of = {player: score for score, player in self.player_at.items()}

    @property
    def players(self) -> int:
        return len(self.scores)

    def score_at(self, rank: int) -> int:
        """The score at a 0-based rank (0: the top)."""
        return self.scores[len(self.scores) - 1 - rank]

    def player_at_rank(self, rank: int) -> str:
        return self.player_at[self.score_at(rank)]

    def move(self, player: str, score: int) -> None:
        old = self.score_of[player]
        self.scores.pop(bisect.bisect_left(self.scores, old))
        del self.player_at[old]
        bisect.insort(self.scores, score)
        self.player_at[score] = player
        self.score_of[player] = score


@dataclass
class DeepSubmissions:
    """fanout.Submissions: churn and targeted moves of the board's players (see the module's docstring)."""

    board: BoardModel
    rng: random.Random
    targets: list[int] = field(default_factory=list)  # offsets of the pages targeted moves land on
    in_flight: set[str] = field(default_factory=set)
    last_sent: dict[str, float] = field(default_factory=dict)
    # "player@score" of each targeted move -> the offset of the page it lands on.
    targeted: dict[str, int] = field(default_factory=dict)
    refused: int = 0

    def next(self, i: int) -> tuple[str, int]:
        now = time.monotonic()
        move = self._targeted(now) if self.targets and self.rng.random() < TARGETED_SHARE else None
        player, score = move or self._churn(now)
        self.board.move(player, score)
        self.in_flight.add(player)
        self.last_sent[player] = now
        return player, score

    def answered(self, player_id: str, *, ok: bool) -> None:
        # A refused submission leaves the model ahead of the board: counted, and said in the report.
        self.in_flight.discard(player_id)
        self.refused += not ok

    def _free(self, player: str, now: float) -> bool:
        return player not in self.in_flight and now - self.last_sent.get(player, -INF) >= RECENT_SECS

    def _new_score(self, low: int, high: int) -> int | None:
        """A score strictly between low and high that no player has."""
        for _ in range(PICK_ATTEMPTS):
            if high - low < 2:
                return None
            score = self.rng.randrange(low + 1, high)
            if score not in self.board.player_at:
                return score
        return None

    def _targeted(self, now: float) -> tuple[str, int] | None:
        """A player of a targeted page moved inside it, to a score between its rows MARGIN_ROWS from each edge."""
        offset = self.rng.choice(self.targets)
        first, last = offset + MARGIN_ROWS, offset + PAGE_LIMIT - MARGIN_ROWS
        for _ in range(PICK_ATTEMPTS):
            player = self.board.player_at_rank(self.rng.randrange(first, last))
            if self._free(player, now):
                break
        else:
            return None
        # Between the rows just above and just below the landing ranks: the rows outside keep their ranks.
        score = self._new_score(self.board.score_at(last), self.board.score_at(first - 1))
        if score is None:
            return None
        self.targeted[f"{player}@{score}"] = offset
        return player, score

    def _churn(self, now: float) -> tuple[str, int]:
        players = self.board.players
        for _ in range(PICK_ATTEMPTS):
            player = f"d{self.rng.randrange(players)}"
            if self._free(player, now):
                break
        else:
            raise RuntimeError("no free player for a churn move")
        score = self._new_score(0, (players + 1) * SCORE_STEP)
        if score is None:
            raise RuntimeError("no free score for a churn move")
        return player, score


async def _fill(port: int, raw_key: str, board: BoardModel) -> None:
    """The board's players and scores through POST .../scores/batch, FILL_BATCH a request."""
    headers = {"Authorization": f"Bearer {raw_key}", "Content-Type": "application/json"}
    path = f"/api/v1/games/{fanout.GAME_SLUG}/scores/batch"
    items = [{"leaderboard": "main", "player_id": p, "score": s} for s, p in board.player_at.items()]
    bodies = [
        json.dumps({"scores": items[i : i + FILL_BATCH]}, separators=(",", ":")).encode()
        for i in range(0, len(items), FILL_BATCH)
    ]

    async def worker(share: list[bytes]) -> None:
        conn = common.RawHttpConnection(common.LOOPBACK, port, headers)
        try:
            for body in share:
                status, answer = await conn.request(Request("POST", path, body))
                if status != 200 or b'"error"' in answer:
                    raise RuntimeError(f"filling the board: HTTP {status}: {answer[:300]!r}")
        finally:
            await conn.close()

    await asyncio.gather(*(worker(bodies[i::FILL_CONNECTIONS]) for i in range(FILL_CONNECTIONS)))


# --------------------------------------------------------------------------- watchers


class DeepClientProcess(fanout._ClientProcess):
    """A client process whose tracked watchers note when they first showed each (player, score)."""

    @staticmethod
    def _note_entries(sock: Any, entries: list[dict[str, Any]], now: float, window: fanout.PassWindow) -> None:
        for entry in entries:
            sock.first_seen.setdefault(f"{entry['player_id']}@{entry['score']}", now)


def subscribe_frame(offset: int) -> str:
    message: dict[str, Any] = {"action": "subscribe", "leaderboard": "main", "period": fanout.WATCH_PERIOD}
    message["limit"] = PAGE_LIMIT
    if offset:
        message["offset"] = offset
    return json.dumps(message)


def view_offsets(pages: int) -> list[int]:
    """0: the top page; else ``pages`` deep pages spread evenly over DEPTH_PAGES."""
    if pages == 0:
        return [0]
    return [TOP_ROWS + PAGE_LIMIT * int((i + 0.5) * DEPTH_PAGES / pages) for i in range(pages)]


def watcher_offsets(clients: int, offsets: list[int]) -> list[int]:
    stride = VIEW_STRIDE if math.gcd(VIEW_STRIDE, len(offsets)) == 1 else 1
    return [offsets[(j * stride) % len(offsets)] for j in range(clients)]


# --------------------------------------------------------------------------- /metrics


def scrape(port: int) -> dict[str, float]:
    """The counters this benchmark reads from a worker's /metrics (loopback is on its allow-list)."""
    import httpx

    text = httpx.get(f"http://{common.LOOPBACK}:{port}/metrics", timeout=30).text
    found: dict[str, float] = {}
    for name in (DEEP_READS, FRAMES_SENT):
        match = re.search(rf"^{name} (\S+)$", text, re.MULTILINE)
        found[name] = float(match.group(1)) if match else math.nan
    return found


class MetricWindow(threading.Thread):
    """Scrapes a worker's /metrics at a window's start and end (beside the submitter's event loop):
    ``rates`` is each counter's growth per second between the two scrapes."""

    def __init__(self, port: int, window: fanout.PassWindow) -> None:
        super().__init__(daemon=True)
        self.port, self.window = port, window
        self.rates: dict[str, float] = {}
        self.error: str | None = None

    def run(self) -> None:
        try:
            time.sleep(max(0.0, self.window.start - time.monotonic()))
            before, at = scrape(self.port), time.monotonic()
            time.sleep(max(0.0, self.window.end - time.monotonic()))
            after, seconds = scrape(self.port), time.monotonic() - at
            self.rates = {name: (after[name] - before[name]) / seconds for name in before}
        except Exception as error:  # reported with the scenario; the run goes on
            self.error = f"{type(error).__name__}: {error}"[:200]


# --------------------------------------------------------------------------- one scenario


@dataclass
class ScenarioResult:
    pages: int  # 0: the top page
    views: int
    result: fanout.PassResult
    rates: dict[str, float]
    tracked_views: int
    tick_ms: int
    latencies_ms: list[float] = field(default_factory=list)  # INF: never shown within the settle time
    metrics_error: str | None = None

    @property
    def name(self) -> str:
        return "top page (offset 0)" if self.pages == 0 else f"{self.pages:,} deep page{'s' * (self.pages > 1)}"

    @property
    def deep_reads(self) -> float:
        return self.rates.get(DEEP_READS, math.nan)

    @property
    def frames(self) -> float:
        return self.rates.get(FRAMES_SENT, math.nan)

    @property
    def seen(self) -> float:
        shown = sum(1 for v in self.latencies_ms if v != INF)
        return shown / len(self.latencies_ms) if self.latencies_ms else math.nan


def _offset_of(subscribe: str) -> int:
    return int(json.loads(subscribe).get("offset", 0))


def _latencies(result: fanout.PassResult, targeted: dict[str, int]) -> list[float]:
    """ms from a targeted submission's 200 to a tracked watcher of its page showing it (INF: never)."""
    latencies: list[float] = []
    for report in result.reports:
        for tracked in report.tracked:
            offset = _offset_of(tracked.subscribe)
            for player, score, accepted_at in result.submit.accepted:
                key = f"{player}@{score}"
                if targeted.get(key) != offset:
                    continue
                seen = tracked.first_seen.get(key)
                latencies.append((seen - accepted_at) * 1000 if seen is not None else INF)
    return sorted(latencies)


def _scenario(
    services: fanout.Services,
    pages: int,
    *,
    clients: int,
    processes: int,
    rate: float,
    seconds: float,
    submissions: DeepSubmissions,
    tick_ms: int,
) -> ScenarioResult:
    offsets = watcher_offsets(clients, view_offsets(pages))
    label = "top page" if pages == 0 else f"{pages:,} deep pages"
    print(f"\n{clients:,} watchers on the {label}: opening sockets from {processes} process(es)...", flush=True)
    fleet = fanout.ClientFleet(
        port=services.ws_port,
        clients=clients,
        processes=processes,
        subscribes=[subscribe_frame(o) for o in offsets],
        kind=DeepClientProcess,
    )
    try:
        opened, retries, failures, secs = fleet.wait_ready()
        print(f"  {opened:,} of {clients:,} open in {secs:.1f} s (retries {retries})", flush=True)
        if opened < clients:
            raise RuntimeError(f"only {opened:,} of {clients:,} sockets opened: {dict(failures)}")
        submissions.targets = sorted({offsets[j] for j in fleet.tracked_sockets})
        start = time.monotonic() + 0.5 + fanout.WARMUP_SECS
        window = fanout.PassWindow(label, "", start, start + seconds, start + seconds + fanout.SETTLE_SECS)
        fleet.start_pass(window)
        metrics = MetricWindow(services.ws_port, window)
        metrics.start()
        submit = fanout._run_async(
            fanout._submit(
                port=services.port,
                raw_key=services.raw_key,
                rate=rate,
                window=window,
                submissions=submissions,
                watch=fanout._watched(services, fleet),
            )
        )
        metrics.join()
        result = fanout.PassResult(f"{label}, {rate:g}/s", clients, rate, submit, fleet.collect(window))
    finally:
        fleet.stop()
    latencies = _latencies(result, submissions.targeted)
    # fanout's "to its own row": the first message listing the submission's player (with its score, here).
    result.row_ms, result.pairs = [v for v in latencies if v != INF], len(latencies)
    scenario = ScenarioResult(
        pages, len(set(offsets)), result, metrics.rates, len(submissions.targets), tick_ms, latencies, metrics.error
    )
    _print_scenario(scenario)
    return scenario


# --------------------------------------------------------------------------- report


def _per_view_tick(s: ScenarioResult) -> float:
    """Deep reads per distinct view per broadcaster tick: at most 1 when each view is read once per change
    (the board changes in every tick)."""
    return s.deep_reads / (s.views * 1000 / s.tick_ms) if s.pages else math.nan


def _messages(s: ScenarioResult) -> float:
    """Standings messages the watchers received per second, all together."""
    return sum(s.result.counts) / s.result.submit.seconds


def _latency_text(s: ScenarioResult) -> str:
    return " / ".join(fanout._ms(s.latencies_ms, q) for q in (0.5, 0.99))


def _num(value: float, spec: str) -> str:
    return "-" if math.isnan(value) else format(value, spec)


def _print_scenario(s: ScenarioResult) -> None:
    fanout._print_pass(s.result)
    print(
        f"    deep reads {_num(s.deep_reads, ',.1f')}/s ({_num(_per_view_tick(s), '.2f')} per view and tick), "
        f"frames sent {_num(s.frames, ',.0f')}/s, standings received {_messages(s):,.0f}/s; targeted → shown "
        f"p50/p99 {_latency_text(s)} ms (unshown as > {fanout.SETTLE_SECS * 1000:,.0f})"
        + (f"\n    METRICS: {s.metrics_error}" if s.metrics_error else ""),
        flush=True,
    )


def _delivery_table(results: list[ScenarioResult]) -> str:
    lines = [
        "| watchers on | distinct views | submissions/s accepted (target) | deep reads/s | reads per view and "
        "tick | standings msgs/s, all watchers (per watcher) | frames sent/s (ws worker) "
        "| targeted → shown: p50 / p99 ms | pairs (shown) | notes |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for s in results:
        p = s.result
        lines.append(
            f"| {s.name} | {s.views:,} | {p.submit.rate:,.0f} ({p.target_rate:g}) | {_num(s.deep_reads, ',.1f')} "
            f"| {_num(_per_view_tick(s), '.2f')} | {_messages(s):,.0f} "
            f"({fanout._mean(p.messages_per_client_sec):.2f}) | {_num(s.frames, ',.0f')} | {_latency_text(s)} "
            f"| {len(s.latencies_ms):,} ({_num(s.seen, '.0%')}) | {'; '.join(fanout._problems(p))} |"
        )
    return "\n".join(lines)


def _cpu_table(results: list[ScenarioResult]) -> str:
    lines = [
        "| watchers on | websocket worker CPU | ws µs per standings message | broadcaster CPU | API worker CPU "
        "| Redis CPU | clients CPU (busiest process) | submitter CPU |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for s in results:
        p = s.result
        clients = p.client_cpu
        lines.append(
            f"| {s.name} | {fanout._cpu(p, 'ws'):.0%} | {fanout._us_per_message(p):,.0f} "
            f"| {fanout._cpu(p, 'broadcaster'):.0%} | {fanout._cpu(p, 'web'):.0%} | {fanout._cpu(p, 'redis'):.0%} "
            f"| {sum(clients):.0%} ({max(clients, default=0):.0%}) | {fanout._cpu(p, 'submitter'):.0%} |"
        )
    return "\n".join(lines)


def _findings(results: list[ScenarioResult], submissions: DeepSubmissions) -> str:
    """What the run says, in figures of this run."""
    deep = [s for s in results if s.pages and not math.isnan(s.deep_reads)]
    sentences = []
    if deep:
        reads = ", ".join(
            f"{s.deep_reads:,.1f} at {s.views:,} ({_per_view_tick(s):.2f} per view and tick)" for s in deep
        )
        sentences.append(f"Deep reads per second by distinct views, for {deep[0].result.clients:,} watchers: {reads}.")
        shared = [s for s in deep if _per_view_tick(s) > PER_VIEW_TICK_MAX]
        if shared:
            sentences.append(
                "More than one read per view and tick at "
                + ", ".join(f"{s.views:,} views ({_per_view_tick(s):.2f})" for s in shared)
                + ": reads are not all shared by the sockets of a view."
            )
    top = next((s for s in results if s.pages == 0), None)
    one = min(deep, key=lambda s: s.views, default=None)
    if top and one:
        top_us, one_us = fanout._us_per_message(top.result), fanout._us_per_message(one.result)
        sentences.append(
            f"Per standings message delivered to one socket, the websocket worker spent {top_us:,.0f} µs with every "
            f"watcher on the top page ({fanout._cpu(top.result, 'ws'):.0%} of a core, "
            f"{fanout._mean(top.result.messages_per_client_sec):.2f} messages/s each) and {one_us:,.0f} µs "
            f"({one_us / top_us:.1f}x) with them on {one.views:,} deep page(s) ({fanout._cpu(one.result, 'ws'):.0%}, "
            f"{fanout._mean(one.result.messages_per_client_sec):.2f} messages/s each)."
        )
    for s in deep:
        if s.deep_reads > s.frames:
            sentences.append(
                f"At {s.views:,} views, {s.deep_reads:,.0f} reads/s made {s.frames:,.0f} frames/s: "
                f"{s.deep_reads / s.frames:.1f} reads for each frame sent."
            )
    if submissions.refused:
        sentences.append(
            f"{submissions.refused:,} submissions were refused, so the benchmark's copy of the board drifted "
            "from the real one (latency pairs after them may be wrong)."
        )
    return " ".join(sentences)


def _section(
    results: list[ScenarioResult], submissions: DeepSubmissions, *, args: argparse.Namespace, tick_ms: int, machine: str
) -> str:
    bullets = [
        f"bench/fanout.py's stack: one uvicorn worker for the API, one for the websockets (WEB_WS_WORKERS=1), the "
        f"broadcaster (BROADCAST_TICK_MS={tick_ms}), an embedded Redis; a board in `latest` mode filled with "
        f"{args.players:,} players through the batch API.",
        f"Per scenario, {args.clients:,} new websockets, each subscribed to the daily board with limit {PAGE_LIMIT}: "
        f"all at offset 0, or spread evenly over N deep pages at offset {TOP_ROWS} + {PAGE_LIMIT}·k "
        f"(k spread over {DEPTH_PAGES:,} pages: ranks {TOP_ROWS} to {TOP_ROWS + PAGE_LIMIT * DEPTH_PAGES - 1:,}).",
        f"Submissions: {args.rate:g}/s for {args.duration:g} s (after {fanout.WARMUP_SECS:g} s of warm-up), "
        f"open loop on {fanout.SUBMIT_CONNECTIONS} connections. {1 - TARGETED_SHARE:.0%} churn (a random player, "
        f"a random score over the whole board: players cross the deep pages), {TARGETED_SHARE:.0%} targeted (a "
        f"player of a page that a tracked watcher shows gets a score inside it, {MARGIN_ROWS} rows from its "
        "edges). The benchmark keeps the board's exact state, so it knows where each lands.",
        f"*targeted → shown*: from a targeted submission's 200 to the first standings message of a tracked "
        f"watcher of that page listing the player with that score, over every such (watcher, submission) pair "
        f"({fanout.TRACKED_WATCHERS} tracked watchers; `> {fanout.SETTLE_SECS * 1000:,.0f}`: not shown within "
        f"{fanout.SETTLE_SECS:g} s). *Deep reads/s* and *frames sent/s*: `{DEEP_READS}` and `{FRAMES_SENT}` "
        "scraped from the websocket worker's /metrics at the window's start and end; the board changes in every "
        f"tick, so a view read once per change is read {1000 / tick_ms:g} times a second. CPU: shares of one core "
        "over the window.",
    ]
    parameters = "\n".join(f"- {b}" for b in bullets)
    return f"""Last run: {common.utc_now_text()}. Machine: {machine}.

{parameters}

{_delivery_table(results)}

{_cpu_table(results)}

{_findings(results, submissions)}
"""


# --------------------------------------------------------------------------- main


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=DEFAULT_CLIENTS, help="websocket watchers per scenario")
    parser.add_argument("--rate", type=float, default=DEFAULT_RATE_PER_SEC, help="submissions per second")
    parser.add_argument("--duration", type=float, default=DEFAULT_DURATION_SECS, help="seconds measured per scenario")
    parser.add_argument("--players", type=int, default=DEFAULT_PLAYERS, help="players on the board")
    parser.add_argument(
        "--pages", default=DEFAULT_PAGES, help="scenarios: distinct deep pages the watchers spread over (0: top page)"
    )
    parser.add_argument("--seed", type=int, default=1, help="of the submissions' random choices")
    parser.add_argument("--no-docs", action="store_true", help="do not rewrite docs/benchmarks.md")
    parser.add_argument(
        "--settings",
        default=fanout.DEFAULT_SETTINGS,
        help="Django settings module of the server and the broadcaster (A/B experiments; implies --no-docs)",
    )
    args = parser.parse_args(argv)
    if args.settings != fanout.DEFAULT_SETTINGS:
        args.no_docs = True  # numbers from another configuration must not replace the documented ones
    args.pages = [int(p) for p in args.pages.split(",") if p.strip()]
    if not args.pages or not all(0 <= p <= DEPTH_PAGES for p in args.pages):
        parser.error(f"--pages: numbers from 0 to {DEPTH_PAGES:,}, comma-separated")
    if not 1 <= args.clients <= 20_000:
        parser.error("--clients must be between 1 and 20,000")
    if not 1 <= args.rate <= 2000 or not 1 <= args.duration <= 600:
        parser.error("--rate must be between 1 and 2,000 per second, --duration between 1 and 600 s")
    if args.players < TOP_ROWS + PAGE_LIMIT * (DEPTH_PAGES + 1):
        parser.error(f"--players must be at least {TOP_ROWS + PAGE_LIMIT * (DEPTH_PAGES + 1):,} (the deepest page)")
    return args


def _run(
    args: argparse.Namespace, tmp: Path, processes: list[subprocess.Popen[bytes]]
) -> tuple[list[ScenarioResult], DeepSubmissions, int]:
    """The services, the board, then each scenario: (results, submissions, tick in ms)."""
    services, tick_ms = fanout._start_services(tmp, processes, profile=None, settings=args.settings, mode="latest")
    board = BoardModel(args.players)
    started = time.monotonic()
    fanout._run_async(_fill(services.port, services.raw_key, board))
    print(f"board filled: {args.players:,} players in {time.monotonic() - started:.1f} s", flush=True)
    submissions = DeepSubmissions(board, random.Random(args.seed))
    results = []
    for pages in args.pages:
        results.append(
            _scenario(
                services,
                pages,
                clients=args.clients,
                processes=fanout._client_processes(args.clients, 0),
                rate=args.rate,
                seconds=args.duration,
                submissions=submissions,
                tick_ms=tick_ms,
            )
        )
        for process, what in ((services.ws_server, "the websocket worker"), (services.broadcaster, "the broadcaster")):
            if process.poll() is not None:
                raise RuntimeError(f"{what} exited with code {process.returncode} during the run")
    return results, submissions, tick_ms


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    machine = common.machine_info()
    machine_text = "; ".join(f"{k}: {v}" for k, v in machine.items())
    print(f"machine: {machine_text}", flush=True)
    common.raise_open_files_limit(args.clients + fanout.OPEN_FILES_SPARE)
    processes: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory(prefix="lb-deep-") as tmp, common.sigterm_as_interrupt():
        try:
            results, submissions, tick_ms = _run(args, Path(tmp), processes)
        except KeyboardInterrupt:
            print("\ninterrupted; stopping the clients, the broadcaster, the server and Redis", file=sys.stderr)
            return 130
        except (RuntimeError, OSError, subprocess.CalledProcessError) as error:
            print(f"\nthe benchmark failed: {error}", file=sys.stderr)
            return 1
        finally:
            common.stop_processes(processes)
            # Where fanout._start_services logs the broadcaster: anything past its banner is worth seeing.
            log = Path(tmp) / "broadcaster.log"
            extra = log.read_text().split("\n", 1)[-1].strip() if log.exists() else ""
            if extra:
                print(f"\nbroadcaster log:\n{extra[-4000:]}", file=sys.stderr)
    load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    print(f"\nload average after the run: {load}")
    section = _section(
        results, submissions, args=args, tick_ms=tick_ms, machine=f"{machine_text}; load average after: {load}"
    )
    print("\n" + section)
    if not args.no_docs:
        common.write_section("deep-views", section)
        print(f"wrote the deep-views section of {common.DOCS_PATH.relative_to(REPO_DIR)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
