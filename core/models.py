"""The tenant models: a game, its API keys and its players. Every feature app builds
on them. (They were created in the games app; the tables keep those names.)"""

from __future__ import annotations

import functools
import hashlib
import re
import secrets
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models

from . import board_rules, branding, competition_rules
from .text import validate_multiline, validate_single_line

# Scores are exact in a Redis double only up to 2**53 - 1.
MAX_SAFE_SCORE = 2**board_rules.DOUBLE_EXACT_BITS - 1

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


def erased_player_id() -> str:
    """A stand-in id for an erased player's row: never a valid player id, and unique within
    its period (a player has one row per period)."""
    return ERASED_PLAYER_PREFIX + secrets.token_hex(6)


def is_player_id(value: object) -> bool:
    """The one check every entry point uses."""
    return isinstance(value, str) and len(value) <= PLAYER_ID_MAX_CHARS and _PLAYER_ID.fullmatch(value) is not None


def validate_player_id(value: str) -> None:
    if not is_player_id(value):
        raise ValidationError(PLAYER_ID_MESSAGE, code="invalid_player_id")


SLUG_MAX_CHARS = 50
SLUG_RE = r"^[a-z0-9](?:[a-z0-9-]{0,48}[a-z0-9])?$"
SLUG_MESSAGE = "Lowercase letters, digits and inner hyphens only."

# Presence: a player is online while last seen within the game's timeout. Open pages
# heartbeat every 20 s at most (presence.services), so the floor keeps one missed beat
# from flapping a player offline; the ceiling keeps "online" meaning "now-ish".
DEFAULT_PRESENCE_TIMEOUT_SECS = 60
MIN_PRESENCE_TIMEOUT_SECS = 30
MAX_PRESENCE_TIMEOUT_SECS = 3600


# The windows a board had before custom windows existed. Migrations 0001 of core and
# games name the default and the validator below, so they stay.
PERIOD_KINDS: tuple[str, ...] = ("daily", "weekly", "monthly", "all-time")


def _validate_periods(value: object) -> None:
    _validate_windows(value)


def default_periods() -> list[str]:
    return list(PERIOD_KINDS)


def _validate_windows(value: object) -> None:
    # The cron and the season are checked with the whole board (Leaderboard.clean).
    try:
        board_rules.window_names_check(value)
    except board_rules.RuleError as exc:
        raise ValidationError(str(exc)) from None


@functools.cache
def _zone_names() -> frozenset[str]:
    # available_timezones() lists the tz database's directory on each call (~4 ms); the zones a
    # process can load don't change while it runs.
    return frozenset(available_timezones())


def _validate_timezone(value: str) -> None:
    if value not in _zone_names():
        raise ValidationError(f"{value!r} is not an IANA time zone name (e.g. Europe/Paris).")


def _validate_format(value: str) -> None:
    try:
        board_rules.format_check(value)
    except board_rules.RuleError as exc:
        raise ValidationError(str(exc)) from None


def _validate_cron(value: str) -> None:
    try:
        board_rules.cron_check(value)
    except board_rules.RuleError as exc:
        raise ValidationError(str(exc)) from None


_SCORE_BOUND = [MinValueValidator(-MAX_SAFE_SCORE), MaxValueValidator(MAX_SAFE_SCORE)]

# The settings of a competing board (issue 22) a board has so far: competition_rules reads the
# others (cohorts, tiers, rewards...) as their DEFAULTS until boards have them too.
COMPETITION_FIELDS: tuple[str, ...] = (
    "competition_window",
    "entry",
    "max_entrants",
    "entry_window_secs",
    "max_attempts",
    "cohort_size",
    "cohort_fill",
    "cohort_by",
    "tiers",
    "start_tier",
    "min_scores",
    "rewards",
    "claim_window_secs",
    "settle_delay_secs",
)
# The column's range on PostgreSQL (a PositiveIntegerField): 68 years, past any period but a
# season's, whose entry then closes with it anyway.
ENTRY_WINDOW_MAX_SECS = 2**31 - 1


