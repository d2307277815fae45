"""The Game model moved to core (core/migrations/0001_initial.py): state only, same table."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0001_initial"),
        ("core", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="playerlink",
                    name="game",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="player_links", to="core.game"
                    ),
                ),
            ],
            database_operations=[],
        ),
    ]
