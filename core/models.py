"""The tenant models: a game, its API keys and its players. Every feature app builds
on them. (They were created in the games app; the tables keep those names.)"""

from __future__ import annotations

import hashlib
import re
import secrets
from zoneinfo import available_timezones

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models

from .text import validate_multiline, validate_single_line

# Scores are exact in a Redis double only up to 2**53 - 1.
MAX_SAFE_SCORE = 2**53 - 1

# Player ids: 1-64 of A-Z a-z 0-9 _ . : -, and not only dots ("." and ".." would
# name other pages in a URL). Pydantic and the model validator use the pattern (no
# lookahead: pydantic's engine has none); Python code calls is_player_id (with
# re.match, "$" would also accept a trailing newline).
PLAYER_ID_MAX_CHARS = 64
PLAYER_ID_RE = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$"
PLAYER_ID_MESSAGE = "1-64 characters of A-Z a-z 0-9 _ . : - (not only dots)."
_PLAYER_ID = re.compile(PLAYER_ID_RE)


# An erased player's archived standings keep their rank under this name, and an id
# that starts with a character no player id has (so no page or lookup finds it).
ERASED_PLAYER_NAME = "deleted player"
ERASED_PLAYER_PREFIX = "~"


def is_player_id(value: object) -> bool:
    """The one check every entry point uses."""
    return isinstance(value, str) and len(value) <= PLAYER_ID_MAX_CHARS and _PLAYER_ID.fullmatch(value) is not None


def validate_player_id(value: str) -> None:
    if not is_player_id(value):
        raise ValidationError(PLAYER_ID_MESSAGE, code="invalid_player_id")


SLUG_MAX_CHARS = 50
SLUG_RE = r"^[a-z0-9](?:[a-z0-9-]{0,48}[a-z0-9])?$"

# Presence: a player is online while last seen within the game's timeout. Open pages
# heartbeat every 20 s at most (presence.services), so the floor keeps one missed beat
# from flapping a player offline; the ceiling keeps "online" meaning "now-ish".
DEFAULT_PRESENCE_TIMEOUT_SECS = 60
MIN_PRESENCE_TIMEOUT_SECS = 30
MAX_PRESENCE_TIMEOUT_SECS = 3600


# The period kinds a game may keep (games/periods.py does their arithmetic).
PERIOD_KINDS: tuple[str, ...] = ("daily", "weekly", "monthly", "all-time")
DEFAULT_PERIODS = PERIOD_KINDS


def _validate_periods(value: object) -> None:
    if not isinstance(value, list) or not value:
        raise ValidationError("Choose at least one period.")
    unknown = [p for p in value if p not in PERIOD_KINDS]
    if unknown:
        raise ValidationError(f"Unknown periods: {', '.join(map(str, unknown))}")
    if len(set(value)) != len(value):
        raise ValidationError("Each period may appear once.")


def _validate_timezone(value: str) -> None:
    if value not in available_timezones():
        raise ValidationError(f"{value!r} is not an IANA time zone name (e.g. Europe/Paris).")


def default_periods() -> list[str]:
    return list(PERIOD_KINDS)


class Game(models.Model):
    class Mode(models.TextChoices):
        INCREMENT = "increment", "increment (each submission adds)"
        BEST = "best", "best (keep each player's best)"
        LATEST = "latest", "latest (overwrite)"

    class Order(models.TextChoices):
        DESC = "desc", "higher is better"
        ASC = "asc", "lower is better"

    slug = models.CharField(
        max_length=SLUG_MAX_CHARS,
        unique=True,
        validators=[RegexValidator(SLUG_RE, "Lowercase letters, digits and inner hyphens only.")],
    )
    name = models.CharField(max_length=100, validators=[validate_single_line])
    description = models.TextField(blank=True, validators=[validate_multiline])
    order = models.CharField(max_length=4, choices=Order.choices, default=Order.DESC)
    mode = models.CharField(max_length=10, choices=Mode.choices, default=Mode.BEST)
    periods = models.JSONField(default=default_periods, validators=[_validate_periods])
    timezone = models.CharField(max_length=64, default="UTC", validators=[_validate_timezone])
    min_score = models.BigIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(-MAX_SAFE_SCORE), MaxValueValidator(MAX_SAFE_SCORE)],
        help_text="Smallest value one submission may carry (empty: no bound).",
    )
    max_score = models.BigIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(-MAX_SAFE_SCORE), MaxValueValidator(MAX_SAFE_SCORE)],
        help_text="Largest value one submission may carry (empty: no bound).",
    )
    max_submissions_per_minute = models.PositiveIntegerField(
        default=60,
        help_text="Per player, over a sliding minute; 0 means no limit.",
    )
    presence_timeout_secs = models.PositiveIntegerField(
        default=DEFAULT_PRESENCE_TIMEOUT_SECS,
        validators=[MinValueValidator(MIN_PRESENCE_TIMEOUT_SECS), MaxValueValidator(MAX_PRESENCE_TIMEOUT_SECS)],
        help_text="A player counts as online this many seconds after they were last seen.",
    )
    active = models.BooleanField(default=True, help_text="Inactive games refuse submissions and leave listings.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "games_game"
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.slug})"

    def clean(self) -> None:
        if self.min_score is not None and self.max_score is not None and self.min_score > self.max_score:
            raise ValidationError({"max_score": "Must not be below the minimum."})


