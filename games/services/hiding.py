"""Hiding a player from every board of a game (and refusing their scores), and restoring them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from django.db import transaction

from core import clock, keys
from core.audit import SYSTEM, Action, Actor, audit_record, checked_reason
from core.models import Game, Leaderboard, Player
from core.redis import get_redis, run_sync

from ..scripts import board as board_scripts
from ..scripts import game as game_scripts


async def _set_hidden(game_slug: str, board_slugs: Sequence[str], player_id: str, hide: bool, now_ms: int) -> None:
    """Hide or restore the player on each board (one script per board, on its hash tag) and in
    the game's master set; every board is written before this returns."""
    client = get_redis()
    if hide:
        await client.sadd(keys.hidden(game_slug), player_id)
    else:
        await client.srem(keys.hidden(game_slug), player_id)
    for board_slug in board_slugs:
        ref = keys.board_ref(game_slug, board_slug)
        while True:
            boards = cast("list[str]", await client.zrangebyscore(keys.boards_index(ref), now_ms, "+inf"))
            changed = await board_scripts.set_player_hidden(
                client, ref=ref, board_keys=boards, player_id=player_id, hide=hide, now_ms=now_ms
            )
            if changed is not None:
                break
        if changed:
            await client.zadd(keys.live_changes(), {ref: now_ms}, nx=True)


def hidden_restore(*, game_slug: str, player_ids: Sequence[str]) -> int:
    """The game's hidden players back into Redis where it lost them (the rebuild); the boards'
    copies come back with their swap."""
    if not player_ids:
        return 0
    return run_sync(lambda: game_scripts.hidden_restore(get_redis(), slug=game_slug, player_ids=player_ids))


def player_set_hidden(*, game: Game, player_id: str, hidden: bool, by: Actor = SYSTEM, reason: str = "") -> Player:
    """Hide a player from every board at once (and refuse their scores), or restore them."""
    reason = checked_reason(reason)
    now = clock.now()
    with transaction.atomic():
        player, _ = Player.objects.get_or_create(
            game=game, player_id=player_id, defaults={"display_name": player_id, "first_seen_at": now}
        )
        player.hidden = hidden
        player.save(update_fields=["hidden"])
        action = Action.HIDE if hidden else Action.UNHIDE
        audit_record(action=action, game_slug=game.slug, player_id=player_id, by=by, reason=reason)
        board_slugs = list(Leaderboard.objects.filter(game=game).values_list("slug", flat=True))
        run_sync(_set_hidden, game.slug, board_slugs, player_id, hidden, clock.to_ms(now))
    return player
