"""``GET /metrics``: Prometheus' text format, for a scraper with the token or on the allow-list.

It holds what every process recorded (core/metrics.py; added up over the node's
processes in multiprocess mode), the answering process's own CPU and memory, and the
product's state read from Redis at scrape time: players online and watching, the
ledger backlog against its cap, due and dead close jobs, the webhook queue. A state read that fails
(Redis down) leaves those series out and sets ``leaderboard_redis_up`` to 0; the
scrape itself still answers 200, so the outage is visible rather than a gap.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_safe
from prometheus_client import REGISTRY, CollectorRegistry, ProcessCollector, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from archive.services import BoardBacklog, board_backlogs
from core import config, metrics
from core.errors import UNAVAILABLE_ERRORS, report_unavailable
from presence.selectors import PresenceCount, presence_counts
from webhooks.selectors import QueueState, queue_state

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
REFUSED = (
    "Metrics are for Prometheus: send 'Authorization: Bearer <METRICS_TOKEN>', "
    "or scrape from an address in METRICS_ALLOWED_IPS.\n"
)


@dataclass
class State:
    """The product's state now, as read from Redis for one scrape."""

    redis_up: bool = True
    games: int = 0
    presence: list[PresenceCount] = field(default_factory=list)
    backlogs: list[BoardBacklog] = field(default_factory=list)
    webhooks: QueueState = field(default_factory=lambda: QueueState(0, 0, 0, 0.0))


class StateCollector(Collector):
    def __init__(self, state: State) -> None:
        self.state = state

    def collect(self) -> Iterator[Metric]:
        state = self.state
        up = GaugeMetricFamily("leaderboard_redis_up", "1 if this scrape could read the product's state from Redis.")
        up.add_metric([], 1 if state.redis_up else 0)
        yield up
        if not state.redis_up:
            return
        yield _gauge("leaderboard_games", "Active games.", state.games)
        yield from _per_game(
            "leaderboard_presence_online", "Players online now.", [(p.slug, p.online) for p in state.presence]
        )
        yield from _per_game(
            "leaderboard_presence_watching",
            "Open pages of viewers not listed as players, now.",
            [(p.slug, p.watching) for p in state.presence],
        )
        ledger = [b.ledger for b in state.backlogs]
        yield _gauge(
            "leaderboard_ledger_backlog", "Ledger entries not yet stored in the database, over all boards.", sum(ledger)
        )
        yield _gauge(
            "leaderboard_ledger_backlog_max",
            "The longest board ledger: at leaderboard_ledger_cap that board refuses submissions (503 ledger_full).",
            max(ledger, default=0),
        )
        yield _gauge(
            "leaderboard_ledger_cap", "LEDGER_STREAM_MAXLEN: a board ledger's cap.", settings.LEDGER_STREAM_MAXLEN
        )
        yield _gauge(
            "leaderboard_close_jobs_due",
            "Period close jobs due now and not claimed.",
            sum(b.due for b in state.backlogs),
        )
        yield _gauge(
            "leaderboard_close_jobs_dead",
            "Close jobs that failed every attempt (admin retries them).",
            sum(b.dead for b in state.backlogs),
        )
        yield from _webhook_gauges(state.webhooks)


def _webhook_gauges(queue: QueueState) -> Iterator[Metric]:
    yield _gauge(
        "leaderboard_webhook_deliveries_due",
        "Webhook deliveries due now and not sent yet (waiting for a run, or behind their endpoint's limit).",
        queue.due,
    )
    yield _gauge("leaderboard_webhook_deliveries_scheduled", "Webhook deliveries to be retried later.", queue.scheduled)
    yield _gauge("leaderboard_webhook_deliveries_in_flight", "Webhook requests under way.", queue.in_flight)
    yield _gauge(
        "leaderboard_webhook_oldest_due_age_seconds",
        "How long the oldest due webhook delivery has waited: runs not keeping up, or none running.",
        queue.oldest_due_age_secs,
    )


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, documentation)
    family.add_metric([], value)
    return family


def _per_game(name: str, documentation: str, values: Sequence[tuple[str, int]]) -> Iterator[Metric]:
    """A total, or one series per game where METRICS_GAME_LABELS allows it."""
    if not metrics.GAME_LABELS:
        yield _gauge(name, documentation, sum(value for _, value in values))
        return
    family = GaugeMetricFamily(name, documentation, labels=["game"])
    for slug, value in values:
        family.add_metric([slug], value)
    yield family


async def read_state() -> State:
    try:
        games = await config.list_games()
        return State(
            games=len(games),
            presence=await presence_counts(games=games),
            backlogs=await board_backlogs(games=games),
            webhooks=await queue_state(),
        )
    except UNAVAILABLE_ERRORS as error:
        report_unavailable(error, during="a /metrics scrape's state read")
        return State(redis_up=False)


@cache
def _networks() -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    return tuple(ipaddress.ip_network(item, strict=False) for item in settings.METRICS_ALLOWED_IPS)


def allowed(request: HttpRequest) -> bool:
    """The bearer token (when METRICS_TOKEN is set), or an address on the allow-list."""
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    if settings.METRICS_TOKEN and scheme.lower() == "bearer":
        return hmac.compare_digest(token.strip().encode(), settings.METRICS_TOKEN.encode())
    try:
        address = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:
        return False
    return any(address in network for network in _networks())


def registry_for(state: State) -> CollectorRegistry:
    registry = CollectorRegistry()
    if metrics.MULTIPROCESS_DIR:
        MultiProcessCollector(registry, path=metrics.MULTIPROCESS_DIR)
        # The answering process's CPU and memory (with several workers, whichever answered).
        ProcessCollector(registry=registry)
    else:
        registry.register(_ThisProcess())
    registry.register(StateCollector(state))
    return registry


class _ThisProcess(Collector):
    """One process (tests, a single worker without a metrics directory): its registry holds
    core/metrics.py's metrics and prometheus-client's process and platform collectors."""

    def collect(self) -> Iterator[Metric]:
        yield from REGISTRY.collect()


@require_safe
async def metrics_view(request: HttpRequest) -> HttpResponse:
    if not allowed(request):
        return HttpResponse(REFUSED, status=403, content_type="text/plain; charset=utf-8")
    state = await read_state()
    return HttpResponse(generate_latest(registry_for(state)), content_type=CONTENT_TYPE)
