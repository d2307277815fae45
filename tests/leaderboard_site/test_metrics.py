"""GET /metrics: who may scrape it, and that the product's metrics move with what happens.

Counters are process-wide (the suite's process), so tests compare before and after."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from core import apikeys
from tests.conftest import T0, auth
from tests.real_server import node_env, setup_node, start_web, stop_all

pytestmark = pytest.mark.django_db(transaction=True)

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(text: str) -> Samples:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def scrape(client: Client | None = None) -> Samples:
    response = (client or Client()).get("/metrics", REMOTE_ADDR="127.0.0.1")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    return parse(response.content.decode())


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def test_it_refuses_a_scraper_without_the_token_or_an_allowed_address(settings: Any) -> None:
    settings.METRICS_TOKEN = "s3cret-scrape-token"

    outside = Client().get("/metrics", REMOTE_ADDR="203.0.113.9")
    wrong = Client().get("/metrics", REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION="Bearer nope")
    right = Client().get("/metrics", REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION="Bearer s3cret-scrape-token")

    assert (outside.status_code, wrong.status_code, right.status_code) == (403, 403, 200)
    assert b"METRICS_TOKEN" in outside.content
    assert b"leaderboard_redis_up 1.0" in right.content


def test_it_lets_in_the_addresses_and_networks_of_the_allow_list(settings: Any) -> None:
    settings.METRICS_ALLOWED_IPS = ["10.1.0.0/16", "192.0.2.7"]
    from leaderboard_site import metrics as view

    view._networks.cache_clear()
    try:
        answers = [
            Client().get("/metrics", REMOTE_ADDR=a).status_code for a in ("10.1.200.3", "192.0.2.7", "127.0.0.1")
        ]
    finally:
        view._networks.cache_clear()

    assert answers == [200, 200, 403]


def test_it_counts_submissions_by_outcome_and_code_and_batch_sizes(make_game: Any) -> None:
    game = make_game("counted", mode="best")
    _, raw = apikeys.api_key_create(game=game, name="server")
    client = Client()
    before = scrape(client)

    for score in (5, 7):
        client.post(
            "/api/v1/games/counted/leaderboards/main/scores",
            {"player_id": "ada", "score": score},
            content_type="application/json",
            headers=auth(raw),
        )
    batch = {
        "scores": [
            {"leaderboard": "main", "player_id": "bob", "score": 3},
            {"leaderboard": "nope", "player_id": "c", "score": 1},
        ]
    }
    client.post("/api/v1/games/counted/scores/batch", batch, content_type="application/json", headers=auth(raw))
    after = scrape(client)

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta("leaderboard_submissions_total", outcome="accepted", code="ok") == 3
    assert delta("leaderboard_submissions_total", outcome="refused", code="board_not_found") == 1
    assert delta("leaderboard_batch_items_count") == 1 and delta("leaderboard_batch_items_sum") == 2
    assert delta("leaderboard_submit_script_seconds_count") == 3  # one round trip per request
    route = "api/v1/games/<game>/leaderboards/<board>/scores"
    assert delta("leaderboard_http_requests_total", method="POST", route=route, status="200") == 2


def test_it_reports_players_online_the_ledger_backlog_and_due_close_jobs(make_game: Any, clock: Any) -> None:
    game = make_game("stateful", mode="best", periods_kept=["daily", "all-time"])
    _, raw = apikeys.api_key_create(game=game, name="server")
    client = Client()
    client.post(
        "/api/v1/games/stateful/presence",
        {"online": ["ada", "bob", "cy"]},
        content_type="application/json",
        headers=auth(raw),
    )
    for player in ("ada", "bob"):
        client.post(
            "/api/v1/games/stateful/leaderboards/main/scores",
            {"player_id": player, "score": 10},
            content_type="application/json",
            headers=auth(raw),
        )

    now = scrape(client)
    clock.set(T0 + dt.timedelta(days=1))  # the day has ended: its close job is due
    tomorrow = scrape(client)

    assert value(now, "leaderboard_presence_online") == 3
    assert value(now, "leaderboard_ledger_backlog") == 2 == value(now, "leaderboard_ledger_backlog_max")
    assert value(now, "leaderboard_close_jobs_due") == 0
    assert value(tomorrow, "leaderboard_close_jobs_due") == 1
    assert value(tomorrow, "leaderboard_presence_online") == 0  # nobody beat since
    assert value(now, "leaderboard_close_jobs_dead") == 0


def test_it_says_redis_is_down_in_a_gauge_and_counts_the_failure(make_game: Any, redis_unreachable: str) -> None:
    make_game("dark")
    before = value(scrape(), "leaderboard_backend_errors_total", backend="redis")

    samples = scrape()

    assert value(samples, "leaderboard_redis_up") == 0
    assert ("leaderboard_ledger_backlog", frozenset()) not in samples
    assert value(samples, "leaderboard_backend_errors_total", backend="redis") == before + 1


@pytest.mark.wall_clock
def test_it_adds_up_every_worker_of_a_node(tmp_path: Path) -> None:
    metrics_dir = tmp_path / "metrics"
    metrics_dir.mkdir()
    node = setup_node(node_env(tmp_path, PROMETHEUS_MULTIPROC_DIR=str(metrics_dir)), "workers")
    try:
        url = start_web(node, workers=2)
        submissions = 40
        for score in range(submissions):  # a new connection each: both workers take some
            response = httpx.post(
                f"{url}/api/v1/games/workers/leaderboards/main/scores",
                json={"player_id": f"p{score}", "score": score},
                headers={**auth(node.raw_key), "Connection": "close"},
            )
            assert response.status_code == 200
        samples = parse(httpx.get(f"{url}/metrics").text)
    finally:
        stop_all(node)

    assert value(samples, "leaderboard_submissions_total", outcome="accepted", code="ok") == submissions
    assert len(list(metrics_dir.glob("counter_*.db"))) >= 2  # each worker wrote its own file


def _exported() -> tuple[set[str], set[str]]:
    """The metrics as documented (a counter with its _total) and every series name they export."""
    from prometheus_client import Counter, Histogram
    from prometheus_client.metrics import MetricWrapperBase

    from core import metrics as recorded
    from leaderboard_site.metrics import State, StateCollector

    documented = {f.name for f in StateCollector(State()).collect()}
    series = set(documented)
    for metric in vars(recorded).values():
        if not isinstance(metric, MetricWrapperBase):
            continue
        name = metric._name  # prometheus-client's own
        if isinstance(metric, Counter):
            documented.add(f"{name}_total")
            series.add(f"{name}_total")
        elif isinstance(metric, Histogram):
            documented.add(name)
            series |= {f"{name}_bucket", f"{name}_sum", f"{name}_count"}
        else:
            documented.add(name)
            series.add(name)
    return documented, series


def test_it_charts_and_documents_exactly_the_metrics_the_product_exports() -> None:
    import re

    from django.conf import settings

    docs = Path(settings.BASE_DIR) / "docs"
    charted = set(re.findall(r"\bleaderboard_[a-z_]+", (docs / "grafana" / "leaderboard.json").read_text()))
    described = set(re.findall(r"`(leaderboard_[a-z_]+)`", (docs / "operations.md").read_text()))
    documented, series = _exported()

    assert charted - series == set()
    assert described == documented


def test_it_keeps_the_http_labels_bounded_whatever_the_client_sends() -> None:
    before = scrape()
    Client().generic("BREW", "/api/v1/games")
    Client().get("/no/such/page/at/all/", REMOTE_ADDR="127.0.0.1")
    after = scrape()

    def others(samples: Samples) -> float:
        return sum(
            v
            for (name, labels), v in samples.items()
            if name == "leaderboard_http_requests_total" and ("method", "other") in labels
        )

    assert not [k for k in after if k[0] == "leaderboard_http_requests_total" and ("method", "BREW") in k[1]]
    assert others(after) - others(before) == 1
