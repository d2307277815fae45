"""Every periodic task, in one place."""

from __future__ import annotations

from django.conf import settings

# New players appear in admin within this many seconds of their first score.
PLAYER_SYNC_INTERVAL_SECS = 2.0
# API keys' last-used times are copied to the database this often.
API_KEY_LAST_USED_SYNC_SECS = 10.0
# The player sync visits only games marked as having new players; a mark lost with a process
# killed between a submission and its mark is found again within this long (one ZCARD a game).
PLAYERS_SWEEP_INTERVAL_SECS = 60.0
# Due period close jobs are claimed this often (the "every 5 s").
CLOSE_JOBS_INTERVAL_SECS = 5.0
# The background's safety net: each run looks at a bounded slice of the boards (and of the
# keyspace), so a round over 10,000 boards takes about 8 minutes (archive/services/catch_up.py).
WORK_SWEEP_INTERVAL_SECS = 10.0
# The ledger drain: at most this long between an accepted score and its database row.
LEDGER_DRAIN_INTERVAL_SECS = 5.0
# Domain events go out when their fact commits (a task queued then); this sweep delivers what
# that missed (the broker down, a worker killed) and retries failed handlers when due.
EVENTS_SWEEP_INTERVAL_SECS = 30.0
# A balanced period's entrants get their cohorts within this long of its split time (entry
# closing): players wait for their cohort a few seconds at most.
COHORTS_SPLIT_INTERVAL_SECS = 5.0
# Delivered events older than EVENT_RETENTION_SECS are pruned this often.
EVENTS_PRUNE_INTERVAL_SECS = 3600.0
# Rewards whose claim window passed are marked expired (with their reward.expired) within this
# long. Only the mark and its event wait for it: a claim is refused from expires_at on anyway.
GRANT_EXPIRE_INTERVAL_SECS = 60.0
# Webhook deliveries due (retries, catch-up) start within this long; new ones wake a run at once.
WEBHOOK_RUN_INTERVAL_SECS = 2.0
# Pending deliveries that Redis lost are queued again within this long; old finished ones pruned.
WEBHOOK_SWEEP_INTERVAL_SECS = 60.0

BEAT_SCHEDULE: dict[str, dict[str, object]] = {
    "sync-new-players": {
        "task": "games.tasks.sync_players",
        "schedule": PLAYER_SYNC_INTERVAL_SECS,
        "options": {"expires": PLAYER_SYNC_INTERVAL_SECS * 5},
    },
    "sweep-pending-players": {
        "task": "games.tasks.sweep_pending_players",
        "schedule": PLAYERS_SWEEP_INTERVAL_SECS,
        "options": {"expires": PLAYERS_SWEEP_INTERVAL_SECS},
    },
    "sync-api-key-last-used": {
        "task": "core.tasks.sync_api_key_last_used",
        "schedule": API_KEY_LAST_USED_SYNC_SECS,
        "options": {"expires": API_KEY_LAST_USED_SYNC_SECS * 3},
    },
    # Finished periods are archived within this long of their close job falling due.
    "run-close-jobs": {
        "task": "archive.tasks.run_close_jobs",
        "schedule": CLOSE_JOBS_INTERVAL_SECS,
        "options": {"expires": CLOSE_JOBS_INTERVAL_SECS * 3},
    },
    # A safety net: finished boards with no close job (say after a Redis restore) get one, and
    # work whose mark a crash lost is marked again.
    "sweep-background-work": {
        "task": "archive.tasks.sweep_work",
        "schedule": WORK_SWEEP_INTERVAL_SECS,
        "options": {"expires": WORK_SWEEP_INTERVAL_SECS * 3},
    },
    # Every applied score reaches the ScoreEvent table within about this long.
    "drain-ledger": {
        "task": "archive.tasks.drain_ledger",
        "schedule": LEDGER_DRAIN_INTERVAL_SECS,
        "options": {"expires": LEDGER_DRAIN_INTERVAL_SECS * 3},
    },
    "split-cohorts": {
        "task": "competitions.tasks.split_cohorts",
        "schedule": COHORTS_SPLIT_INTERVAL_SECS,
        "options": {"expires": COHORTS_SPLIT_INTERVAL_SECS * 3},
    },
    "deliver-events": {
        "task": "core.tasks.deliver_events",
        "schedule": EVENTS_SWEEP_INTERVAL_SECS,
        "options": {"expires": EVENTS_SWEEP_INTERVAL_SECS},
    },
    "prune-events": {
        "task": "core.tasks.prune_events",
        "schedule": EVENTS_PRUNE_INTERVAL_SECS,
        "options": {"expires": EVENTS_PRUNE_INTERVAL_SECS},
    },
    "expire-reward-grants": {
        "task": "competitions.tasks.expire_grants",
        "schedule": GRANT_EXPIRE_INTERVAL_SECS,
        "options": {"expires": GRANT_EXPIRE_INTERVAL_SECS},
    },
    "deliver-webhooks": {
        "task": "webhooks.tasks.deliver_webhooks",
        "schedule": WEBHOOK_RUN_INTERVAL_SECS,
        "options": {"expires": WEBHOOK_RUN_INTERVAL_SECS * 2},
    },
    "sweep-webhooks": {
        "task": "webhooks.tasks.sweep_webhooks",
        "schedule": WEBHOOK_SWEEP_INTERVAL_SECS,
        "options": {"expires": WEBHOOK_SWEEP_INTERVAL_SECS},
    },
    # Expired presence members leave (and are announced) within this interval.
    "prune-presence": {
        "task": "presence.tasks.prune_presence",
        "schedule": float(settings.PRESENCE_PRUNE_INTERVAL_SECS),
        "options": {"expires": settings.PRESENCE_PRUNE_INTERVAL_SECS * 3},
    },
}
