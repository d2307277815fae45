"""Game, ApiKey and Player moved to core (core/migrations/0001_initial.py): state only,
the tables stay as they are."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("games", "0003_presence_timeout"),
        ("core", "0001_initial"),
        ("accounts", "0002_game_moved_to_core"),
        ("archive", "0003_game_moved_to_core"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="Player"),
                migrations.DeleteModel(name="ApiKey"),
                migrations.DeleteModel(name="Game"),
            ],
            database_operations=[],
        ),
    ]
