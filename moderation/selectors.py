"""What moderation reads before it acts: whether a game knows a player, and what
deleting a game takes with it (the confirmation page names it)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import QuerySet

from accounts.models import PlayerLink
from archive.models import ArchivedPeriod, ArchivedStanding, ScoreEvent
from competitions.models import Grant, LeagueStanding, SettledEntry, Settlement
from core import keys
from core.models import ApiKey, DeadLetter, Game, Player
from core.redis import get_redis, run_sync


def player_is_known(*, game: Game, player_id: str) -> bool:
    """Whether anything of the player is stored: a row, a name in Redis, a score event, an
    archived standing, an account link or a reward."""
    rows: list[QuerySet] = [
        Player.objects.filter(game=game, player_id=player_id),
        ScoreEvent.objects.filter(game=game, player_id=player_id),
        ArchivedStanding.objects.filter(archived_period__game=game, player_id=player_id),
        PlayerLink.objects.filter(game=game, player_id=player_id),
        Grant.objects.filter(game=game, player_id=player_id),
    ]
    if any(r.exists() for r in rows):
        return True
    return bool(run_sync(lambda: get_redis().hexists(keys.names(game.slug), player_id)))


def game_rows(*, game: Game) -> dict[str, QuerySet]:
    """Every row of a game, by what it is, in an order that deletes children first."""
    return {
        "score events": ScoreEvent.objects.filter(game=game),
        "archived standings": ArchivedStanding.objects.filter(archived_period__game=game),
        "archived periods": ArchivedPeriod.objects.filter(game=game),
        "dead letters": DeadLetter.objects.filter(game=game),
        "account links": PlayerLink.objects.filter(game=game),
        "rewards": Grant.objects.filter(game=game),
        "league tiers": LeagueStanding.objects.filter(board__game=game),
        "settled entries": SettledEntry.objects.filter(settlement__board__game=game),
        "settlements": Settlement.objects.filter(board__game=game),
        "players": Player.objects.filter(game=game),
        "API keys": ApiKey.objects.filter(game=game),
    }


@dataclass(frozen=True)
class DeletionSummary:
    rows: dict[str, int]  # counts by what they are (plural nouns, as game_rows names them)
    boards: int  # boards Redis holds
    names: int  # players Redis knows by name

    def lines(self) -> list[str]:
        """'1 player', '12,034 score events', ...: what the confirmation page lists."""
        return [f"{n:,} {label if n != 1 else label[:-1]}" for label, n in self.rows.items()]


def game_deletion_summary(*, game: Game) -> DeletionSummary:
    async def redis_counts() -> tuple[int, int]:
        client = get_redis()
        return await client.zcard(keys.boards_index(game.slug)), await client.hlen(keys.names(game.slug))

    boards, names = run_sync(redis_counts)
    return DeletionSummary(
        rows={label: rows.count() for label, rows in game_rows(game=game).items()}, boards=boards, names=names
    )
