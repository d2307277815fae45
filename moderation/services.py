"""Moderation acts that reach every app: erasing a player (what a GDPR erasure request
needs) and deleting a game. Admin actions and commands adapt to these; each act is
recorded in the audit trail (core/audit.py).

Erasure removes the player from Redis in one script (moderation/lua/player_erase.lua)
and from the database in the same transaction: their row, account links, score
events, dead letters, rewards and league tiers go, and their archived standings stay with the rank under
"deleted player" (the other players' ranks in past periods were earned against them;
re-ranking history would rewrite what everyone saw). A later score under the same id
starts a new player: the game server is the one that must stop sending it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import cast

from django.db import transaction
from django.db.models import Q

from accounts.models import PlayerLink
from archive.ledger.erasure import player_forget
from competitions.services import league as league_services
from competitions.services import rewards as reward_services
from core import clock, errors, keys, outbox
from core.audit import SYSTEM, Action, Actor, audit_forget_names, audit_record, checked_reason
from core.models import PLAYER_ID_MESSAGE, DeadLetter, Game, Leaderboard, Player, is_player_id
from core.postgresql.base import long_statements
from core.redis import get_redis, run_sync
from core.worksets import mark
from presence import services as presence_services
from presence.services import PRESENCE_ANNOUNCE_TTL_MS

from . import scripts, selectors

# The erased ZSET remembers a player this long: far longer than a rebuild, a player
# sync or a drain can have been running beside the erasure.
ERASED_MEMORY_MS = 24 * 3600 * 1000
# SCAN batch and UNLINK batch when deleting a game's keys.
PURGE_SCAN_COUNT = 1000


@dataclass(frozen=True)
class Erased:
    player_id: str
    boards: int  # boards and stashes the player was on
    score_events: int
    standings_anonymised: int
    links: int
    other: dict[str, int] = field(default_factory=dict)  # what else went (name, records, codes...)


async def _erase_from_game(slug: str, player_id: str, now_ms: int) -> scripts.GameErased:
    client = get_redis()
    while True:
        codes = cast("list[str]", await client.zrange(keys.link_codes_issued(slug, player_id), 0, -1))
        erased = await scripts.player_erase(
            client,
            slug=slug,
            player_id=player_id,
            now_ms=now_ms,
            codes=codes,
            memory_ms=ERASED_MEMORY_MS,
            announce_ttl_ms=PRESENCE_ANNOUNCE_TTL_MS,
        )
        if erased is not None:
            return erased


async def _erase_from_board(ref: str, player_id: str, now_ms: int) -> scripts.BoardErased:
    client = get_redis()
    while True:
        boards = cast("list[str]", await client.zrange(keys.boards_index(ref), 0, -1))
        records = cast("list[str]", await client.zrange(keys.player_idempotency(ref, player_id), 0, -1))
        erased = await scripts.player_erase_board(
            client, ref=ref, player_id=player_id, now_ms=now_ms, boards=boards, records=records
        )
        if erased is not None:
            return erased


async def _erase_in_redis(slug: str, board_slugs: list[str], player_id: str, now_ms: int) -> list[int]:
    """The game's part first (its erased mark keeps a name restore from bringing the player
    back), then each board's; returns (boards left, name removed, recent rows removed,
    idempotency records removed, link codes removed, was online)."""
    game = await _erase_from_game(slug, player_id, now_ms)
    left = records = 0
    for board_slug in board_slugs:
        ref = keys.board_ref(slug, board_slug)
        board = await _erase_from_board(ref, player_id, now_ms)
        left += board.boards
        records += board.records
        await get_redis().zadd(keys.live_changes(), {ref: now_ms}, nx=True)
        await mark(ledger=[ref], now_ms=now_ms)  # its erasure entry, for the drain
    if game.online:
        await presence_services.presence_changed(slug=slug)
    return [left, game.named, game.recent, records, game.codes, int(game.online)]


def _dead_letters_of(game: Game, player_id: str) -> int:
    """Dead letters carry what they could not store: the player's name and scores among it."""
    ledger_mark = json.dumps({"p": player_id})[1:-1]  # '"p": "<id>"', as set_aside wrote it
    of_player = Q(source=DeadLetter.Source.PLAYERS, key=player_id) | Q(
        source=DeadLetter.Source.LEDGER, payload__contains=ledger_mark
    )
    deleted, _ = DeadLetter.objects.filter(of_player, game=game).delete()
    return deleted


