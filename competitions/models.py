"""The durable records of a competition (issue 22): rewards granted to players when a period
settles (``Grant``, claimed by game servers within a window), and a league's tiers (each
player's ``LeagueStanding`` now; their history is their ``SettledEntry`` of each period settled).

Settlement writes them, in its own transaction, through competitions/services/rewards.py and
league.py; claims and the expiry sweep change a grant's status; nothing else writes them.
"""

from __future__ import annotations

from django.db import models

from core.competition_rules import TIER_SLUG_MAX_CHARS
from core.models import PLAYER_ID_MAX_CHARS, Game, Leaderboard, validate_player_id

# Room for 'grant_' and its 22 random characters, and for a longer id should that ever change.
GRANT_ID_MAX_CHARS = 40
# As archive's ArchivedPeriod.period_id: a custom period of a later generation is 38 characters.
PERIOD_ID_MAX_CHARS = 64
# A cohort's name as settlement gives it ('silver-3', '2026-W10/7'): short, but the cohort
# layer's to decide.
COHORT_MAX_CHARS = 64
WINDOW_MAX_CHARS = 10


class Grant(models.Model):
    """A reward granted to a player for a period of a board: pending until a game server claims
    it (claimed) or its claim window passes (expired). At most one per player and period."""

    class Status(models.TextChoices):
        PENDING = "pending", "pending (may be claimed until it expires)"
        CLAIMED = "claimed", "claimed"
        EXPIRED = "expired", "expired (never claimed)"

    # The public id a game server claims it by: random, so that none can be guessed.
    grant_id = models.CharField(max_length=GRANT_ID_MAX_CHARS, unique=True, editable=False)
    # The board's game too: a player's rewards in a game are read (and claimed) in one query.
    game = models.ForeignKey(Game, on_delete=models.CASCADE, related_name="reward_grants")
    board = models.ForeignKey(Leaderboard, on_delete=models.CASCADE, related_name="reward_grants")
    window = models.CharField(max_length=WINDOW_MAX_CHARS)
    period_id = models.CharField(max_length=PERIOD_ID_MAX_CHARS)
    player_id = models.CharField(max_length=PLAYER_ID_MAX_CHARS, validators=[validate_player_id])
    cohort = models.CharField(max_length=COHORT_MAX_CHARS, blank=True)
    tier = models.CharField(max_length=TIER_SLUG_MAX_CHARS, blank=True)
    rank = models.PositiveIntegerField()
    # The studio's own object (core/competition_rules.py bounds it to REWARD_MAX_BYTES).
    reward = models.JSONField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    granted_at = models.DateTimeField()
    expires_at = models.DateTimeField(help_text="granted_at + the board's claim window: no claim from then on.")
    claimed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-granted_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["board", "period_id", "player_id"], name="one_grant_per_player_period"),
        ]
        indexes = [
            # A player's rewards in a game, newest first (the API's list).
            models.Index(fields=["game", "player_id", "-granted_at", "-id"], name="grant_player_newest"),
            # What the expiry sweep looks for: pending grants by when their window ends.
            models.Index(fields=["expires_at"], name="grant_pending_expiry", condition=models.Q(status="pending")),
        ]

    def __str__(self) -> str:
        return f"{self.grant_id} {self.player_id} {self.period_id} ({self.status})"


class LeagueStanding(models.Model):
    """A player's tier on a league board now: the last settlement's ``to_tier``. A player with
    none is in the board's start tier."""

    board = models.ForeignKey(Leaderboard, on_delete=models.CASCADE, related_name="league_standings")
    player_id = models.CharField(max_length=PLAYER_ID_MAX_CHARS, validators=[validate_player_id])
    tier = models.CharField(max_length=TIER_SLUG_MAX_CHARS)
    # The period whose settlement put them in this tier (or first recorded them in it).
    since_period_id = models.CharField(max_length=PERIOD_ID_MAX_CHARS)
    updated_at = models.DateTimeField()

    class Meta:
        ordering = ["board", "player_id"]
        constraints = [
            models.UniqueConstraint(fields=["board", "player_id"], name="one_league_standing_per_player"),
        ]

    def __str__(self) -> str:
        return f"{self.player_id}: {self.tier}"


class Settlement(models.Model):
    """A competing period's settlement (once per board, window and period): written in the
    transaction that completes the period's archive, with its entries, tier moves, grants and
    events (competitions/services/settlement.py)."""

    board = models.ForeignKey(Leaderboard, on_delete=models.CASCADE, related_name="settlements")
    window = models.CharField(max_length=WINDOW_MAX_CHARS)
    period_id = models.CharField(max_length=PERIOD_ID_MAX_CHARS)
    settled_at = models.DateTimeField()
    entrants = models.PositiveIntegerField()
    cohorts = models.PositiveIntegerField()
    promoted = models.PositiveIntegerField()
    demoted = models.PositiveIntegerField()
    granted = models.PositiveIntegerField()

    class Meta:
        ordering = ["-settled_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["board", "window", "period_id"], name="one_settlement_per_period"),
        ]

    def __str__(self) -> str:
        return f"{self.board} {self.window} {self.period_id}"


class SettledEntry(models.Model):
    """One entrant's outcome in a settlement: where they finished in their cohort, their tier
    move and their reward. Written cohort by cohort, best first (the id keeps that order)."""

    settlement = models.ForeignKey(Settlement, on_delete=models.CASCADE, related_name="entries")
    player_id = models.CharField(max_length=PLAYER_ID_MAX_CHARS, validators=[validate_player_id])
    cohort = models.CharField(max_length=COHORT_MAX_CHARS, blank=True)
    # Within the cohort; null: no score that period (ranked after everyone who scored).
    rank = models.PositiveIntegerField(null=True, blank=True)
    score = models.BigIntegerField(null=True, blank=True)
    tier = models.CharField(max_length=TIER_SLUG_MAX_CHARS, blank=True)
    move = models.SmallIntegerField(default=0)
    tier_after = models.CharField(max_length=TIER_SLUG_MAX_CHARS, blank=True)
    reward = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        verbose_name_plural = "settled entries"
        constraints = [
            models.UniqueConstraint(fields=["settlement", "player_id"], name="one_settled_entry_per_player"),
        ]
        indexes = [
            models.Index(fields=["settlement", "cohort", "id"], name="settled_entry_cohort"),
            # A player's entries in every settlement: their league history, their erasure.
            models.Index(fields=["player_id", "settlement"], name="settled_entry_player"),
        ]

    def __str__(self) -> str:
        return f"{self.player_id} #{self.rank} {self.cohort}"
