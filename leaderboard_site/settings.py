"""Settings for development, tests and production.

Everything that differs between deployments comes from the environment through
the typed helpers in ``env.py``. With no REDIS_URL / DATABASE_URL the product
uses the embedded Redis that ``make run`` starts and SQLite under ``var/``.
"""

from __future__ import annotations

import os
import tempfile
import warnings
from pathlib import Path

import dj_database_url
import dj_email_url  # type: ignore[import-untyped]
from django.core.exceptions import ImproperlyConfigured

from core import logs

from .env import env_bool, env_choice, env_float, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("VAR_DIR", str(BASE_DIR / "var")))

# Production is the default: `make run` and `make test` set DEBUG=1 for themselves, and
# so does anyone running manage.py by hand on a development checkout (README).
DEBUG = env_bool("DEBUG", False)
SECRET_KEY = env_str("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY must be set in production. For development, set DEBUG=1 (make run and make test do)."
        )
    SECRET_KEY = "dev-only-insecure-key-do-not-use-in-production-0123456789abcdef"

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

# Browsers on these origins may read the public API (GET/HEAD, and their preflights):
# a WebGL build or a studio's site showing a board. Nothing by default; "*" for any
# origin. Writes never answer cross-origin (leaderboard_site/middleware.py), and no
# origin gets credentials: reads need none, writes take an API key, never a cookie.
_CORS_ORIGINS = env_list("CORS_ALLOWED_ORIGINS", [])
CORS_ALLOW_ALL_ORIGINS = "*" in _CORS_ORIGINS
CORS_ALLOWED_ORIGINS = [] if CORS_ALLOW_ALL_ORIGINS else _CORS_ORIGINS
CORS_URLS_REGEX = r"^/api/v1/"
CORS_ALLOW_METHODS = ("GET", "HEAD", "OPTIONS")
CORS_ALLOW_HEADERS = ("accept", "accept-language", "content-type", "x-request-id")
CORS_EXPOSE_HEADERS = ("X-Request-ID", "Retry-After")
CORS_ALLOW_CREDENTIALS = False
# A browser asks again after this long (its own cap is 2 h in Chromium).
CORS_PREFLIGHT_MAX_AGE = 3600

# /metrics (Prometheus): a scraper sends "Authorization: Bearer <METRICS_TOKEN>", or comes
# from an address in METRICS_ALLOWED_IPS (addresses or CIDR networks; loopback by default,
# so that `make run` can be scraped as it is). Anyone else gets 404.
METRICS_TOKEN = env_str("METRICS_TOKEN", "")
METRICS_ALLOWED_IPS = env_list("METRICS_ALLOWED_IPS", ["127.0.0.1/32", "::1/128"])
# A "game" label on per-game metrics: one series per game and code, so off by default.
METRICS_GAME_LABELS = env_bool("METRICS_GAME_LABELS", False)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "ninja",
    "corsheaders",
    # The house in layers (docs/architecture.md): each app imports only those above it here.
    "core",
    "presence",
    "accounts",
    "games",
    "competitions",
    "archive",
    "moderation",
    "webhooks",
    "live",
    "embed",
]

MIDDLEWARE = [
    # Request id, the access line and HTTP metrics: outermost, so that they see every answer.
    "leaderboard_site.middleware.request_context_middleware",
    "django.middleware.security.SecurityMiddleware",
    # Before anything that answers: the preflight and the CORS headers of public reads.
    "leaderboard_site.middleware.ReadOnlyCorsMiddleware",
    # Redis or the database unreachable in a view: 503 + Retry-After (a page, or JSON on /api/).
    "leaderboard_site.middleware.UnavailableMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Async pages read request.user in templates: load it the async way (accounts/middleware.py).
    "accounts.middleware.async_user_middleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "leaderboard_site.middleware.api_json_errors_middleware",
]

ROOT_URLCONF = "leaderboard_site.urls"
ASGI_APPLICATION = "leaderboard_site.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "live.context_processors.live_socket",
            ],
        },
    },
]

