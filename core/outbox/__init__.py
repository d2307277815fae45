"""Domain events with a transactional outbox: a fact another part may act on (a period
archived, a season ended, a board closed, a player erased, a score corrected, a game deleted,
a reward granted, claimed or expired, a player's tier changed)
is written as an ``Event`` row in the same transaction as the fact, then delivered at least
once to each handler that apps above core subscribed (``subscribe``, in their
``AppConfig.ready()``), each handler's delivery recorded so that it happens once.

- events.py: every event type and its payload, declared and checked;
- registry.py: who is told of which events;
- services.py: writing one (``event_emit``), inside the fact's transaction;
- delivery.py: delivering them (a Celery task on commit, and beat's sweep) and pruning.

docs/events.md describes the events, their guarantees and how to subscribe.
"""

from __future__ import annotations

from .delivery import DeliveryRun, envelope_of, outbox_deliver, outbox_prune, retry_delay_secs
from .events import (
    EVENTS,
    PERIOD_EVENT_TOP,
    BoardClosed,
    CorrectedStanding,
    EventData,
    EventEnvelope,
    FinalPeriod,
    GameDeleted,
    PeriodArchived,
    PeriodSettled,
    PlayerErased,
    RewardClaimed,
    RewardExpired,
    RewardGranted,
    ScoreCorrected,
    SeasonEnded,
    TierChanged,
    TopStanding,
    WebhookTest,
    envelope_check,
)
from .registry import Handler, Subscription, subscribe, subscriptions_for, unsubscribe
from .services import event_emit, events_emit

__all__ = [
    "EVENTS",
    "PERIOD_EVENT_TOP",
    "BoardClosed",
    "CorrectedStanding",
    "DeliveryRun",
    "EventData",
    "EventEnvelope",
    "FinalPeriod",
    "GameDeleted",
    "Handler",
    "PeriodArchived",
    "PeriodSettled",
    "PlayerErased",
    "RewardClaimed",
    "RewardExpired",
    "RewardGranted",
    "ScoreCorrected",
    "SeasonEnded",
    "Subscription",
    "TierChanged",
    "TopStanding",
    "WebhookTest",
    "envelope_check",
    "envelope_of",
    "event_emit",
    "events_emit",
    "outbox_deliver",
    "outbox_prune",
    "retry_delay_secs",
    "subscribe",
    "subscriptions_for",
    "unsubscribe",
]
