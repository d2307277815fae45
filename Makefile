# Two commands on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
# Development settings for everything make runs (production is the settings' default).
export DEBUG ?= 1
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test test-cluster test-api test-time client-types install lint bench bench-fanout bench-presence bench-archive bench-exports bench-broadcaster bench-cluster clean

$(STAMP): requirements.txt requirements-dev.txt constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt -c constraints.txt
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(PY) -m leaderboard_site.devenv run

test: $(STAMP)
	$(PY) -m leaderboard_site.devenv test $(ARGS)

# The whole suite on a Redis Cluster (3 masters, 3 replicas) started on loopback.
test-cluster: $(STAMP)
	$(PY) -m leaderboard_site.devenv test-cluster $(ARGS)

# The API against its OpenAPI schema: schemathesis drives a real server (tests/contract/).
test-api: $(STAMP)
	$(PY) -m leaderboard_site.devenv test -m contract tests/contract $(ARGS)

# Every process (web, websockets, broadcaster, Celery worker and beat) across period boundaries,
# a season's start and end and a board's DELETE, on a clock the tests move (tests/time/; needs
# Debian's faketime package).
test-time: $(STAMP)
	$(PY) -m leaderboard_site.devenv test -m time tests/time $(ARGS)

# After an API change: the TypeScript client's copy of the schema and the types generated from
# it (tests/clients/ fails until they are current).
client-types: $(STAMP)
	DEBUG=1 $(PY) manage.py export_openapi_schema --api leaderboard_site.api.api --indent 2 \
	  --output clients/typescript/openapi.json
	cd clients/typescript && npm ci --no-audit --no-fund && npm run generate

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

bench: $(STAMP)
	$(PY) bench/ingest.py

bench-fanout: $(STAMP)
	$(PY) bench/fanout.py

# Live views below the top: 1,000 watchers on the top page, then spread over 1, 10, 100 and
# 1,000 deep pages of a 100,000-player board; deep reads/s, CPU, latency (bench/deep_views.py,
# docs/benchmarks.md).
.PHONY: bench-deep
bench-deep: $(STAMP)
	$(PY) bench/deep_views.py

bench-presence: $(STAMP)
	$(PY) bench/presence.py

bench-archive: $(STAMP)
	$(PY) bench/archive.py

# A period of 1,000,000 players exported (CSV, JSON Lines) from Redis and from its archive through
# the real server, beside the same rows read without it (bench/exports.py, docs/benchmarks.md#exports).
bench-exports: $(STAMP)
	$(PY) bench/exports.py

bench-broadcaster: $(STAMP)
	$(PY) bench/broadcaster.py

# The broadcaster while 1,000 boards are created by API one after another (bench/board_churn.py).
.PHONY: bench-board-churn
bench-board-churn: $(STAMP)
	$(PY) bench/board_churn.py

# What idle boards cost the background (Celery worker and beat, the broadcaster, live latency):
# 10 active boards alone, then beside 10,000 idle ones (bench/idle.py, docs/benchmarks.md).
.PHONY: bench-idle
bench-idle: $(STAMP)
	$(PY) bench/idle.py

bench-cluster: $(STAMP)
	$(PY) bench/cluster.py

# 3,000 websockets opening at once on one websocket worker, beside its floor, the API beside
# a storm and the Redis pool per size (bench/storm.py, docs/benchmarks.md).
.PHONY: bench-storm
bench-storm: $(STAMP)
	$(PY) bench/storm.py

# Issue 22's competitions: 100,000 joins through the API (first come and balanced) beside the join
# script pipelined into Redis, and a league week of 100,000 entrants settled on PostgreSQL beside a
# plain COPY (bench/competitions.py, docs/benchmarks.md).
.PHONY: bench-competitions
bench-competitions: $(STAMP)
	$(PY) bench/competitions.py

# Issue 23's webhooks: events written in the outbox, enqueued and delivered to a local receiver beside
# a bare httpx client posting the same bodies, then with one endpoint hanging past the timeout
# (bench/webhooks.py, docs/benchmarks.md).
.PHONY: bench-webhooks
bench-webhooks: $(STAMP)
	$(PY) bench/webhooks.py

# Issue 21's review attacks (spoofed addresses, a tenant's boards, reloads, crons, bodies, logs, a
# database outage) re-run against make run's processes, nginx in front (bench/attacks.py,
# docs/operations.md).
.PHONY: bench-attacks
bench-attacks: $(STAMP)
	$(PY) bench/attacks.py

clean:
	rm -rf $(VENV) var staticfiles