DATABASE_URL = env_str("DATABASE_URL", "")
# Seconds a PostgreSQL connect may take before it counts as the database being down.
DB_CONNECT_TIMEOUT_SECS = env_int("DB_CONNECT_TIMEOUT_SECS", 2, minimum=1)
# Seconds a PostgreSQL statement may run before the server cancels it; half a second later
# without an answer (a hung server cannot cancel anything), the process cuts the connection
# itself (core/postgresql/base.py). A hung database is then a 503 within this, not a hang. Set
# for the processes that serve requests (docker/entrypoint.sh and `make run` give the web and
# ws roles 2); 0, the default, bounds nothing: migrations, commands, Celery's tasks (the ledger
# drain, period archives) and the broadcaster may legitimately run long statements.
DB_STATEMENT_TIMEOUT_SECS = env_int("DB_STATEMENT_TIMEOUT_SECS", 0, minimum=0)
if DATABASE_URL:
    # No persistent connections: under ASGI, sync work runs on short-lived threads
    # whose connections would outlive them (Django's advice for ASGI deployments). The API's
    # handler checks them once a second rather than per request (asgi.py, DB_UPKEEP_SECS), so
    # there a connection is reused for up to about a second after it was opened.
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=0)}
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        DATABASES["default"]["ENGINE"] = "core.postgresql"  # Django's, with the bounds above
        _db_options = DATABASES["default"].setdefault("OPTIONS", {})
        # A database that does not answer a connect is an outage (503) within this, not a hang.
        _db_options.setdefault("connect_timeout", DB_CONNECT_TIMEOUT_SECS)
        _db_options["statement_timeout_secs"] = DB_STATEMENT_TIMEOUT_SECS  # the backend's own key
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(VAR_DIR / "db.sqlite3"),
            # A busy SQLite file (web, worker, beat tasks) waits instead of failing at once:
            # the busy timeout, IMMEDIATE transactions (a deferred one that reads then writes
            # fails at once with "database is locked" when another process writes), and WAL
            # so that readers never block the writer.
            "OPTIONS": {
                "timeout": 20,
                "transaction_mode": "IMMEDIATE",
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
            # Tests get a file too, not Django's default shared-cache memory database: threads
            # of one test (the live server, the broadcaster) share that cache, whose table
            # locks fail at once ("database table is locked") where a file's busy timeout waits.
            # One per test process, so that two suites run at once never share it.
            "TEST": {"NAME": str(Path(tempfile.gettempdir()) / f"lb-test-{os.getpid()}.sqlite3")},
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# The embedded Redis (see leaderboard_site/devenv.py) listens on this loopback port.
EMBEDDED_REDIS_PORT = env_int("EMBEDDED_REDIS_PORT", 6380, minimum=1)
REDIS_URL = env_str("REDIS_URL", f"redis://127.0.0.1:{EMBEDDED_REDIS_PORT}/0")
# REDIS_URL names any node of a Redis Cluster, which holds all product data (boards,
# presence, ledger, queues, limits): the client finds the other nodes. Every script's
# keys share one hash tag (core/keys.py), so each call stays on one slot.
REDIS_CLUSTER = env_bool("REDIS_CLUSTER", False)
# "replica": a submission is acknowledged only once a replica of its board's Redis holds
# it (Redis WAIT, at most SCORE_ACK_TIMEOUT_MS; then 503 and nothing claimed as stored),
# so losing a primary's data loses no acknowledged score. "primary" (the default) answers
# as soon as the primary applied it; AOF then bounds what a crash can lose (docs/scale.md).
SCORE_ACK = env_choice("SCORE_ACK", "primary", ("primary", "replica"))
# How long a submission waits for a replica under SCORE_ACK=replica: replication on a
# healthy link takes about a millisecond; this long means the replica is down or behind.
SCORE_ACK_TIMEOUT_MS = env_int("SCORE_ACK_TIMEOUT_MS", 500, minimum=1)
# A Redis command (and a wait for a free pooled connection) gives up after this many
# seconds: requests then answer 503 within about a second while Redis is down or hung,
# instead of holding every client. Every script the product runs takes milliseconds.
REDIS_TIMEOUT_SECS = env_float("REDIS_TIMEOUT_SECS", 1.0, minimum=0.05)
# Connections each process's pool holds at most (opened as needed): about the requests one
# worker holds at once. A request holds one connection for each of its round trips, which
# take well under a millisecond on an idle worker but as long as the process waits for a
# core on a busy machine; then requests past the pool wait, and a wait past
# REDIS_TIMEOUT_SECS is a 503 (counted as pool saturation, not as Redis down). Measured
# with 256 concurrent readers on one starved worker: 64 connections turned away 20% of
# reads, 128 turned away 11%, 256 none (docs/operations.md, "Sizing the Redis pool"). The
# live sockets need no share of it: their commands go in at most 4 shared pipelines.
REDIS_POOL_SIZE = env_int("REDIS_POOL_SIZE", 256, minimum=1)

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
# One date and time form in admin and pages (leaderboard_site/formats/en/formats.py).
FORMAT_MODULE_PATH = ["leaderboard_site.formats"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(BASE_DIR / "staticfiles")))
# In development whitenoise serves straight from the app and static/ folders, so
# no collectstatic is needed before `make run`.
WHITENOISE_USE_FINDERS = DEBUG
WHITENOISE_AUTOREFRESH = DEBUG
if DEBUG:
    warnings.filterwarnings("ignore", message="No directory at", module="whitenoise.base")
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "leaderboard_site.storage.StaticStorage"
        )
    },
}

