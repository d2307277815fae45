from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("archive", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="scoreevent",
            name="reason",
            field=models.CharField(blank=True, max_length=200),
        ),
    ]
