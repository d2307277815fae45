"""Every periodic task, in one place."""

from __future__ import annotations

from django.conf import settings

# New players appear in admin within this many seconds of their first score.
PLAYER_SYNC_INTERVAL_SECS = 2.0
# API keys' last-used times are copied to the database this often.
API_KEY_LAST_USED_SYNC_SECS = 10.0

BEAT_SCHEDULE: dict[str, dict[str, object]] = {
    "sync-new-players": {
        "task": "games.tasks.sync_players",
        "schedule": PLAYER_SYNC_INTERVAL_SECS,
        "options": {"expires": PLAYER_SYNC_INTERVAL_SECS * 5},
    },
    "sync-api-key-last-used": {
        "task": "games.tasks.sync_api_key_last_used",
        "schedule": API_KEY_LAST_USED_SYNC_SECS,
        "options": {"expires": API_KEY_LAST_USED_SYNC_SECS * 3},
    },
    # Expired presence members leave (and are announced) within this interval.
    "prune-presence": {
        "task": "presence.tasks.prune_presence",
        "schedule": float(settings.PRESENCE_PRUNE_INTERVAL_SECS),
        "options": {"expires": settings.PRESENCE_PRUNE_INTERVAL_SECS * 3},
    },
}
