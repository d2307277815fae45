"""``make bench-idle``: what idle boards cost the background: Celery (worker + beat), the broadcaster
and the live latency, with 10 active boards alone and then beside 10,000 idle ones.

    .venv/bin/python bench/idle.py [--idle 10000] [--idle-games 1000] [--active 10] [--secs 60]

Starts its own embedded Redis and SQLite in a temp dir and the real processes as ``make run``
starts them (leaderboard_site/devenv.py): uvicorn with the product's ASGI app (API and
websockets), the Celery worker (``--concurrency 2``) and beat with the product's schedule, and
``manage.py broadcast``. Two phases, in this order, on the same processes:

* **reference**: ``--active`` games with one board each (a daily and an all-time window);
* **idle boards**: ``--idle`` more boards in ``--idle-games`` more games, each holding one
  score (so each has its period boards, a drained ledger stream and a close job for its
  daily period, as an idle board in production has), beside the same active boards.

Each phase first waits until the background settled (the seed's scores drained into the
database, announced live, no close job due), then measures ``--secs`` of steady load: one score
posted through the API every 250 ms, round-robin over the active boards, each active board
watched by a websocket. Per phase: CPU of the worker (with its pool processes) + beat, of
the broadcaster, and of Redis, as a share of one core (from /proc); Redis commands per second;
and the live latency, from the POST to the watcher seeing the score (p50 / p99).

Prints the tables and the ratios (idle boards ÷ reference, target ≤ 1.2) and rewrites its
section of docs/benchmarks.md. Do not run it across midnight UTC: every seeded daily period
would then close inside the measurement.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import itertools
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

REPO_DIR = Path(__file__).resolve().parent.parent
if str(REPO_DIR) not in sys.path:
    sys.path.insert(0, str(REPO_DIR))

from bench import common  # noqa: E402

DEFAULT_IDLE = 10_000
# Two layouts, each a run of its own: the idle boards in 10 games (what boards cost), then in
# 1,000 games of 10 boards (what games cost beside them: the per-game beat tasks).
DEFAULT_IDLE_GAMES = "10,1000"
DEFAULT_ACTIVE = 10
DEFAULT_SECS = 60.0
# One score through the API this often, round-robin over the active boards (4 per second).
POST_EVERY_SECS = 0.25
# The target: idle boards cost the background at most this much more than none.
TARGET_RATIO = 1.2
WINDOWS = ["daily", "all-time"]
# How long the background gets to store, announce and schedule the seed before a phase is
# measured anyway (and reported as unsettled).
SETTLE_TIMEOUT_SECS = 600.0
# Once settled, a little longer: the broadcaster's and the web's game-list reloads, the
# first catch-up pass after the seed.
SETTLE_EXTRA_SECS = 15.0
# Items per seeding call: a batch on 100 boards is 100 board scripts in one pipeline, well inside
# the Redis timeout (a thousand on as many boards can pass 1 s on a loaded machine).
SEED_CHUNK = 100
# Calls of each beat task timed in the benchmark's process after a phase (its cost per run).
TASK_CALLS = 3


@dataclass
class Phase:
    name: str
    games: int
    boards: int
    settle_secs: float = 0.0
    settled: bool = True
    seconds: float = 0.0
    cpu: dict[str, float] = field(default_factory=dict)  # process -> share of one core
    redis_commands_per_sec: float = 0.0
    latency_ms: list[float] = field(default_factory=list)
    posted: int = 0
    lost: int = 0  # posted scores no watcher saw
    tasks: dict[str, float] = field(default_factory=dict)  # beat task -> share of one core at its interval

    @property
    def background(self) -> float:
        return self.cpu["worker"] + self.cpu["beat"]


def _pct(values: list[float], q: float) -> float:
    return common.percentile(sorted(values), q) if values else float("nan")


# --------------------------------------------------------------------------- the processes


def _start_processes(env: dict[str, str], port: int, tmp: Path) -> dict[str, Any]:
    """web, worker, beat and broadcaster, with the command lines of leaderboard_site/devenv.py."""
    web = common.start_server(env=env, port=port)
    common.wait_for_http_ok(port, "/healthz", process=web)
    celery = [common.PYTHON, "-m", "celery", "-A", "leaderboard_site", "--quiet"]
    started = {
        "web": web,
        "worker": common.spawn([*celery, "worker", "--loglevel", "WARNING", "--concurrency", "2"], env),
        "beat": common.spawn(
            [*celery, "beat", "--loglevel", "WARNING", "--schedule", str(tmp / "celerybeat-schedule")], env
        ),
        "broadcaster": common.spawn([common.PYTHON, "manage.py", "broadcast"], env),
    }
    return started


def _watched(processes: dict[str, Any], redis_pid: int) -> list[common.Watched]:
    return [
        common.Watched("worker", processes["worker"].pid, with_descendants=True),
        common.Watched("beat", processes["beat"].pid),
        common.Watched("broadcaster", processes["broadcaster"].pid),
        common.Watched("web", processes["web"].pid, with_descendants=True),
        common.Watched("redis", redis_pid),
    ]


# --------------------------------------------------------------------------- boards


def _make_games(first: int, count: int, boards_per_game: int) -> list[tuple[str, str]]:
    """Games g<n> (n from ``first``) with boards b0.. each, straight into the database; the
    config epoch is bumped once (bulk_create sends no signal), so every process reloads."""
    from core import services
    from core.models import Game, Leaderboard

    slugs = [f"g{n:05d}" for n in range(first, first + count)]
    Game.objects.bulk_create([Game(slug=slug, name=slug, max_submissions_per_minute=0) for slug in slugs])
    made = Game.objects.filter(slug__in=slugs)
    Leaderboard.objects.bulk_create(
        [
            Leaderboard(game=game, slug=f"b{i}", name=f"Board {i}", mode="best", order="desc", windows=WINDOWS)
            for game in made
            for i in range(boards_per_game)
        ],
        batch_size=2000,
    )
    services.config_changed(slug=slugs[0])
    return [(slug, f"b{i}") for slug in slugs for i in range(boards_per_game)]


async def _seed(boards: list[tuple[str, str]]) -> None:
    """One score on each of these boards, as a game server would post it (the product's service)."""
    from core import config
    from games import services

    config.invalidate()
    by_game: dict[str, list[str]] = {}
    for slug, board in boards:
        by_game.setdefault(slug, []).append(board)
    for slug, board_slugs in by_game.items():
        game = await config.get_game(slug)
        assert game is not None
        for i in range(0, len(board_slugs), SEED_CHUNK):
            items = [services.Submission("seed", 1, leaderboard=b) for b in board_slugs[i : i + SEED_CHUNK]]
            await services.score_submit_many(game=game, items=items)


async def _unsettled(refs: list[str]) -> str:
    """What the background still has to do for the seed ('' once nothing): unstored ledger
    entries, boards not yet announced live, close jobs due."""
    from core import clock, keys
    from core.redis import get_redis

    client = get_redis()
    pipe = client.pipeline(transaction=False)
    for ref in refs:
        pipe.xlen(keys.ledger(ref))
        pipe.zcount(keys.close_jobs(ref), "-inf", clock.now_ms())
    found = await pipe.execute()
    ledger, due = sum(found[0::2]), sum(found[1::2])
    changes = await client.zcard(keys.live_changes())
    parts = [f"{ledger:,} ledger entries" if ledger else "", f"{due:,} close jobs due" if due else ""]
    parts.append(f"{changes:,} boards to announce" if changes else "")
    return ", ".join(part for part in parts if part)


def _settle(phase: Phase, refs: list[str]) -> None:
    from asgiref.sync import async_to_sync

    started = time.monotonic()
    waiting = "?"
    while time.monotonic() - started < SETTLE_TIMEOUT_SECS:
        waiting = async_to_sync(_unsettled)(refs)
        if not waiting:
            break
        time.sleep(2)
    phase.settle_secs = time.monotonic() - started
    phase.settled = not waiting
    if waiting:
        print(f"  not settled after {SETTLE_TIMEOUT_SECS:.0f} s ({waiting}): measured anyway", flush=True)
    time.sleep(SETTLE_EXTRA_SECS)


# --------------------------------------------------------------------------- the measured window


async def _load(phase: Phase, port: int, active: list[tuple[str, str, str]], secs: float) -> None:
    """Scores posted round-robin to the active boards; a watcher per board records when each shows."""
    import httpx
    from websockets.asyncio.client import connect
    from websockets.typing import Origin

    posted: dict[tuple[str, int], float] = {}
    origin = Origin(f"http://{common.LOOPBACK}:{port}")

    async def watch(slug: str, board: str, ready: asyncio.Event) -> None:
        async with connect(f"ws://{common.LOOPBACK}:{port}/ws/games/{slug}/", origin=origin) as ws:
            await ws.send(json.dumps({"action": "subscribe", "leaderboard": board, "period": "daily", "limit": 10}))
            await ws.recv()  # the snapshot
            ready.set()
            while True:
                message = json.loads(await ws.recv())
                seen = time.perf_counter()
                for entry in message.get("entries", []):
                    sent = posted.pop((f"{slug}.{board}", entry["score"]), None)
                    if sent is not None:
                        phase.latency_ms.append((seen - sent) * 1000)

    readies = [asyncio.Event() for _ in active]
    watchers = [
        asyncio.create_task(watch(slug, board, ready)) for (slug, board, _), ready in zip(active, readies, strict=True)
    ]
    try:
        await asyncio.wait_for(asyncio.gather(*(ready.wait() for ready in readies)), timeout=30)
        async with httpx.AsyncClient(base_url=f"http://{common.LOOPBACK}:{port}", timeout=10) as http:
            # Above every score posted before: each new one enters the watcher's top 10.
            base = int(time.time() * 1000) * 100
            deadline = time.monotonic() + secs
            for n, (slug, board, raw_key) in zip(itertools.count(), itertools.cycle(active)):
                if time.monotonic() >= deadline:
                    break
                score = base + n
                posted[(f"{slug}.{board}", score)] = time.perf_counter()
                response = await http.post(
                    f"/api/v1/games/{slug}/leaderboards/{board}/scores",
                    json={"player_id": f"w{n}", "score": score},
                    headers={"Authorization": f"Bearer {raw_key}"},
                )
                response.raise_for_status()
                phase.posted += 1
                await asyncio.sleep(POST_EVERY_SECS)
        await asyncio.sleep(2)  # the last scores' live messages
    finally:
        for watcher in watchers:
            watcher.cancel()
        await asyncio.gather(*watchers, return_exceptions=True)
    phase.lost = len(posted)


async def _redis_commands() -> int:
    from core.redis import get_redis

    return int((await get_redis().info("stats"))["total_commands_processed"])


def _measure(phase: Phase, port: int, active: list[tuple[str, str, str]], secs: float, watched: list[Any]) -> None:
    from asgiref.sync import async_to_sync

    before = {w.name: w.seconds() for w in watched}
    commands = async_to_sync(_redis_commands)()
    started = time.monotonic()
    async_to_sync(_load)(phase, port, active, secs)
    phase.seconds = time.monotonic() - started
    phase.redis_commands_per_sec = (async_to_sync(_redis_commands)() - commands) / phase.seconds
    phase.cpu = {w.name: (w.seconds() - before[w.name]) / phase.seconds for w in watched}


def _task_costs(phase: Phase) -> None:
    """Each beat task's CPU per run (in this process, on the same Redis and database, after the
    measured window) times its rate: its share of one core, as the worker pays it."""
    from importlib import import_module

    from leaderboard_site.schedule import BEAT_SCHEDULE

    for entry in BEAT_SCHEDULE.values():
        path = str(entry["task"])
        module, _, name = path.rpartition(".")
        task = getattr(import_module(module), name)
        task()  # warm
        started = time.process_time()
        for _ in range(TASK_CALLS):
            task()
        per_run = (time.process_time() - started) / TASK_CALLS
        phase.tasks[name] = per_run / float(cast("float", entry["schedule"]))


# --------------------------------------------------------------------------- report


def _row(phase: Phase) -> str:
    cpu = phase.cpu
    return (
        f"| {phase.name} | {phase.games:,} | {phase.boards:,} | {phase.background:.1%} "
        f"| {cpu['worker']:.1%} / {cpu['beat']:.1%} | {cpu['broadcaster']:.1%} | {cpu['web']:.1%} "
        f"| {cpu['redis']:.1%} | {phase.redis_commands_per_sec:,.0f} "
        f"| {_pct(phase.latency_ms, 0.5):.0f} / {_pct(phase.latency_ms, 0.99):.0f} "
        f"| {phase.posted} / {phase.lost} | {phase.settle_secs:,.0f}{'' if phase.settled else ' (not settled)'} |"
    )


def _ratio(big: float, small: float) -> float:
    return big / small if small else float("inf")


def _ratios(small: Phase, big: Phase) -> list[tuple[str, float]]:
    return [
        ("Celery worker + beat CPU: idle boards ÷ reference", _ratio(big.background, small.background)),
        ("broadcaster CPU: idle boards ÷ reference", _ratio(big.cpu["broadcaster"], small.cpu["broadcaster"])),
        (
            "live latency p50: idle boards ÷ reference",
            _ratio(_pct(big.latency_ms, 0.5), _pct(small.latency_ms, 0.5)),
        ),
        (
            "live latency p99: idle boards ÷ reference",
            _ratio(_pct(big.latency_ms, 0.99), _pct(small.latency_ms, 0.99)),
        ),
        ("Redis CPU: idle boards ÷ reference", _ratio(big.cpu["redis"], small.cpu["redis"])),
    ]


def _met(small: Phase, big: Phase) -> bool:
    return all(value <= TARGET_RATIO for _, value in _ratios(small, big)[:3])


def _table(small: Phase, big: Phase) -> str:
    ratios = "\n".join(f"| {name} | {value:.2f} |" for name, value in _ratios(small, big))
    tasks = "\n".join(
        f"| {name} | {small.tasks.get(name, 0):.2%} | {big.tasks.get(name, 0):.2%} |"
        for name in sorted(set(small.tasks) | set(big.tasks), key=lambda n: -big.tasks.get(n, 0))
    )
    return f"""| phase | games | boards | worker + beat | worker / beat | broadcaster | web | Redis \
| Redis cmds/s | latency ms p50 / p99 | posted / unseen | settled in s |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
{_row(small)}
{_row(big)}

| ratio | value |
|---|---:|
{ratios}

| beat task (CPU per run times its rate: share of a core) | reference | idle boards |
|---|---:|---:|
{tasks}{_unsettled_note(big)}"""


def _unsettled_note(phase: Phase) -> str:
    if phase.settled:
        return ""
    return (
        "\n\nNot settled: the worker had not stored the whole seed when the window began, so the"
        "\ndrain's figure above includes storing what was left of it."
    )


def _section(layouts: list[tuple[Phase, Phase]], machine: dict[str, str], secs: float) -> str:
    small = layouts[0][0]
    parts = []
    for reference, big in layouts:
        parts.append(
            f"""### {big.boards - reference.boards:,} idle boards in {big.games - reference.games:,} games: \
target {"met" if _met(reference, big) else "NOT met"}

{_table(reference, big)}
"""
        )
    body = "\n".join(parts)
    return f"""## Idle boards in the background (`make bench-idle`, bench/idle.py)

Run {common.utc_now_text()} on {machine.get("cpus", "?")} CPUs ({machine.get("cpu", "?")}),
Redis {machine.get("redis-server", "?")}, load average before the run
{machine.get("load average before the run", "?")}.
The real processes as `make run` starts them (uvicorn, Celery worker with 2 pool processes,
beat with the product's schedule, `manage.py broadcast`) on their own Redis and SQLite, one
run per layout. The reference has {small.boards} active boards alone (one per game); the
second phase adds the idle boards, each holding one score (so each has its period boards,
a drained ledger stream and a close job, as an idle board in production has). Each phase
waits until the seed is stored, announced and scheduled (at most {SETTLE_TIMEOUT_SECS:.0f} s),
then measures {secs:.0f} s of one score posted every {POST_EVERY_SECS * 1000:.0f} ms
round-robin to the active boards, each watched by a websocket. CPU is a share of one core
(worker with its pool processes); latency is from the POST to the watcher's message showing
the score. The beat tasks' table times each task in the benchmark's process after the
window (CPU per run, {TASK_CALLS} runs, times its rate from the beat schedule).
Target: Celery worker + beat, broadcaster and latency p50 each at most {TARGET_RATIO} times the reference.

{body}"""


def _print_phase(phase: Phase) -> None:
    print(
        f"  background {phase.background:.1%} (worker {phase.cpu['worker']:.1%}, beat {phase.cpu['beat']:.1%}), "
        f"broadcaster {phase.cpu['broadcaster']:.1%}, web {phase.cpu['web']:.1%}, redis {phase.cpu['redis']:.1%}, "
        f"{phase.redis_commands_per_sec:,.0f} redis cmds/s, latency p50 {_pct(phase.latency_ms, 0.5):.0f} ms "
        f"p99 {_pct(phase.latency_ms, 0.99):.0f} ms ({phase.posted} posted, {phase.lost} unseen)",
        flush=True,
    )
    print("  tasks: " + ", ".join(f"{name} {share:.2%}" for name, share in phase.tasks.items()), flush=True)


def _run(args: argparse.Namespace, idle_games: int, tmp: Path, processes: list[Any]) -> tuple[Phase, Phase]:
    redis_process, redis_url = common.start_redis(tmp / "redis")
    processes.append(redis_process)
    env = common.bench_env(var_dir=tmp, redis_url=redis_url)
    for name in ("DJANGO_SETTINGS_MODULE", "VAR_DIR", "REDIS_URL", "DEBUG", "SECRET_KEY", "ALLOWED_HOSTS"):
        os.environ[name] = env[name]
    os.environ.pop("DATABASE_URL", None)
    import django

    django.setup()
    logging.getLogger("httpx").setLevel(logging.WARNING)
    from asgiref.sync import async_to_sync

    from core import apikeys, keys
    from core.models import Game

    common.manage(env, "migrate", "--noinput", "-v", "0")
    port = common.free_port()
    started = _start_processes(env, port, tmp)
    processes.extend(started.values())
    watched = _watched(started, redis_process.pid)

    small = Phase("reference", args.active, args.active)
    big = Phase("idle boards", args.active + idle_games, args.active + args.idle)
    print(f"reference: {args.active} active boards...", flush=True)
    made = _make_games(0, args.active, 1)
    active = []
    for slug, board in made:
        _, raw_key = apikeys.api_key_create(game=Game.objects.get(slug=slug), name="bench")
        active.append((slug, board, raw_key))
    async_to_sync(_seed)(made)
    refs = [keys.board_ref(slug, board) for slug, board in made]
    _settle(small, refs)
    _measure(small, port, active, args.secs, watched)
    _task_costs(small)
    _print_phase(small)

    print(f"idle boards: {args.idle:,} more in {idle_games:,} games...", flush=True)
    per_game = -(-args.idle // idle_games)
    idle = _make_games(args.active, idle_games, per_game)[: args.idle]
    async_to_sync(_seed)(idle)
    refs += [keys.board_ref(slug, board) for slug, board in idle]
    _settle(big, refs)
    _measure(big, port, active, args.secs, watched)
    _task_costs(big)
    _print_phase(big)
    return small, big


def _one_layout(args: argparse.Namespace, idle_games: int) -> tuple[Phase, Phase] | int:
    processes: list[Any] = []
    with tempfile.TemporaryDirectory(prefix="lb-idle-") as tmp, common.sigterm_as_interrupt():
        try:
            return _run(args, idle_games, Path(tmp), processes)
        except KeyboardInterrupt:
            print("\ninterrupted; stopping the processes and Redis", file=sys.stderr)
            return 130
        except (RuntimeError, OSError) as error:
            print(f"\nthe benchmark failed: {type(error).__name__}: {error}", file=sys.stderr)
            return 1
        finally:
            common.stop_processes(processes)


def _in_child(args: argparse.Namespace, idle_games: int) -> tuple[Phase, Phase] | int:
    """One layout in a process of its own (each needs its own Redis, database and settings)."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        argv = [common.PYTHON, __file__, "--idle", str(args.idle), "--idle-games", str(idle_games)]
        argv += ["--active", str(args.active), "--secs", str(args.secs), "--json", out.name, "--no-docs"]
        code = subprocess.run(argv, cwd=REPO_DIR, check=False).returncode
        if code:
            return code
        small, big = json.loads(Path(out.name).read_text())
        return Phase(**small), Phase(**big)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--idle", type=int, default=DEFAULT_IDLE, help="idle boards in the second phase")
    parser.add_argument(
        "--idle-games", default=DEFAULT_IDLE_GAMES, help="games the idle boards are in; several (10,1000): a run each"
    )
    parser.add_argument("--active", type=int, default=DEFAULT_ACTIVE, help="active boards (one per game)")
    parser.add_argument("--secs", type=float, default=DEFAULT_SECS, help="seconds measured per phase")
    parser.add_argument("--json", help="write the phases to this file (one layout only)")
    parser.add_argument("--no-docs", action="store_true", help="do not rewrite docs/benchmarks.md")
    args = parser.parse_args(argv)
    try:
        layouts = [int(n) for n in str(args.idle_games).split(",")]
    except ValueError:
        parser.error("--idle-games takes whole numbers separated by commas")
    if args.active < 1 or args.idle < 1 or not all(1 <= n <= args.idle for n in layouts):
        parser.error("--active and --idle must be at least 1, and each --idle-games from 1 to --idle")
    if args.json and len(layouts) != 1:
        parser.error("--json takes one layout")
    machine = common.machine_info()
    print("machine: " + "; ".join(f"{k}: {v}" for k, v in machine.items()), flush=True)
    results = []
    for idle_games in layouts:
        result = _one_layout(args, idle_games) if len(layouts) == 1 else _in_child(args, idle_games)
        if isinstance(result, int):
            return result
        results.append(result)
        print()
        print(_table(*result))
    if args.json:
        Path(args.json).write_text(json.dumps([dataclasses.asdict(phase) for phase in results[0]]))
    if not args.no_docs:
        common.write_section("idle", _section(results, machine, args.secs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
