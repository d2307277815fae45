"""Archives and ledger entries belong to a leaderboard: each existing one becomes its game's
``main`` board's (core 0006 made that board from the game's settings). Custom periods have
longer ids ('2026-11-20T17:00Z'); standings and ledger entries may carry metadata.

Redis moves with them: a board's keys now carry the tag ``{game.board}``, so the live
state a game kept under ``{game}`` (its period boards with their versions and stashes, the
boards index, the ledger stream with its consumer group, the anti-spam windows, the close
jobs) is renamed to the ``main`` board's keys, and the game's hidden players are copied to
the board. Idempotency records are dropped: their replies have the old shape (they lapse
within a day anyway; a retry after this migration is applied as new). Renames need one
Redis (not a cluster), which is all the product ran on before this change.
"""

import django.db.models.deletion
from django.db import migrations, models

# The keys of the game that stay the game's (names, hidden master, recent list, presence...).
_GAME_KEYS = {
    "names",
    "name-index",
    "name-keys",
    "name-index-progress",
    "erased",
    "hidden",
    "recent",
    "recent-version",
    "pending-players",
    "followed",
    "config-version",
}


async def _move_game(slug: str) -> int:
    from core.redis import get_redis

    client = get_redis()
    old, new = "{" + slug + "}", "{" + slug + ".main}"
    moved = 0
    for family in ("lb", "jobs"):
        async for key in client.scan_iter(match=f"{family}:{old}:*", count=1000):
            rest = key[len(f"{family}:{old}:") :]
            if family == "lb" and rest.split(":")[0] in _GAME_KEYS:
                continue
            if family == "lb" and rest == "dirty":
                await client.delete(key)  # the broadcaster's marks: the next score marks again
                continue
            target = f"{family}:{new}:{rest}"
            if family == "lb" and rest == "boards":
                index = await client.zrange(key, 0, -1, withscores=True)
                renamed = {member.replace(f"lb:{old}:", f"lb:{new}:", 1): score for member, score in index}
                if renamed:
                    await client.zadd(target, renamed)
                await client.delete(key)
            else:
                # Not RENAME: on a Redis Cluster the old and new names hash to different slots.
                payload, ttl = await client.dump(key), await client.pttl(key)
                await client.restore(target, max(0, ttl), payload, replace=True)
                await client.delete(key)
            moved += 1
    async for key in client.scan_iter(match=f"idem:{old}:*", count=1000):
        await client.delete(key)
    hidden = await client.smembers(f"lb:{old}:hidden")
    if hidden:
        await client.sadd(f"lb:{new}:hidden", *hidden)
    return moved


def _to_main(apps, schema_editor):
    Game = apps.get_model("core", "Game")
    Leaderboard = apps.get_model("core", "Leaderboard")
    ArchivedPeriod = apps.get_model("archive", "ArchivedPeriod")
    ScoreEvent = apps.get_model("archive", "ScoreEvent")
    for game in Game.objects.all():
        board = Leaderboard.objects.filter(game=game).order_by("id").first()
        if board is None:
            continue
        ArchivedPeriod.objects.filter(game=game).update(leaderboard=board)
        ScoreEvent.objects.filter(game=game).update(leaderboard=board)
        if board.slug == "main":
            from core.redis import run_sync

            run_sync(_move_game, game.slug)


class Migration(migrations.Migration):
    dependencies = [
        ("archive", "0004_text_and_player_id_checks"),
        ("core", "0006_leaderboards"),
    ]

    operations = [
        migrations.AddField(
            model_name="archivedperiod",
            name="leaderboard",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="archived_periods",
                to="core.leaderboard",
            ),
        ),
        migrations.AddField(
            model_name="scoreevent",
            name="leaderboard",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="score_events",
                to="core.leaderboard",
            ),
        ),
        migrations.AddField(
            model_name="archivedstanding",
            name="metadata",
            field=models.JSONField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="scoreevent",
            name="metadata",
            field=models.JSONField(blank=True, help_text="As submitted, for the entry.", null=True),
        ),
        migrations.AlterField(
            model_name="archivedperiod",
            name="period_id",
            field=models.CharField(max_length=20),
        ),
        migrations.AlterField(
            model_name="scoreevent",
            name="mode",
            field=models.CharField(help_text="The board's mode when it was applied.", max_length=10),
        ),
        migrations.RunPython(_to_main, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="archivedperiod",
            name="leaderboard",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE, related_name="archived_periods", to="core.leaderboard"
            ),
        ),
        migrations.AlterField(
            model_name="scoreevent",
            name="leaderboard",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE, related_name="score_events", to="core.leaderboard"
            ),
        ),
        migrations.RemoveConstraint(model_name="archivedperiod", name="one_archive_per_period"),
        migrations.AddConstraint(
            model_name="archivedperiod",
            constraint=models.UniqueConstraint(
                fields=("leaderboard", "period", "period_id"), name="one_archive_per_board_period"
            ),
        ),
        migrations.AddIndex(
            model_name="archivedperiod",
            index=models.Index(fields=["leaderboard", "-ends_at"], name="archive_board_newest"),
        ),
        migrations.RemoveConstraint(model_name="scoreevent", name="one_event_per_stream_id"),
        migrations.AddConstraint(
            model_name="scoreevent",
            constraint=models.UniqueConstraint(fields=("leaderboard", "event_id"), name="one_event_per_board_stream_id"),
        ),
        migrations.RemoveIndex(model_name="scoreevent", name="score_event_replay"),
        migrations.AddIndex(
            model_name="scoreevent",
            index=models.Index(fields=["leaderboard", "stream_ms", "stream_seq"], name="score_event_board_replay"),
        ),
    ]
