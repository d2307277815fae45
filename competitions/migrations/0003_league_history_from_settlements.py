"""A player's league history is their settled entries (each holds the period's tier, move and
tier after), so the tier changes a settlement wrote beside them, row for row, go: a
settlement of 100,000 entrants writes 100,000 rows fewer. Nothing is lost: every tier change
was written with its settled entry, in the same transaction."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("competitions", "0002_settlements"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="settledentry", options={"ordering": ["id"], "verbose_name_plural": "settled entries"}
        ),
        migrations.AddIndex(
            model_name="settledentry",
            index=models.Index(fields=["player_id", "settlement"], name="settled_entry_player"),
        ),
        # The whole table at once (its constraints and indexes with it).
        migrations.DeleteModel(name="TierChange"),
    ]
