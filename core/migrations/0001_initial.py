"""Game, ApiKey and Player move from the games app to core (the tenant models).

Only Django's state moves: the tables keep their names (games_game, games_apikey,
games_player) and their rows, so nothing is copied. The content types follow
the models, so admin history and permissions stay attached to them.
"""

import django.core.validators
import django.db.models.deletion
from django.apps.registry import Apps
from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor

import core.models

MOVED = ("game", "apikey", "player")


def _relabel(apps: Apps, old: str, new: str) -> None:
    content_types = apps.get_model("contenttypes", "ContentType")
    for model in MOVED:
        if not content_types.objects.filter(app_label=new, model=model).exists():
            content_types.objects.filter(app_label=old, model=model).update(app_label=new)


def move_content_types(apps: Apps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    _relabel(apps, "games", "core")


def move_content_types_back(apps: Apps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    _relabel(apps, "core", "games")


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("games", "0003_presence_timeout"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="Game",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        (
                            "slug",
                            models.CharField(
                                max_length=50,
                                unique=True,
                                validators=[
                                    django.core.validators.RegexValidator(
                                        "^[a-z0-9](?:[a-z0-9-]{0,48}[a-z0-9])?$",
                                        "Lowercase letters, digits and inner hyphens only.",
                                    )
                                ],
                            ),
                        ),
                        ("name", models.CharField(max_length=100)),
                        ("description", models.TextField(blank=True)),
                        (
                            "order",
                            models.CharField(
                                choices=[("desc", "higher is better"), ("asc", "lower is better")],
                                default="desc",
                                max_length=4,
                            ),
                        ),
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
                            "periods",
                            models.JSONField(
                                default=core.models.default_periods, validators=[core.models._validate_periods]
                            ),
                        ),
                        (
                            "timezone",
                            models.CharField(default="UTC", max_length=64, validators=[core.models._validate_timezone]),
                        ),
                        (
                            "min_score",
                            models.BigIntegerField(
                                blank=True,
                                help_text="Smallest value one submission may carry (empty: no bound).",
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
                                help_text="Largest value one submission may carry (empty: no bound).",
                                null=True,
                                validators=[
                                    django.core.validators.MinValueValidator(-9007199254740991),
                                    django.core.validators.MaxValueValidator(9007199254740991),
                                ],
                            ),
                        ),
                        (
                            "max_submissions_per_minute",
                            models.PositiveIntegerField(
                                default=60, help_text="Per player, over a sliding minute; 0 means no limit."
                            ),
                        ),
                        (
                            "presence_timeout_secs",
                            models.PositiveIntegerField(
                                default=60,
                                help_text="A player counts as online this many seconds after they were last seen.",
                                validators=[
                                    django.core.validators.MinValueValidator(30),
                                    django.core.validators.MaxValueValidator(3600),
                                ],
                            ),
                        ),
                        (
                            "active",
                            models.BooleanField(
                                default=True, help_text="Inactive games refuse submissions and leave listings."
                            ),
                        ),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                    ],
                    options={
                        "db_table": "games_game",
                        "ordering": ["name"],
                    },
                ),
                migrations.CreateModel(
                    name="ApiKey",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("name", models.CharField(blank=True, max_length=100)),
                        ("prefix", models.CharField(editable=False, max_length=8, unique=True)),
                        ("secret_hash", models.CharField(editable=False, max_length=64)),
                        (
                            "requests_per_minute",
                            models.PositiveIntegerField(
                                default=6000,
                                validators=[
                                    django.core.validators.MinValueValidator(1),
                                    django.core.validators.MaxValueValidator(10000000),
                                ],
                            ),
                        ),
                        ("revoked_at", models.DateTimeField(blank=True, editable=False, null=True)),
                        ("last_used_at", models.DateTimeField(blank=True, editable=False, null=True)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "game",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE, related_name="api_keys", to="core.game"
                            ),
                        ),
                    ],
                    options={
                        "verbose_name": "API key",
                        "db_table": "games_apikey",
                        "ordering": ["game", "-created_at"],
                    },
                ),
                migrations.CreateModel(
                    name="Player",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        (
                            "player_id",
                            models.CharField(
                                max_length=64,
                                validators=[django.core.validators.RegexValidator("^[A-Za-z0-9_.:-]{1,64}$")],
                            ),
                        ),
                        ("display_name", models.CharField(blank=True, max_length=64)),
                        (
                            "hidden",
                            models.BooleanField(
                                default=False, help_text="Hidden players vanish from every board and cannot submit."
                            ),
                        ),
                        ("first_seen_at", models.DateTimeField()),
                        (
                            "game",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE, related_name="players", to="core.game"
                            ),
                        ),
                    ],
                    options={
                        "db_table": "games_player",
                        "ordering": ["game", "player_id"],
                        "constraints": [
                            models.UniqueConstraint(fields=("game", "player_id"), name="unique_player_per_game")
                        ],
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(move_content_types, move_content_types_back),
    ]
