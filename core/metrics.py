"""Every Prometheus metric the product's processes record, in one place (what
docs/operations.md lists and docs/grafana/ charts).

Processes: web and websocket workers, the broadcaster, Celery's worker and beat. With
``PROMETHEUS_MULTIPROC_DIR`` set (make run and the Docker image set it; every process
of a node must see the same directory), each process writes its values to files there
and ``/metrics`` on any web worker adds them up (prometheus-client's multiprocess
mode). Without it (tests, one-off commands) they live in this process's registry.

What is a state rather than an event (players online, ledger backlog, due and dead
close jobs) is not recorded here: the /metrics view reads it from Redis when scraped
(leaderboard_site/metrics.py), so it is right however many processes there are.

Labels stay bounded: codes, kinds and routes come from the code, never from input; a
game label exists only with ``METRICS_GAME_LABELS=true`` (a game is a label value, and
there can be many).
"""

from __future__ import annotations

import atexit
import os
import socket

from django.conf import settings
from prometheus_client import Counter, Gauge, Histogram, disable_created_metrics, values

# prometheus-client's own variable, read by it at import: set before any process starts.
MULTIPROCESS_DIR = os.environ.get("PROMETHEUS_MULTIPROC_DIR", "")


def _process_identifier() -> str:
    # The host name too: containers of one node share the directory (a volume), and each
    # counts its pids from 1. '-' because the collector splits file names on '_'.
    return f"{socket.gethostname()}-{os.getpid()}"


if MULTIPROCESS_DIR:
    values.ValueClass = values.MultiProcessValue(process_identifier=_process_identifier)
    # Live gauges (open sockets) of a process that exits cleanly leave with it.
    atexit.register(lambda: _mark_dead(_process_identifier()))


def _mark_dead(identifier: str) -> None:
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(identifier)


# No "_created" series beside every counter: nothing reads them, and they double the page.
disable_created_metrics()

GAME_LABELS: bool = settings.METRICS_GAME_LABELS
_GAME = ("game",) if GAME_LABELS else ()

# Redis round trips of a submission: sub-millisecond when healthy, the timeout (1 s) when not.
_REDIS_BUCKETS_SECS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
# HTTP requests: a read is ~1 ms of server time, a batch of 1,000 up to ~60 ms.
_HTTP_BUCKETS_SECS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)

HTTP_REQUESTS = Counter(
    "leaderboard_http_requests_total",
    "HTTP requests answered, by method, URL pattern and status.",
    ["method", "route", "status"],
)
HTTP_SECONDS = Histogram(
    "leaderboard_http_request_duration_seconds",
    "Time from a request reaching Django to its response, by method and URL pattern.",
    ["method", "route"],
    buckets=_HTTP_BUCKETS_SECS,
)

SUBMISSIONS = Counter(
    "leaderboard_submissions_total",
    "Scores submitted through the API, one per item: accepted (code 'ok', or 'replayed' for an "
    "idempotent retry) or refused with the item's error code.",
    ["outcome", "code", *_GAME],
)
SUBMIT_SCRIPT_SECONDS = Histogram(
    "leaderboard_submit_script_seconds",
    "One pipelined round trip of submit-script calls to Redis (a single score, or a batch's chunks).",
    buckets=_REDIS_BUCKETS_SECS,
)
BATCH_ITEMS = Histogram(
    "leaderboard_batch_items",
    "Items per batch request (POST .../scores/batch).",
    buckets=(1, 5, 10, 25, 50, 100, 250, 500, 1000),
)
RATE_LIMITED = Counter(
    "leaderboard_rate_limited_total",
    "Requests or items refused by a rate limit: an API key's requests or items, or one player's submissions.",
    ["limit"],
)

BROADCAST_TICK_SECONDS = Histogram(
    "leaderboard_broadcast_tick_seconds",
    "Time the broadcaster spent on one tick (compare with BROADCAST_TICK_MS).",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0),
)
BROADCAST_BOARDS = Histogram(
    "leaderboard_broadcast_boards_per_tick",
    "Boards whose standings one broadcaster tick sent (those that changed).",
    buckets=(0, 1, 2, 5, 10, 25, 50, 100, 250, 500, 1000),
)

SOCKETS_OPEN = Gauge(
    "leaderboard_sockets_open",
    "Websockets open now, over every worker of this node.",
    multiprocess_mode="livesum",
)
SOCKET_MESSAGES = Counter(
    "leaderboard_socket_messages_total",
    "Frames sent to websockets (snapshots, standings, presence, followed players, errors).",
)
LIVE_DEEP_READS = Counter(
    "leaderboard_live_deep_reads_total",
    "Reads of live views below a board's top (live/sockets/deep.py): one per distinct view, "
    "process and change, however many sockets show the view.",
)
SOCKET_ADMISSION_WAIT_SECONDS = Histogram(
    "leaderboard_socket_admission_wait_seconds",
    "Time an opening websocket waited in its process's admission queue for its turn to open.",
    buckets=(0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0),
)
SOCKET_ADMISSIONS_SHED = Counter(
    "leaderboard_socket_admissions_shed_total",
    "Websockets closed with 1013 because WS_ADMISSION_QUEUE_SOCKETS others already waited to open "
    "(load shedding: the process is saturated, Redis is not down).",
)

LEDGER_DRAINED = Counter(
    "leaderboard_ledger_drained_total",
    "Ledger entries the drain stored in the database (their rate is the drain rate).",
)
CLOSE_JOBS_CLAIMED = Counter(
    "leaderboard_close_jobs_claimed_total",
    "Period close jobs claimed by a worker, by how they ended: archived, failed (retried later), deferred "
    "(a competing period's review buffer still runs), or lost "
    "(the claim ran out first).",
    ["result"],
)
ARCHIVE_ROWS = Counter(
    "leaderboard_archive_rows_total",
    "Standings rows written to the database by period archives.",
)
EVENTS_WRITTEN = Counter(
    "leaderboard_events_total",
    "Domain events written with their facts (core/outbox/), by type.",
    ["type"],
)
EVENT_DELIVERIES = Counter(
    "leaderboard_event_deliveries_total",
    "Handler calls of domain events, by result: delivered, or failed (called again after a backoff).",
    ["result"],
)

WEBHOOK_ATTEMPTS = Counter(
    "leaderboard_webhook_attempts_total",
    "Webhook requests by result: delivered (2xx), retry (to be sent again) or failed (for good).",
    ["result"],
)
WEBHOOK_ATTEMPT_SECONDS = Histogram(
    "leaderboard_webhook_attempt_duration_seconds",
    "One webhook request, from resolving its host to the receiver's answer (or the timeout).",
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)

REDIS_POOL_WAITS = Counter(
    "leaderboard_redis_pool_waits_total",
    "Redis commands that found every connection of their process's pool (REDIS_POOL_SIZE) in use and waited.",
)
REDIS_POOL_EXHAUSTED = Counter(
    "leaderboard_redis_pool_exhausted_total",
    "Waits for a pooled Redis connection that ran out (REDIS_TIMEOUT_SECS): answered 503, skipped or retried "
    "like an outage, but the process was saturated, not Redis down (not in leaderboard_backend_errors_total).",
)
BACKEND_ERRORS = Counter(
    "leaderboard_backend_errors_total",
    "Redis or database failures met while serving (each answered 503, skipped or retried).",
    ["backend"],
)


def game_labels(slug: str) -> dict[str, str]:
    """The ``game`` label where METRICS_GAME_LABELS allows it (an empty dict otherwise)."""
    return {"game": slug} if GAME_LABELS else {}