def player_erase(*, game: Game, player_id: str, reason: str, by: Actor = SYSTEM) -> Erased:
    """Erase a player from the game everywhere (see the module's docstring); 404 if the
    game knows nothing of them. Safe to repeat: a second run finishes what a first one
    cut short left."""
    if not is_player_id(player_id):
        raise errors.invalid("player_id", PLAYER_ID_MESSAGE)
    reason = checked_reason(reason, required=True)
    if not selectors.player_is_known(game=game, player_id=player_id):
        raise errors.player_not_found(game=game, player_id=player_id)
    now_ms = clock.to_ms(clock.now())
    with transaction.atomic():
        # Redis last: if it fails, the transaction rolls back and nothing changed.
        Player.objects.filter(game=game, player_id=player_id).delete()
        links, _ = PlayerLink.objects.filter(game=game, player_id=player_id).delete()
        events, standings = player_forget(game=game, player_id=player_id)
        letters = _dead_letters_of(game, player_id)
        rewards = reward_services.player_grants_forget(game_id=game.id, player_id=player_id)
        tiers = league_services.player_league_forget(game_id=game.id, player_id=player_id)
        audit_forget_names(game_slug=game.slug, player_id=player_id)
        board_slugs = list(Leaderboard.objects.filter(game=game).values_list("slug", flat=True))
        boards, named, recent, records, codes, online = run_sync(
            _erase_in_redis, game.slug, board_slugs, player_id, now_ms
        )
        erased = Erased(
            player_id=player_id,
            boards=boards,
            score_events=events,
            standings_anonymised=standings,
            links=links,
            other={
                "name": named,
                "recent submissions": recent,
                "idempotency records": records,
                "link codes": codes,
                "online": online,
                "dead letters": letters,
                "rewards": rewards,
                "league records": tiers,
            },
        )
        audit_record(
            action=Action.ERASE,
            game_slug=game.slug,
            player_id=player_id,
            by=by,
            reason=reason,
            detail={"boards": boards, "score events": events, "standings anonymised": standings, "links": links}
            | erased.other,
        )
        erased_at = clock.iso(clock.from_ms(now_ms))
        outbox.event_emit(outbox.PlayerErased(game=game.slug, player_id=player_id, erased_at=erased_at))
    return erased


@dataclass(frozen=True)
class GameDeleted:
    slug: str
    rows: dict[str, int]  # rows deleted, by what they were
    redis_keys: int


async def _purge(slug: str) -> int:
    """UNLINK every key of the game (core.keys.game_patterns), a SCAN batch at a time."""
    client = get_redis()
    removed = 0
    for pattern in keys.game_patterns(slug):
        batch: list[str] = []
        async for key in client.scan_iter(match=pattern, count=PURGE_SCAN_COUNT):
            batch.append(key)
            if len(batch) >= PURGE_SCAN_COUNT:
                removed += await client.unlink(*batch)
                batch = []
        if batch:
            removed += await client.unlink(*batch)
    return removed


def _game_rows_delete(game: Game) -> dict[str, int]:
    """Table by table, each one DELETE (no row is loaded): a game's ledger can hold millions."""
    deleted = {}
    for label, rows in selectors.game_rows(game=game).items():
        deleted[label], _ = rows.delete()
    game.delete()
    return deleted


def game_delete(*, game: Game, reason: str, by: Actor = SYSTEM) -> GameDeleted:
    """Delete a game: its Redis keys, then its rows (players, keys, ledger, archives...).

    The game is made inactive first (every process then refuses its scores at once), so
    that nothing writes its keys again while they go. Redis must be up: if the purge
    fails, the game stays, inactive, with its database rows (run it again); if the
    database then fails, the rows stay and a rebuild brings the boards back.
    """
    reason = checked_reason(reason, required=True)
    slug = game.slug
    if game.active:
        game.active = False
        game.save(update_fields=["active"])  # its signal tells every process's cache
    removed = run_sync(_purge, slug)
    # Deleting a big game's rows takes as long as it takes, even from admin on a web process
    # whose statements are otherwise cut short (core/postgresql/base.py).
    with transaction.atomic(), long_statements():
        rows = _game_rows_delete(game)
        audit_record(
            action=Action.DELETE_GAME, game_slug=slug, by=by, reason=reason, detail={**rows, "redis_keys": removed}
        )
        outbox.event_emit(outbox.GameDeleted(game=slug, deleted_at=clock.iso(clock.now())))
    # A write that passed its checks just before the game went inactive may have landed
    # after the first pass.
    removed += run_sync(_purge, slug)
    return GameDeleted(slug=slug, rows=rows, redis_keys=removed)
