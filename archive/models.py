"""The permanent record: finished periods' final standings, and every applied score.

Redis holds the live boards; these tables outlive them. A period is archived
exactly once by its close job (archive/services.py), and the ledger copies every
submission the submit script applied (ScoreEvent), so boards can be rebuilt from
the database if Redis loses its data.
"""

from __future__ import annotations

from django.db import models

from core.models import PLAYER_ID_MAX_CHARS, Game, Leaderboard, validate_player_id


class ArchivedPeriod(models.Model):
    class Status(models.TextChoices):
        # Being written: a crash leaves this, and the next run finishes it.
        ARCHIVING = "archiving", "archiving"
        # `archive_period --force` of a period still open: its close job overwrites it.
        SNAPSHOT = "snapshot", "snapshot (period still open)"
        # The final standings; the Redis board's expiry was then shortened.
        COMPLETE = "complete", "complete"

    # The game too: its history page lists every board's archives in one query.
    game = models.ForeignKey(Game, on_delete=models.CASCADE, related_name="archived_periods")
    leaderboard = models.ForeignKey(Leaderboard, on_delete=models.CASCADE, related_name="archived_periods")
    period = models.CharField(max_length=10)
    # Up to a custom period's id of a later generation (games/periods.py), 38 characters:
    # '2026-11-20T17:00Z~20260304T120500.250Z'. PostgreSQL enforces the length (SQLite does not).
    period_id = models.CharField(max_length=64)
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    total = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ARCHIVING)
    # Marks the rows a run wrote, so that rows of players no longer on the board
    # (a snapshot overwritten by the final state) are removed at the end of the run.
    run = models.CharField(max_length=32, blank=True, editable=False)
    archived_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["game", "-ends_at", "period"]
        constraints = [
            models.UniqueConstraint(fields=["leaderboard", "period", "period_id"], name="one_archive_per_board_period"),
        ]
        indexes = [
            models.Index(fields=["game", "-ends_at"], name="archive_game_newest"),
            models.Index(fields=["leaderboard", "-ends_at"], name="archive_board_newest"),
        ]

    def __str__(self) -> str:
        return f"{self.game.slug}/{self.leaderboard.slug} {self.period} {self.period_id} ({self.status})"


class ArchivedStanding(models.Model):
    # Indexed by the rank index below, whose first column it is, and with no foreign-key
    # check in the database: each cost the archive's COPY about as much as the row itself
    # (bench/archive.py). The archive writes only rows of the period it just saved, and
    # Django deletes them with their period.
    archived_period = models.ForeignKey(
        ArchivedPeriod, on_delete=models.CASCADE, related_name="standings", db_index=False, db_constraint=False
    )
    rank = models.PositiveIntegerField()
    player_id = models.CharField(max_length=PLAYER_ID_MAX_CHARS, validators=[validate_player_id])
    display_name = models.CharField(max_length=64, blank=True)
    score = models.BigIntegerField()
    # Equal scores' order on boards with ties 'subscore' (None on other boards).
    subscore = models.BigIntegerField(null=True, blank=True)
    # The entry's metadata when the period closed (what the submission that set it carried).
    metadata = models.JSONField(null=True, blank=True)
    run = models.CharField(max_length=32, editable=False)

    class Meta:
        ordering = ["archived_period", "rank", "player_id"]
        constraints = [
            # Player first: the same index finds a player's standings across periods.
            models.UniqueConstraint(fields=["player_id", "archived_period"], name="one_standing_per_player_period"),
        ]
        indexes = [
            models.Index(fields=["archived_period", "rank", "player_id"], name="archive_standing_rank"),
        ]

    def __str__(self) -> str:
        return f"#{self.rank} {self.player_id}"


class ScoreEvent(models.Model):
    """One applied submission (or admin correction), copied from its leaderboard's ledger stream."""

    class Kind(models.TextChoices):
        SUBMIT = "submit", "submission"
        CORRECTION = "correction", "correction"
        # A competing board's entry (issue 22): a join, and attempts granted (``value``: how many).
        JOIN = "join", "join"
        ATTEMPTS = "attempts", "attempts granted"
        # A placement in a cohort (``value``: the cohort's index, core/lua/prelude/cohorts.lua).
        COHORT = "cohort", "cohort placement"

    # Both indexed by the composite indexes below that start with them, and with no
    # foreign-key check in the database: the two checks cost the drain's COPY as much as
    # the row itself (bench/archive.py). The drain writes only rows of the board it reads,
    # and Django deletes them with their game or board.
    game = models.ForeignKey(
        Game, on_delete=models.CASCADE, related_name="score_events", db_index=False, db_constraint=False
    )
    leaderboard = models.ForeignKey(
        Leaderboard, on_delete=models.CASCADE, related_name="score_events", db_index=False, db_constraint=False
    )
    # The stream entry id '<ms>-<seq>', as the stream shows it.
    event_id = models.CharField(max_length=40)
    # The id's two parts: unique per board, so a re-delivered entry is not stored twice, and
    # the order of replays.
    stream_ms = models.BigIntegerField()
    stream_seq = models.BigIntegerField()
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.SUBMIT)
    player_id = models.CharField(max_length=64)
    display_name = models.CharField(max_length=64, blank=True, help_text="As submitted; empty kept the stored name.")
    value = models.BigIntegerField(help_text="The score as submitted (increment games: the amount added).")
    mode = models.CharField(max_length=10, help_text="The board's mode when it was applied.")
    metadata = models.JSONField(null=True, blank=True, help_text="As submitted, for the entry.")
    # When it was applied: its boards are the periods that contain this instant.
    at = models.DateTimeField()
    # Why an admin made a correction (empty for submissions).
    reason = models.CharField(max_length=200, blank=True)
    subscore = models.BigIntegerField(
        null=True, blank=True, help_text="As submitted, on boards with ties 'subscore' (none: 0, or kept)."
    )

    class Meta:
        ordering = ["game", "stream_ms", "stream_seq"]
        constraints = [
            models.UniqueConstraint(
                fields=["leaderboard", "stream_ms", "stream_seq"], name="one_event_per_board_stream_position"
            )
        ]
        indexes = [
            models.Index(fields=["game", "player_id", "stream_ms"], name="score_event_player"),
        ]

    def __str__(self) -> str:
        return f"{self.game.slug}/{self.leaderboard.slug} {self.event_id} {self.player_id} {self.value}"