# Bodies over 1 MiB are refused with 413 before they are parsed.
MAX_BODY_BYTES = 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = MAX_BODY_BYTES
# Seconds a request's whole body may take to arrive after its headers; then 408 body_timeout
# and the connection is closed (leaderboard_site/asgi.py). Without it a client that stalls or
# trickles its body holds a connection and a task for ever, and uvicorn has no such limit.
# 10 s carries the largest body taken (1 MiB) at 1 Mbit/s (8.4 s): game servers post from data
# centres, pages post forms of a few KB.
BODY_READ_TIMEOUT_SECS = env_float("BODY_READ_TIMEOUT_SECS", 10.0, minimum=0.1)

# --- Leaderboard tunables -------------------------------------------------
# How long a finished period's board stays in Redis once it is archived (reads of
# an archived period come from the database; this only keeps the Redis copy around
# for late reads and checks). Until it is archived a board has no expiry at all.
PERIOD_RETENTION_SECS = env_int("PERIOD_RETENTION_SECS", 8 * 24 * 3600, minimum=0)
# A period's close job runs this long after the period ends, so that submissions
# that were in flight at the boundary have landed before the board is archived.
ARCHIVE_GRACE_SECS = env_int("ARCHIVE_GRACE_SECS", 120, minimum=0)
# The ledger stream of each game holds at most this many entries not yet copied to the
# database (the drain trims what it stored). At the cap, submissions are refused with
# 503 ledger_full instead of being accepted and possibly lost: minutes of headroom at
# full ingest while the drain catches up (about 64 bytes per entry: ~64 MB at the cap).
LEDGER_STREAM_MAXLEN = env_int("LEDGER_STREAM_MAXLEN", 1_000_000, minimum=1000)
# A repeated Idempotency-Key within this window replays the stored response.
IDEMPOTENCY_TTL_SECS = env_int("IDEMPOTENCY_TTL_SECS", 24 * 3600, minimum=60)
# The capped list of recent submissions a game page shows.
RECENT_SUBMISSIONS_MAX = env_int("RECENT_SUBMISSIONS_MAX", 50, minimum=1)
# Public reads see a game's config change within this many seconds; writes see
# it at once (the rate-limit script returns the config version).
GAME_CONFIG_CACHE_SECS = env_int("GAME_CONFIG_CACHE_SECS", 5, minimum=0)
# Leaderboards a game may have (in play or not) unless its own max_boards says otherwise: each
# is config every process holds and reloads, and keys, archives and close jobs in the
# background; a tenant's boards must not cost the others (admin raises it per game).
MAX_BOARDS_PER_GAME = env_int("MAX_BOARDS_PER_GAME", 500, minimum=1)
# Delivered domain events (core/outbox/, docs/events.md) are kept this long, then pruned:
# long enough to look into a delivery in admin, and for a consumer to read back a week.
EVENT_RETENTION_SECS = env_int("EVENT_RETENTION_SECS", 7 * 24 * 3600, minimum=3600)