class Player(models.Model):
    game = models.ForeignKey(Game, on_delete=models.CASCADE, related_name="players")
    player_id = models.CharField(max_length=PLAYER_ID_MAX_CHARS, validators=[validate_player_id])
    display_name = models.CharField(max_length=64, blank=True, validators=[validate_single_line])
    hidden = models.BooleanField(default=False, help_text="Hidden players vanish from every board and cannot submit.")
    first_seen_at = models.DateTimeField()

    class Meta:
        db_table = "games_player"
        ordering = ["game", "player_id"]
        constraints = [models.UniqueConstraint(fields=["game", "player_id"], name="unique_player_per_game")]

    def __str__(self) -> str:
        return f"{self.display_name or self.player_id} in {self.game.slug}"


KEY_PREFIX_LEN = 8
MAX_REQUESTS_PER_MINUTE = 10_000_000
# A batch carries at most this many scores (games/schemas.py), a presence report as many ids.
MAX_BATCH_ITEMS = 1000
# Items (scores, presence ids) one key may send per minute. A score sent with an
# Idempotency-Key leaves a record of about 300 bytes for IDEMPOTENCY_TTL_SECS: this
# budget bounds what one key can pin in Redis (about 18 MB a minute at the default),
# where a budget of requests alone let 1,000-item batches pin 1.9 GB a minute.
DEFAULT_ITEMS_PER_MINUTE = 60_000


def hash_secret(secret: str) -> str:
    # The secret is 32 random bytes, so a fast hash is enough: nothing to brute-force.
    return hashlib.sha256(secret.encode()).hexdigest()


class ApiKey(models.Model):
    game = models.ForeignKey(Game, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100, blank=True, validators=[validate_single_line])
    prefix = models.CharField(max_length=KEY_PREFIX_LEN, unique=True, editable=False)
    secret_hash = models.CharField(max_length=64, editable=False)
    requests_per_minute = models.PositiveIntegerField(
        default=6000,
        # Above this the GCRA step (60,000 ms / limit) drops below what a double resolves
        # at epoch-ms scale, and the limit would stop limiting.
        validators=[MinValueValidator(1), MaxValueValidator(MAX_REQUESTS_PER_MINUTE)],
    )
    items_per_minute = models.PositiveIntegerField(
        default=DEFAULT_ITEMS_PER_MINUTE,
        # At least one full batch, so that every request fits the budget.
        validators=[MinValueValidator(MAX_BATCH_ITEMS), MaxValueValidator(MAX_REQUESTS_PER_MINUTE)],
        help_text="Scores and presence reports (each item of a batch counts) per minute.",
    )
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "games_apikey"
        ordering = ["game", "-created_at"]
        verbose_name = "API key"

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.name or 'unnamed'})"

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None

    @staticmethod
    def generate() -> tuple[str, str, str]:
        """A new key: (full key shown once, visible prefix, stored hash)."""
        prefix = secrets.token_hex(KEY_PREFIX_LEN // 2)
        secret = secrets.token_urlsafe(32)
        return f"lbk_{prefix}_{secret}", prefix, hash_secret(secret)


class DeadLetter(models.Model):
    """An entry a background copy to the database could not store (the ledger drain, the
    player sync), set aside so that the entries behind it go on. Shown in admin: fix
    what made it fail (rename the player, say), then delete it."""

    class Source(models.TextChoices):
        LEDGER = "ledger", "score ledger"
        PLAYERS = "players", "player sync"

    game = models.ForeignKey(Game, on_delete=models.CASCADE, related_name="dead_letters")
    source = models.CharField(max_length=10, choices=Source.choices)
    # The stream entry id (ledger), or the player id (player sync).
    key = models.CharField(max_length=80)
    # What could not be stored, as JSON with every non-ASCII character escaped: the text
    # itself may hold what the database refused (a NUL), so it is never stored raw.
    payload = models.TextField()
    error = models.TextField()
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["game", "source", "-created_at"], name="dead_letter_recent")]

    def __str__(self) -> str:
        return f"{self.get_source_display()} {self.key} of {self.game.slug}"


# An audit entry's reason, as typed in admin or given to a command.
AUDIT_REASON_MAX_CHARS = 500


class AuditEntry(models.Model):
    """One moderation act: who did what to which player or game, when, and why.

    Written by the service that does the act, in its transaction (core/audit.py), and
    read-only in admin. It names the game by slug rather than by key, so that it
    outlives a deleted game; it never holds a player's name once they are erased.
    """

    class Action(models.TextChoices):
        HIDE = "hide", "hid a player"
        UNHIDE = "unhide", "unhid a player"
        RENAME = "rename", "renamed a player"
        CORRECT = "correct", "corrected a score"
        ERASE = "erase", "erased a player"
        DELETE_GAME = "delete_game", "deleted a game"

    at = models.DateTimeField()
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Who it was at the time (a username, or the command that ran): kept if the user goes.
    actor_name = models.CharField(max_length=150)
    action = models.CharField(max_length=20, choices=Action.choices)
    game_slug = models.CharField(max_length=SLUG_MAX_CHARS)
    player_id = models.CharField(max_length=PLAYER_ID_MAX_CHARS, blank=True)
    reason = models.CharField(max_length=AUDIT_REASON_MAX_CHARS, blank=True, validators=[validate_single_line])
    # What changed, as the act describes it: {"from": ..., "to": ...}, counts of what went.
    detail = models.JSONField(default=dict, blank=True)

    class Meta:
        db_table = "games_auditentry"
        ordering = ["-at", "-id"]
        verbose_name = "audit entry"
        verbose_name_plural = "audit trail"
        indexes = [
            models.Index(fields=["game_slug", "player_id", "-at"], name="audit_player"),
            models.Index(fields=["-at"], name="audit_recent"),
        ]

    def __str__(self) -> str:
        who = f" {self.player_id}" if self.player_id else ""
        return f"{self.actor_name} {self.get_action_display()}{who} in {self.game_slug}"