class Game(models.Model):
    """The tenant: its players, API keys, presence and leaderboards."""

    slug = models.CharField(
        max_length=SLUG_MAX_CHARS,
        unique=True,
        validators=[RegexValidator(SLUG_RE, SLUG_MESSAGE)],
    )
    name = models.CharField(max_length=100, validators=[validate_single_line])
    description = models.TextField(blank=True, validators=[validate_multiline])
    timezone = models.CharField(
        max_length=64,
        default="UTC",
        validators=[_validate_timezone],
        help_text="Where the boards' days, weeks and months start, unless a board says otherwise.",
    )
    max_submissions_per_minute = models.PositiveIntegerField(
        default=60,
        help_text="Per player and board, over a sliding minute; 0 means no limit.",
    )
    max_boards = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Leaderboards this game may have (taken out of play or not); empty: MAX_BOARDS_PER_GAME.",
    )
    presence_timeout_secs = models.PositiveIntegerField(
        default=DEFAULT_PRESENCE_TIMEOUT_SECS,
        validators=[MinValueValidator(MIN_PRESENCE_TIMEOUT_SECS), MaxValueValidator(MAX_PRESENCE_TIMEOUT_SECS)],
        help_text="A player counts as online this many seconds after they were last seen.",
    )
    active = models.BooleanField(default=True, help_text="Inactive games refuse submissions and leave listings.")
    # Branding and embedding (core/branding.py, docs/embed.md).
    short_name = models.CharField(
        max_length=branding.SHORT_NAME_MAX_CHARS,
        blank=True,
        validators=[validate_single_line],
        help_text="Shown where the name does not fit: phone headers and the embedded widget. Empty: the name.",
    )
    accent = models.CharField(
        max_length=7,
        blank=True,
        validators=[branding.accent_check],
        help_text="The game's colour on its pages and widget, as #1f6feb. Empty: the site's own.",
    )
    # The logo's bytes live in the row (at most branding.LOGO_MAX_BYTES): every web node serves
    # it without shared file storage. Never loaded with the game's config (deferred).
    logo = models.BinaryField(null=True, blank=True, editable=False)
    logo_type = models.CharField(max_length=20, blank=True, editable=False)
    logo_version = models.CharField(max_length=16, blank=True, editable=False)
    embed_origins = models.JSONField(
        default=list,
        blank=True,
        validators=[branding.validate_origins],
        help_text="Other websites that may show this game's boards live (widget and iframe), one origin "
        "each, such as https://studio.example.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "games_game"
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.slug})"