# --- Webhooks (webhooks/, docs/webhooks.md) ----------------------------------
# Endpoints may be plain http:// URLs, and may point at loopback, private, link-local or
# metadata addresses: both only for development and tests (DEBUG turns them on), never for a
# service whose own network a studio must not reach through us.
WEBHOOK_ALLOW_HTTP = env_bool("WEBHOOK_ALLOW_HTTP", DEBUG)
WEBHOOK_ALLOW_PRIVATE = env_bool("WEBHOOK_ALLOW_PRIVATE", DEBUG)
# One request's whole time (connect, send, answer): a slow studio server costs a worker no more.
WEBHOOK_TIMEOUT_SECS = env_float("WEBHOOK_TIMEOUT_SECS", 10.0, minimum=0.1)
# Requests in flight to one endpoint at once: a slow or hanging server holds at most this many
# of the workers' slots, and a server that answers in order receives events in order when 1.
WEBHOOK_ENDPOINT_CONCURRENCY = env_int("WEBHOOK_ENDPOINT_CONCURRENCY", 4, minimum=1)
# Deliveries (with their attempts) that finished this long ago are pruned: the studio's window
# to look into one or replay it.
WEBHOOK_RETENTION_SECS = env_int("WEBHOOK_RETENTION_SECS", 14 * 24 * 3600, minimum=3600)
# An endpoint that has failed every attempt for this long (and has not answered 2xx since) is
# disabled, with its reason: five days, past the whole retry schedule of about three.
WEBHOOK_DISABLE_AFTER_SECS = env_int("WEBHOOK_DISABLE_AFTER_SECS", 5 * 24 * 3600, minimum=60)

# --- Live updates (websockets) ----------------------------------------------
# Standalone Redis servers for the channel layer, sharded by channels_redis (a group's
# messages go through one of them). Pub/sub is no cluster data: with REDIS_CLUSTER they
# must be given.
CHANNEL_LAYER_URLS = env_list("CHANNEL_LAYER_URLS", [] if REDIS_CLUSTER else [REDIS_URL])
if not CHANNEL_LAYER_URLS:
    raise ImproperlyConfigured(
        "CHANNEL_LAYER_URLS must name one or more standalone Redis servers (comma-separated redis:// URLs) "
        "when REDIS_CLUSTER is on: the live channel layer does not run on a Redis Cluster."
    )
# One PUBLISH per group message, whatever the number of subscribers.
CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
        "CONFIG": {"hosts": CHANNEL_LAYER_URLS, "prefix": "live"},
    }
}
# Pages open their websockets on this port of the host that served them; 0: the same
# port as the page (one server, or a proxy that routes /ws/ to the websocket workers, as
# docs/deploy.md sets up). `make run` sets it to its websocket workers' port.
LIVE_SOCKET_PORT = env_int("LIVE_SOCKET_PORT", 0, minimum=0)
# The broadcaster sends at most one standings message per board per tick.
BROADCAST_TICK_MS = env_int("BROADCAST_TICK_MS", 200, minimum=10)
# Open websockets one client address (IPv4, or an IPv6 /64) may hold across all web
# nodes: enough for a household or an office watching a few games in a few tabs, and
# a cap on how far one client can inflate "watching" or hold server resources.
WS_SOCKETS_PER_ADDRESS = env_int("WS_SOCKETS_PER_ADDRESS", 30, minimum=1)
# Sockets of one process whose opening (session, accept, admission and presence in Redis)
# is under way at once; the others wait in its admission queue (live/sockets/admission.py),
# so that a connect storm is served in turns, with the event loop responsive, instead of
# every handshake at once timing out on Redis. The sockets' Redis commands are coalesced
# into shared pipelines, so this bounds CPU and memory in flight, not connections.
WS_ADMITTING_SOCKETS_MAX = env_int("WS_ADMITTING_SOCKETS_MAX", 128, minimum=1)
# Sockets of one process that may wait in its admission queue; the next one is closed with
# 1013 at once, counted and logged as load shedding. 5,000 holds a storm of every socket a
# worker serves (docs/deploy.md; under 100 KiB each, open or waiting).
WS_ADMISSION_QUEUE_SOCKETS = env_int("WS_ADMISSION_QUEUE_SOCKETS", 5000, minimum=0)

