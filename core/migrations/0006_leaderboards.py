"""A game owns many leaderboards. Each existing game gets one board, ``main``, carrying
the mode, order, periods and score bounds the game had (and its time zone, through the
board's empty zone, which means the game's); then the game forgets them. API keys gain a
scope; the existing ones keep what they could do: ``submit``."""

import core.models
import core.text
import django.core.validators
import django.db.models.deletion
from django.db import migrations, models


def _main_boards(apps, schema_editor):
    Game = apps.get_model("core", "Game")
    Leaderboard = apps.get_model("core", "Leaderboard")
    for game in Game.objects.all():
        board = Leaderboard.objects.create(
            game=game,
            slug="main",
            name=game.name,
            mode=game.mode,
            order=game.order,
            windows=[p for p in ("daily", "weekly", "monthly", "all-time") if p in game.periods],
            min_score=game.min_score,
            max_score=game.max_score,
            active=True,
        )
        # The board is as old as the game (auto_now_add set it to now).
        Leaderboard.objects.filter(pk=board.pk).update(created_at=game.created_at)


def _game_settings(apps, schema_editor):
    Leaderboard = apps.get_model("core", "Leaderboard")
    for board in Leaderboard.objects.filter(slug="main").select_related("game"):
        game = board.game
        game.mode, game.order, game.periods = board.mode, board.order, list(board.windows)
        game.min_score, game.max_score = board.min_score, board.max_score
        game.save(update_fields=["mode", "order", "periods", "min_score", "max_score"])


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0005_audit_trail"),
    ]

    operations = [
        migrations.CreateModel(
            name="Leaderboard",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "slug",
                    models.CharField(
                        max_length=50,
                        validators=[
                            django.core.validators.RegexValidator(
                                "^[a-z0-9](?:[a-z0-9-]{0,48}[a-z0-9])?$",
                                "Lowercase letters, digits and inner hyphens only.",
                            )
                        ],
                    ),
                ),
                ("name", models.CharField(max_length=100, validators=[core.text.validate_single_line])),
                ("description", models.TextField(blank=True, validators=[core.text.validate_multiline])),
                (
                    "mode",
                    models.CharField(
                        choices=[
                            ("increment", "increment (each submission adds)"),
                            ("best", "best (keep each player's best)"),
                            ("latest", "latest (overwrite)"),
                        ],
                        default="best",
                        max_length=10,
                    ),
                ),
                (
                    "order",
                    models.CharField(
                        choices=[("desc", "higher is better"), ("asc", "lower is better")], default="desc", max_length=4
                    ),
                ),
                (
                    "windows",
                    models.JSONField(default=core.models.default_periods, validators=[core.models._validate_windows]),
                ),
                (
                    "cron",
                    models.CharField(
                        blank=True,
                        help_text="When the custom window resets, as a 5-field cron expression (e.g. 0 18 * * FRI).",
                        max_length=100,
                        validators=[core.models._validate_cron],
                    ),
                ),
                (
                    "timezone",
                    models.CharField(
                        blank=True,
                        help_text="Empty: the game's time zone.",
                        max_length=64,
                        validators=[core.models._validate_timezone],
                    ),
                ),
                (
                    "starts_at",
                    models.DateTimeField(blank=True, help_text="Season start: no scores before it.", null=True),
                ),
                (
                    "ends_at",
                    models.DateTimeField(blank=True, help_text="Season end: no scores from then on.", null=True),
                ),
                (
                    "ties",
                    models.CharField(
                        choices=[
                            ("shared", "shared (equal scores share a rank)"),
                            ("earliest", "earliest (who reached it first ranks higher)"),
                        ],
                        default="shared",
                        max_length=10,
                    ),
                ),
                (
                    "format",
                    models.CharField(
                        default="integer",
                        help_text="integer, time_ms, or decimal:N with N from 1 to 6",
                        max_length=20,
                        validators=[core.models._validate_format],
                    ),
                ),
                (
                    "min_score",
                    models.BigIntegerField(
                        blank=True,
                        help_text="Smallest value one submission may carry.",
                        null=True,
                        validators=[
                            django.core.validators.MinValueValidator(-9007199254740991),
                            django.core.validators.MaxValueValidator(9007199254740991),
                        ],
                    ),
                ),
                (
                    "max_score",
                    models.BigIntegerField(
                        blank=True,
                        help_text="Largest value one submission may carry.",
                        null=True,
                        validators=[
                            django.core.validators.MinValueValidator(-9007199254740991),
                            django.core.validators.MaxValueValidator(9007199254740991),
                        ],
                    ),
                ),
                (
                    "active",
                    models.BooleanField(default=True, help_text="Inactive boards refuse scores; their archives stay."),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "game",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="leaderboards", to="core.game"
                    ),
                ),
            ],
            options={
                "db_table": "games_leaderboard",
                "ordering": ["game", "id"],
                "constraints": [models.UniqueConstraint(fields=("game", "slug"), name="unique_board_per_game")],
            },
        ),
        migrations.AddField(
            model_name="apikey",
            name="scope",
            field=models.CharField(
                choices=[
                    ("submit", "submit (scores, presence, link codes)"),
                    ("manage", "manage (create and change leaderboards; may also submit)"),
                ],
                default="submit",
                max_length=10,
            ),
        ),
        migrations.AlterField(
            model_name="game",
            name="max_submissions_per_minute",
            field=models.PositiveIntegerField(
                default=60, help_text="Per player and board, over a sliding minute; 0 means no limit."
            ),
        ),
        migrations.AlterField(
            model_name="game",
            name="timezone",
            field=models.CharField(
                default="UTC",
                help_text="Where the boards' days, weeks and months start, unless a board says otherwise.",
                max_length=64,
                validators=[core.models._validate_timezone],
            ),
        ),
        migrations.RunPython(_main_boards, _game_settings),
        migrations.RemoveField(
            model_name="game",
            name="max_score",
        ),
        migrations.RemoveField(
            model_name="game",
            name="min_score",
        ),
        migrations.RemoveField(
            model_name="game",
            name="mode",
        ),
        migrations.RemoveField(
            model_name="game",
            name="order",
        ),
        migrations.RemoveField(
            model_name="game",
            name="periods",
        ),
    ]