class Leaderboard(models.Model):
    """One board of a game: how it ranks, over which windows, and how it shows scores."""

    class Mode(models.TextChoices):
        INCREMENT = "increment", "increment (each submission adds)"
        BEST = "best", "best (keep each player's best)"
        LATEST = "latest", "latest (overwrite)"

    class Order(models.TextChoices):
        DESC = "desc", "higher is better"
        ASC = "asc", "lower is better"

    class Ties(models.TextChoices):
        SHARED = "shared", "shared (equal scores share a rank)"
        EARLIEST = "earliest", "earliest (who reached it first ranks higher)"
        SUBSCORE = "subscore", "subscore (equal scores by subscore, then who reached it first)"

    class Entry(models.TextChoices):
        OPEN = competition_rules.OPEN, "open (a first score enters)"
        JOIN = competition_rules.JOIN, "join (a player joins first)"

    class CohortFill(models.TextChoices):
        FIRST_COME = competition_rules.FIRST_COME, "first come (in the order they enter)"
        BALANCED = competition_rules.BALANCED, "balanced (split evenly once entry closes)"

    # Tiers come with leagues; until then a board's cohorts are by nothing or by rating.
    class CohortBy(models.TextChoices):
        NONE = competition_rules.BY_NONE, "none"
        RATING = competition_rules.BY_RATING, "rating (bands of the rating given at join)"
        TIER = competition_rules.BY_TIER, "tier (a league: cohorts within each tier)"

    game = models.ForeignKey(Game, on_delete=models.CASCADE, related_name="leaderboards")
    slug = models.CharField(max_length=SLUG_MAX_CHARS, validators=[RegexValidator(SLUG_RE, SLUG_MESSAGE)])
    name = models.CharField(max_length=100, validators=[validate_single_line])
    description = models.TextField(blank=True, validators=[validate_multiline])
    mode = models.CharField(max_length=10, choices=Mode.choices, default=Mode.BEST)
    order = models.CharField(max_length=4, choices=Order.choices, default=Order.DESC)
    windows = models.JSONField(default=default_periods, validators=[_validate_windows])
    window_labels = models.JSONField(
        default=dict,
        blank=True,
        help_text='What pages call a window, e.g. {"custom": "Race week"}; a window without one is '
        "Daily, Weekly, Monthly, All-time or Custom.",
    )
    cron = models.CharField(
        max_length=100,
        blank=True,
        validators=[_validate_cron],
        help_text="When the custom window resets, as a 5-field cron expression (e.g. 0 18 * * FRI).",
    )
    timezone = models.CharField(
        max_length=64, blank=True, validators=[_validate_timezone], help_text="Empty: the game's time zone."
    )
    starts_at = models.DateTimeField(null=True, blank=True, help_text="Season start: no scores before it.")
    ends_at = models.DateTimeField(null=True, blank=True, help_text="Season end: no scores from then on.")
    ties = models.CharField(max_length=10, choices=Ties.choices, default=Ties.SHARED)
    subscore_order = models.CharField(
        max_length=4,
        choices=Order.choices,
        default=Order.DESC,
        help_text="With ties 'subscore': whether a higher or a lower subscore ranks first among equal scores.",
    )
    format = models.CharField(
        max_length=20, default=board_rules.INTEGER, validators=[_validate_format], help_text=board_rules.FORMAT_HELP
    )
    min_score = models.BigIntegerField(
        null=True, blank=True, validators=_SCORE_BOUND, help_text="Smallest value one submission may carry."
    )
    max_score = models.BigIntegerField(
        null=True, blank=True, validators=_SCORE_BOUND, help_text="Largest value one submission may carry."
    )
    # A competing board (issue 22; core/competition_rules.py): which window competes, and who may
    # enter its periods and how often they may play. All unset: a board like any.
    competition_window = models.CharField(
        max_length=10,
        blank=True,
        choices=[(w, w) for w in competition_rules.COMPETING_WINDOWS],
        help_text="The window that competes; empty: none, or the board's only window when another "
        "competition setting is set (all-time only in a season).",
    )
    entry = models.CharField(
        max_length=10,
        choices=Entry.choices,
        default=Entry.OPEN,
        help_text="How a player enters a period of the competing window.",
    )
    max_entrants = models.PositiveIntegerField(
        null=True, blank=True, help_text="Players a period of the competing window takes at most; empty: any number."
    )
    entry_window_secs = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MaxValueValidator(ENTRY_WINDOW_MAX_SECS)],
        help_text="Players enter only during the first this many seconds of each period; empty: all along.",
    )
    max_attempts = models.PositiveIntegerField(
        null=True, blank=True, help_text="Scores a period accepts from each player at most; empty: any number."
    )
    cohort_size = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Entrants race in cohorts of at most this many (2 to 1,000); empty: one race for all.",
    )
    cohort_fill = models.CharField(
        max_length=10,
        choices=CohortFill.choices,
        default=CohortFill.FIRST_COME,
        help_text="How entrants are placed in cohorts.",
    )
    cohort_by = models.CharField(
        max_length=10,
        choices=CohortBy.choices,
        default=CohortBy.NONE,
        help_text="What a cohort's entrants have in common.",
    )
    tiers = models.JSONField(
        default=list,
        blank=True,
        help_text='A league\'s tiers, bottom first: [{"slug": "bronze", "name": "Bronze", "promote": "5"}, '
        '{"slug": "silver", "promote": "20%", "demote": "5"}, ...]; empty: no league.',
    )
    start_tier = models.CharField(
        max_length=32, blank=True, help_text="The tier a new player starts in; empty: the bottom one."
    )
    min_scores = models.PositiveIntegerField(
        default=0, help_text="Scores a player needs in a period to keep their tier (idle players drop one)."
    )
    rewards = models.JSONField(
        default=list,
        blank=True,
        help_text='The reward table, first match wins: [{"from_rank": 1, "to_rank": 3, "reward": {"coins": 500}}, '
        '{"tier": "gold", "top_percent": 10, "reward": {...}}]; ranks within the cohort.',
    )
    claim_window_secs = models.PositiveIntegerField(
        default=competition_rules.CLAIM_WINDOW_DEFAULT_SECS,
        validators=[
            MinValueValidator(competition_rules.CLAIM_WINDOW_MIN_SECS),
            MaxValueValidator(competition_rules.CLAIM_WINDOW_MAX_SECS),
        ],
        help_text="How long a grant waits to be claimed before it expires.",
    )
    settle_delay_secs = models.PositiveIntegerField(
        default=0,
        validators=[MaxValueValidator(competition_rules.SETTLE_DELAY_MAX_SECS)],
        help_text="A review buffer between a period's end and its settlement (moderation in it counts).",
    )
    active = models.BooleanField(default=True, help_text="Inactive boards refuse scores; their archives stay.")
    # A board taken out of play and brought back within one period starts a new generation of
    # that period (games/periods.py): its scores from then on never join the archive made when it
    # closed. Only the last closing and reopening are kept: they decide the current periods.
    closed_at = models.DateTimeField(
        null=True, blank=True, editable=False, help_text="When it was last taken out of play."
    )
    reopened_at = models.DateTimeField(
        null=True, blank=True, editable=False, help_text="When it was last brought back into play."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "games_leaderboard"
        # In the order they were made: a game's tracks 1 to 10 stay in that order.
        ordering = ["game", "id"]
        constraints = [models.UniqueConstraint(fields=["game", "slug"], name="unique_board_per_game")]

    def __str__(self) -> str:
        return f"{self.name} ({self.game.slug}/{self.slug})" if self.game_id else self.name

    @property
    def zone_name(self) -> str:
        return self.timezone or self.game.timezone

    def _game_or_none(self) -> Game | None:
        # A board made inline with a new game has that (unsaved) game but no game_id yet.
        try:
            return self.game
        except Game.DoesNotExist:
            return None

    def clean(self) -> None:
        errors: dict[str, str] = {}
        if self.min_score is not None and self.max_score is not None and self.min_score > self.max_score:
            errors["max_score"] = "Must not be below the minimum."
        if not errors and (self.timezone or self._game_or_none() is not None):
            errors.update(self._schedule_errors())
        if not errors:
            errors.update(self._competition_errors())
        if not errors:
            try:
                board_rules.window_labels_check(self.window_labels, self.windows)
            except board_rules.RuleError as exc:
                errors[exc.field] = str(exc)
        if errors:
            raise ValidationError(errors)

    def competition(self) -> competition_rules.Competition | None:
        """The board's competition (None: it does not compete); RuleError if its settings don't hold
        together. Only the settings a board has so far are read: the others take their defaults."""
        return competition_rules.competition_parse(
            {name: getattr(self, name) for name in COMPETITION_FIELDS},
            windows=self.windows,
            has_season=self.starts_at is not None and self.ends_at is not None,
        )

    def _competition_errors(self) -> dict[str, str]:
        try:
            board_rules.window_names_check(self.windows)
        except board_rules.RuleError:
            return {}  # the windows field reports it
        try:
            self.competition()
        except board_rules.RuleError as exc:
            # A nested setting ('tiers[1].promote') is reported on its field, naming the path.
            field = re.split(r"[.\[]", exc.field, maxsplit=1)[0]
            return {field: str(exc) if field == exc.field else f"{exc.field}: {exc}"}
        return {}

    def _schedule_errors(self) -> dict[str, str]:
        try:
            tz = ZoneInfo(self.zone_name)
        except (ZoneInfoNotFoundError, ValueError):
            return {}  # the time zone field reports it
        try:
            board_rules.windows_check(
                self.windows, cron=self.cron, tz=tz, starts_at=self.starts_at, ends_at=self.ends_at
            )
        except board_rules.RuleError as exc:
            return {exc.field: str(exc)}
        return {}


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
    class Scope(models.TextChoices):
        SUBMIT = "submit", "submit (scores, presence, link codes)"
        MANAGE = "manage", "manage (create and change leaderboards; may also submit)"

    game = models.ForeignKey(Game, on_delete=models.CASCADE, related_name="api_keys")
    scope = models.CharField(max_length=10, choices=Scope.choices, default=Scope.SUBMIT)
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
        CHANGE_GAME = "change_game", "changed a game's settings"
        CREATE_BOARD = "create_board", "created a leaderboard"
        CHANGE_BOARD = "change_board", "changed a leaderboard's settings"
        CLOSE_BOARD = "close_board", "took a leaderboard out of play"
        END_COMPETITION = "end_competition", "ended a season's competition now"
        WEBHOOK_CREATE = "webhook_create", "registered a webhook endpoint"
        WEBHOOK_UPDATE = "webhook_update", "changed a webhook endpoint"
        WEBHOOK_DELETE = "webhook_delete", "deleted a webhook endpoint"
        WEBHOOK_ROTATE = "webhook_rotate", "rotated a webhook endpoint's secret"
        WEBHOOK_TEST = "webhook_test", "sent a webhook test event"
        WEBHOOK_REPLAY = "webhook_replay", "replayed webhook deliveries"
        DELETE_ACCOUNT = "delete_account", "deleted their site account"

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
        verbose_name_plural = "audit entries"  # "2 audit entries" in its list (was "2 audit trail")
        indexes = [
            models.Index(fields=["game_slug", "player_id", "-at"], name="audit_player"),
            models.Index(fields=["-at"], name="audit_recent"),
        ]

    def __str__(self) -> str:
        who = f" {self.player_id}" if self.player_id else ""
        return f"{self.actor_name} {self.get_action_display()}{who} in {self.game_slug}"


# An event's type and its owner's name, as core/outbox/events.py declares them (`period.archived`).
EVENT_TYPE_MAX_CHARS = 64
EVENT_HANDLER_MAX_CHARS = 100


class Event(models.Model):
    """A domain event: a fact another part of the product (or a studio's webhook) may act on,
    written in the same transaction as the fact (a transactional outbox) and delivered at least
    once to every handler subscribed to its type (core/outbox/, docs/events.md).

    Names its game by slug, as the audit trail does, so that it outlives a deleted game."""

    # The public id: the same on every delivery and retry (a handler's key to do its work once).
    event_id = models.CharField(max_length=40, unique=True, editable=False)
    type = models.CharField(max_length=EVENT_TYPE_MAX_CHARS)
    version = models.PositiveSmallIntegerField()
    game_slug = models.CharField(max_length=SLUG_MAX_CHARS, blank=True)
    data = models.JSONField()
    created_at = models.DateTimeField()
    # Set for a fact that must be recorded once however often its writer runs (season.ended).
    once_key = models.CharField(max_length=200, null=True, blank=True, unique=True, editable=False)
    # Due for a delivery run from then on; null once every handler has it (delivered_at).
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    # The delivery run that holds it until then (a run killed mid-way lets go by running out).
    claimed_until = models.DateTimeField(null=True, blank=True, editable=False)
    claim = models.CharField(max_length=32, blank=True, editable=False)
    attempts = models.PositiveIntegerField(default=0, help_text="Delivery runs that took it up.")

    class Meta:
        ordering = ["-id"]
        indexes = [
            # What a delivery run looks for: undelivered events by when they are due.
            models.Index(
                fields=["next_attempt_at", "id"],
                name="event_due",
                condition=models.Q(delivered_at__isnull=True),
            ),
            # What the prune deletes: delivered events by age.
            models.Index(
                fields=["delivered_at"], name="event_delivered", condition=models.Q(delivered_at__isnull=False)
            ),
            # A game's events in order (the webhooks' event log).
            models.Index(fields=["game_slug", "id"], name="event_game"),
        ]

    def __str__(self) -> str:
        return f"{self.type} {self.event_id}"


class EventDelivery(models.Model):
    """One handler's record of one event: delivered (never called again), or failed and due
    again after a backoff. Written in the same transaction as what the handler did."""

    class Status(models.TextChoices):
        DELIVERED = "delivered", "delivered"
        FAILED = "failed", "failed, to retry"

    event = models.ForeignKey(Event, on_delete=models.CASCADE, related_name="deliveries")
    handler = models.CharField(max_length=EVENT_HANDLER_MAX_CHARS)
    status = models.CharField(max_length=10, choices=Status.choices)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "event deliveries"
        constraints = [models.UniqueConstraint(fields=["event", "handler"], name="one_delivery_per_handler")]

    def __str__(self) -> str:
        return f"{self.event.type} to {self.handler}: {self.status}"