# --- Presence ----------------------------------------------------------------
# The beat task removes expired presence members (and announces those leaves) this
# often. Reads apply the timeout window themselves, so this only bounds memory and
# how late a silent player's leave is announced.
PRESENCE_PRUNE_INTERVAL_SECS = env_int("PRESENCE_PRUNE_INTERVAL_SECS", 10, minimum=1)

# --- Accounts ----------------------------------------------------------------
# Site users sign up and log in with Django auth (accounts/views.py) and link to
# their players with one-time codes the games show (accounts/services.py).
LOGIN_URL = "accounts:login"
# After logging in without a `next`, the account page shows the linked players.
LOGIN_REDIRECT_URL = "accounts:account"
LOGOUT_REDIRECT_URL = "live:home"
# A password-reset link works this long (Django's default is three days).
PASSWORD_RESET_TIMEOUT = 60 * 60

# --- E-mail --------------------------------------------------------------------
# Password resets go out by e-mail. EMAIL_URL names the server (smtp://user:password@host:587
# with STARTTLS, smtps://…:465, as dj-email-url reads it); unset, mails are printed on the
# console, which is what make run wants and what production must not have (check --deploy).
EMAIL_URL = env_str("EMAIL_URL", "")
EMAIL_BACKEND = "django.core.mail.backends.console.EmailBackend"
if EMAIL_URL:
    _email = dj_email_url.parse(EMAIL_URL)
    EMAIL_BACKEND = _email["EMAIL_BACKEND"]
    EMAIL_HOST, EMAIL_PORT = _email["EMAIL_HOST"], _email["EMAIL_PORT"]
    EMAIL_HOST_USER, EMAIL_HOST_PASSWORD = _email["EMAIL_HOST_USER"], _email["EMAIL_HOST_PASSWORD"]
    EMAIL_USE_TLS, EMAIL_USE_SSL = _email["EMAIL_USE_TLS"], _email["EMAIL_USE_SSL"]
    # A mail server that hangs must not hold a page: a reset request then answers an error.
    EMAIL_TIMEOUT = _email["EMAIL_TIMEOUT"] or 10
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "Leaderboard <leaderboard@localhost>")

# --- Celery ------------------------------------------------------------------
# Celery's broker: a standalone Redis (its queues are no cluster data). With REDIS_CLUSTER
# it must be given.
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "" if REDIS_CLUSTER else REDIS_URL)
if not CELERY_BROKER_URL:
    raise ImproperlyConfigured(
        "CELERY_BROKER_URL must name a standalone Redis (redis://host:port/db) when REDIS_CLUSTER is on: "
        "Celery's broker does not run on a Redis Cluster."
    )
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_IGNORE_RESULT = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
# Where the worker, beat and broadcaster leave their heartbeats (core/heartbeat.py).
HEARTBEAT_DIR = env_str("HEARTBEAT_DIR", str(VAR_DIR / "heartbeats"))

# --- Production hardening (active when DEBUG is off) -----------------------
if not DEBUG:
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    # Off only for a plain-HTTP trial behind a local proxy (docker-compose.yml): browsers
    # never send secure cookies over HTTP, so nobody could sign in.
    SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = env_bool("SECURE_COOKIES", True)
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000, minimum=0)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", True)
    SECURE_CONTENT_TYPE_NOSNIFF = True
    X_FRAME_OPTIONS = "DENY"
    # /healthz must answer plain HTTP probes from the container runtime.
    SECURE_REDIRECT_EXEMPT = [r"^healthz$"]

# JSON lines for log pipelines (the Docker image sets it), readable lines for a terminal.
LOG_FORMAT = env_choice("LOG_FORMAT", "console", logs.LOG_FORMATS)
LOGGING = logs.logging_config(log_format=LOG_FORMAT, level=env_str("LOG_LEVEL", "INFO").upper())
