"""The Game model moved to core (core/migrations/0001_initial.py): state only, same table."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("archive", "0002_score_event_reason"),
        ("core", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="archivedperiod",
                    name="game",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="archived_periods", to="core.game"
                    ),
                ),
                migrations.AlterField(
                    model_name="scoreevent",
                    name="game",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="score_events", to="core.game"
                    ),
                ),
            ],
            database_operations=[],
        ),
    ]
