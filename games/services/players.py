"""Players outside the score path: their copy in the database (the player sync), admin
renames, and names written outside a submission (restores, the name index's backfill).
Sync code, reaching Redis through run_sync."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, cast

from django.db import transaction

from core import clock, keys, text, worksets
from core.audit import SYSTEM, Action, Actor, audit_record, checked_reason
from core.deadletters import store_or_set_aside
from core.models import DeadLetter, Game, Player
from core.redis import get_redis, run_sync

from ..scripts import game as game_scripts

# One drain of new players writes at most this many rows in one INSERT.
PLAYER_SYNC_BATCH_SIZE = 1000
# Names per names_write call (each call holds Redis for about a millisecond).
NAMES_WRITE_CHUNK = 1000
# Names indexed per game and player-sync run while indexing names stored before the
# index existed: a million names are done in about seven minutes of runs 2 s apart.
NAMES_INDEX_BACKFILL_PER_RUN = 5000


async def _games_with_pending() -> list[str]:
    """The games whose players wait for the sync (marked by submissions and name writes)."""
    found = await get_redis().zrange(keys.work_players(), 0, -1)
    return [str(slug) for slug in found]


async def _done_with(slug: str) -> None:
    """Unmark a game, then mark it again if players were marked meanwhile (core/worksets.py)."""

    async def remaining() -> bool:
        return bool(await get_redis().zcard(keys.pending_players(slug)))

    await worksets.settle(keys.work_players(), slug, remaining=remaining, now_ms=clock.now_ms())


async def _mark_pending(slugs: Sequence[str]) -> int:
    client = get_redis()
    pipe = client.pipeline(transaction=False)
    for slug in slugs:
        pipe.zcard(keys.pending_players(slug))
    pending = [slug for slug, count in zip(slugs, await pipe.execute(), strict=True) if count]
    if pending:
        await client.zadd(keys.work_players(), dict.fromkeys(pending, clock.now_ms()), nx=True)
    return len(pending)


def players_mark_all() -> int:
    """Mark every game that has pending players: the safety net for a process that died
    between a submission and its mark (one pipelined ZCARD per game); how many were marked."""
    slugs = list(Game.objects.values_list("slug", flat=True))
    return run_sync(_mark_pending, slugs) if slugs else 0


def players_sync_pending(*, batch_size: int = PLAYER_SYNC_BATCH_SIZE) -> int:
    """Create or refresh Player rows for players first seen (or renamed) in Redis, in the games
    marked as having some: an idle game costs nothing.

    At-least-once: rows are upserted, then acknowledged only if not marked again
    meanwhile, so a crash between the two repeats a harmless upsert. A player the
    database refuses (a name with a NUL, stored before names were checked) becomes
    a dead letter and is acknowledged too: it never blocks the others.
    """
    written = 0
    slugs = run_sync(_games_with_pending)
    for game in Game.objects.filter(slug__in=slugs).only("id", "slug"):
        while True:
            rows = run_sync(
                lambda slug=game.slug: game_scripts.pending_players_read(get_redis(), slug=slug, batch=batch_size)
            )
            if not rows:
                break
            _store(game, rows)
            erased = run_sync(
                lambda slug=game.slug, rows=rows: game_scripts.pending_players_ack(get_redis(), slug=slug, players=rows)
            )
            if erased:
                Player.objects.filter(game=game, player_id__in=erased).delete()
            written += len(rows)
            if len(rows) < batch_size:
                break
        run_sync(_done_with, game.slug)
    for slug in set(slugs) - {g.slug for g in Game.objects.filter(slug__in=slugs).only("slug")}:
        run_sync(lambda slug=slug: get_redis().zrem(keys.work_players(), slug))  # a game deleted meanwhile
    return written


def _store(game: Game, rows: Sequence[game_scripts.PendingPlayer]) -> None:
    players = [
        Player(
            game=game,
            player_id=row.player_id,
            display_name=row.display_name[:64],
            first_seen_at=clock.from_ms(row.marked),
        )
        for row in rows
    ]
    store_or_set_aside(
        game=game,
        source=DeadLetter.Source.PLAYERS,
        rows=players,
        store=_upsert_players,
        describe=lambda player: (player.player_id, {"display_name": player.display_name}),
    )


def _upsert_players(players: Sequence[Player]) -> None:
    Player.objects.bulk_create(
        players, update_conflicts=True, unique_fields=["game", "player_id"], update_fields=["display_name"]
    )


def player_rename(*, player: Player, display_name: str, by: Actor = SYSTEM, reason: str = "") -> None:
    """An admin's correction of a display name, shown on every board at once (and findable by it)."""
    reason = checked_reason(reason)
    slug = player.game.slug
    with transaction.atomic():
        before = Player.objects.filter(pk=player.pk).values_list("display_name", flat=True).first()
        player.display_name = display_name
        player.full_clean()
        player.save(update_fields=["display_name"])
        detail = {"from": before or player.player_id, "to": display_name or player.player_id}
        audit_record(
            action=Action.RENAME, game_slug=slug, player_id=player.player_id, by=by, reason=reason, detail=detail
        )
        name = display_name or player.player_id
        run_sync(lambda: names_write(slug=slug, mode="set", names=[(player.player_id, name, False)]))


async def names_write(
    *, slug: str, mode: Literal["set", "restore", "index"], names: Sequence[tuple[str, str, bool]]
) -> int:
    """Set (``mode='set'``) or restore (``'restore'``: only names Redis lost) display names, with
    the name index in step; each is (player_id, name, mark the player for the player sync)."""
    written = 0
    marked = False
    for i in range(0, len(names), NAMES_WRITE_CHUNK):
        chunk = [(p, n, text.search_key(n), m) for p, n, m in names[i : i + NAMES_WRITE_CHUNK]]
        marked = marked or any(m for *_, m in chunk)
        written += await game_scripts.names_write(get_redis(), slug=slug, mode=mode, now_ms=clock.now_ms(), names=chunk)
    if marked and written:
        await get_redis().zadd(keys.work_players(), {slug: clock.now_ms()}, nx=True)
    return written


# Games this process saw fully indexed: never looked at again (the index only grows).
_INDEXED: set[str] = set()


async def _index_some_names(slug: str, budget: int) -> bool:
    """Index up to ``budget`` names stored before the name index existed; True once all are."""
    client = get_redis()
    progress = await client.get(keys.name_index_progress(slug))
    if progress == "done":
        return True
    cursor = int(progress or 0)
    while budget > 0:
        cursor, found = await client.hscan(keys.names(slug), cursor, count=NAMES_WRITE_CHUNK)
        names = cast("dict[str, str]", found)
        await names_write(slug=slug, mode="index", names=[(p, n, False) for p, n in names.items()])
        budget -= len(names)
        if cursor == 0:
            await client.set(keys.name_index_progress(slug), "done")
            return True
    await client.set(keys.name_index_progress(slug), str(cursor))
    return False


def names_index_backfill(*, budget: int = NAMES_INDEX_BACKFILL_PER_RUN) -> int:
    """Index, a bounded number per game and run, the names stored before the name index
    existed (the player-sync beat task); returns how many games are not done yet."""
    pending = 0
    for slug in Game.objects.values_list("slug", flat=True):
        if slug in _INDEXED:
            continue
        if run_sync(_index_some_names, slug, budget):
            _INDEXED.add(slug)
        else:
            pending += 1
    return pending
