"""A game's webhook endpoints, each event's delivery to each of them, and every attempt at it.

The database is the truth of a delivery (pending, delivered or failed, and when it is due);
Redis only schedules it (webhooks/scripts.py), so a Redis lost or flushed is rebuilt from here
by the sweep (services/sweep.py)."""

from __future__ import annotations

from django.db import models

from core.models import EVENT_TYPE_MAX_CHARS, Game

URL_MAX_CHARS = 2000
DESCRIPTION_MAX_CHARS = 200
REASON_MAX_CHARS = 500
# The first characters of a receiver's answer kept per attempt: enough to read its error page.
RESPONSE_KEEP_CHARS = 1024


class Endpoint(models.Model):
    """Where a game's events go: a URL, the event types it wants ([] for all), and the secret
    that signs each request (and, during a rotation, the previous one until its grace ends)."""

    endpoint_id = models.CharField(max_length=40, unique=True, editable=False)
    game = models.ForeignKey(Game, on_delete=models.CASCADE, related_name="webhook_endpoints")
    url = models.CharField(max_length=URL_MAX_CHARS)
    description = models.CharField(max_length=DESCRIPTION_MAX_CHARS, blank=True)
    event_types = models.JSONField(default=list, blank=True, help_text="Event types it receives; empty: all.")
    enabled = models.BooleanField(default=True)
    disabled_reason = models.CharField(max_length=REASON_MAX_CHARS, blank=True)
    disabled_at = models.DateTimeField(null=True, blank=True)
    secret = models.CharField(max_length=100, editable=False)
    previous_secret = models.CharField(max_length=100, blank=True, editable=False)
    previous_secret_until = models.DateTimeField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    # Health: what admin and the API show, and what disables an endpoint failing for days.
    last_success_at = models.DateTimeField(null=True, blank=True)
    last_failure_at = models.DateTimeField(null=True, blank=True)
    failing_since = models.DateTimeField(null=True, blank=True, help_text="First failure since the last success.")
    failure_streak = models.PositiveIntegerField(default=0, help_text="Failed attempts since the last success.")
    last_error = models.CharField(max_length=REASON_MAX_CHARS, blank=True)

    class Meta:
        ordering = ["game_id", "id"]

    def __str__(self) -> str:
        return f"{self.endpoint_id} ({self.url})"


class Delivery(models.Model):
    """One event to one endpoint: pending until a 2xx (delivered), or failed for good (a final
    answer, the schedule run out, the endpoint disabled). A replay makes it pending again."""

    class Status(models.TextChoices):
        PENDING = "pending", "pending"
        DELIVERED = "delivered", "delivered"
        FAILED = "failed", "failed"

    delivery_id = models.CharField(max_length=40, unique=True, editable=False)
    endpoint = models.ForeignKey(Endpoint, on_delete=models.CASCADE, related_name="deliveries")
    event_id = models.CharField(max_length=40)
    event_type = models.CharField(max_length=EVENT_TYPE_MAX_CHARS)
    # The body, exactly as every attempt sends it (its event's envelope).
    payload = models.TextField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0, help_text="Attempts since it was created or last replayed.")
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=REASON_MAX_CHARS, blank=True)
    replays = models.PositiveIntegerField(default=0)

    class Meta:
        verbose_name_plural = "deliveries"
        ordering = ["-id"]
        constraints = [models.UniqueConstraint(fields=["endpoint", "event_id"], name="one_delivery_per_endpoint")]
        indexes = [
            # The sweep: pending deliveries by when they are due.
            models.Index(
                fields=["next_attempt_at", "id"],
                name="delivery_due",
                condition=models.Q(status="pending"),
            ),
            # The prune: finished ones by age.
            models.Index(
                fields=["finished_at"], name="delivery_finished", condition=models.Q(finished_at__isnull=False)
            ),
            # An endpoint's deliveries, newest first (API, admin, replay of failures since).
            models.Index(fields=["endpoint", "status", "id"], name="delivery_endpoint"),
        ]

    def __str__(self) -> str:
        return f"{self.event_type} {self.event_id} to {self.endpoint.endpoint_id}: {self.status}"


class Attempt(models.Model):
    """One request of a delivery and what came back (bounded: WEBHOOK_ATTEMPTS_KEPT per delivery)."""

    class Outcome(models.TextChoices):
        DELIVERED = "delivered", "delivered"
        RETRY = "retry", "failed, to retry"
        FAILED = "failed", "failed for good"

    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="attempt_set")
    number = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    duration_ms = models.PositiveIntegerField()
    url = models.CharField(max_length=URL_MAX_CHARS)
    address = models.CharField(max_length=64, blank=True, help_text="The checked address it connected to.")
    request_headers = models.JSONField(default=dict)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    response_body = models.TextField(blank=True)
    error = models.CharField(max_length=REASON_MAX_CHARS, blank=True)
    outcome = models.CharField(max_length=10, choices=Outcome.choices)

    class Meta:
        ordering = ["delivery_id", "id"]

    def __str__(self) -> str:
        return f"attempt {self.number}: {self.status_code or self.error[:40]}"
