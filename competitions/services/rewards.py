"""Rewards (issue 22): what a settlement grants players when a competing board's period ends,
their claim by a game server, and their expiry (docs/competitions.md, Rewards and claims).

- ``grants_create``: the settlement's call, inside its own transaction: one ``Grant`` per player
  and period (a second call for the period creates nothing), each with its ``reward.granted``.
- ``grant_claim``: pending to claimed exactly once, however many claims race (one conditional
  UPDATE decides), with its ``reward.claimed``; a repeat answers the same claimed grant.
- ``grants_expire``: beat's sweep marks pending grants past their window expired, in bounded
  batches, each with its ``reward.expired``. A claim never needs it: time alone refuses one.

Sync: each is database work in a transaction (the settlement's, the API's through
sync_to_async, a Celery task's). The time is always the caller's ``now`` (core.clock).
"""

from __future__ import annotations

import datetime as dt
import json
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from django.db import transaction

from core import bulk, clock, errors, outbox
from core.competition_rules import (
    GRANT_ID_PREFIX,
    GRANT_ID_RE,
    RANK_MAX,
    REWARD_MAX_BYTES,
    TIER_SLUG_RE,
    Competition,
)
from core.models import Leaderboard, is_player_id

from ..models import COHORT_MAX_CHARS, Grant
from .records import chunks, in_callers_transaction, period_id_check, window_check

# Grants looked up per query after the insert: well under SQLite's bound on a statement's parameters.
GRANT_INSERT_BATCH = 500
# Grants the expiry sweep marks per transaction: short ones, so that a claim of one of them
# never waits long behind the sweep's lock.
GRANT_EXPIRE_BATCH = 500
# The random part of a grant's id: 16 bytes (128 bits), 22 url-safe characters.
GRANT_ID_RANDOM_BYTES = 16
GRANT_ID_MESSAGE = "A reward's id: 'grant_' and 22 letters, digits, '-' or '_', as its grant gave it."
_GRANT_ID = re.compile(GRANT_ID_RE)
_GRANT_COLUMNS = bulk.columns_of(
    Grant,
    [
        "grant_id",
        "game",
        "board",
        "window",
        "period_id",
        "player_id",
        "cohort",
        "tier",
        "rank",
        "reward",
        "status",
        "granted_at",
        "expires_at",
    ],
)
_GRANT_KEY = bulk.columns_of(Grant, ["board", "period_id", "player_id"])

Pending = Grant.Status.PENDING
Claimed = Grant.Status.CLAIMED
Expired = Grant.Status.EXPIRED


class GameRef(Protocol):
    """A game as claims name it: core.models.Game, or core.config.GameConfig (the API's)."""

    @property
    def id(self) -> int: ...

    @property
    def slug(self) -> str: ...


@dataclass(frozen=True)
class GrantSpec:
    """One player's reward for a period, as the settlement computed it: their ``rank`` in their
    ``cohort`` ("" when the board has none), in ``tier`` ("" on a board without tiers)."""

    player_id: str
    rank: int
    reward: dict[str, Any]
    cohort: str = ""
    tier: str = ""


def grant_id_new() -> str:
    return GRANT_ID_PREFIX + secrets.token_urlsafe(GRANT_ID_RANDOM_BYTES)


def is_grant_id(value: str) -> bool:
    return _GRANT_ID.match(value) is not None


def competition_of(board: Leaderboard) -> Competition:
    """The board's competition (409 not_competing for a board that runs none)."""
    competition = board.competition()
    if competition is None:
        raise errors.not_competing(board=board.slug)
    return competition


def _spec_check(spec: GrantSpec) -> None:
    if not is_player_id(spec.player_id):
        raise ValueError(f"grant of {spec.player_id[:80]!r}: not a player id")
    if type(spec.rank) is not int or not 1 <= spec.rank <= RANK_MAX:
        raise ValueError(f"grant of {spec.player_id!r}: rank {spec.rank!r} is no rank from 1 to {RANK_MAX:,}")
    if type(spec.reward) is not dict or not spec.reward:
        raise ValueError(f"grant of {spec.player_id!r}: a reward is a non-empty JSON object")
    if len(json.dumps(spec.reward, separators=(",", ":"), ensure_ascii=False).encode()) > REWARD_MAX_BYTES:
        raise ValueError(f"grant of {spec.player_id!r}: the reward is over {REWARD_MAX_BYTES:,} bytes")
    if spec.tier and not TIER_SLUG_RE.match(spec.tier):
        raise ValueError(f"grant of {spec.player_id!r}: tier {spec.tier[:80]!r} is no tier slug")
    if len(spec.cohort) > COHORT_MAX_CHARS:
        raise ValueError(f"grant of {spec.player_id!r}: a cohort is at most {COHORT_MAX_CHARS} characters")


def _specs_check(grants: Sequence[GrantSpec]) -> None:
    seen: set[str] = set()
    for spec in grants:
        _spec_check(spec)
        if spec.player_id in seen:
            raise ValueError(f"{spec.player_id!r} is granted twice: a player gets at most one reward a period")
        seen.add(spec.player_id)


def grants_create(
    *, board: Leaderboard, window: str, period_id: str, grants: Sequence[GrantSpec], now: dt.datetime
) -> int:
    """Grant each player their reward for the board's ``period_id`` of ``window``, claimable until
    ``now`` + the board's claim window; returns how many grants were new.

    Call it inside the settlement's ``transaction.atomic()``: it commits nothing itself. Idempotent:
    a player who already has a grant for the period (this call repeated, or run twice at once) is
    left as they are, and only new grants get their ``reward.granted`` event, in the same
    transaction. A spec that breaks the rules (a bad player id, rank or reward, a player twice)
    is a bug of the caller: ValueError, and nothing is written.
    """
    in_callers_transaction("grants_create")
    competition = competition_of(board)
    window_check(window)
    period_id_check(period_id)
    _specs_check(grants)
    expires_at = now + dt.timedelta(seconds=competition.claim_window_secs)
    ids = [grant_id_new() for _ in grants]
    rows = [
        (
            grant_id,
            board.game_id,
            board.pk,
            window,
            period_id,
            spec.player_id,
            spec.cohort,
            spec.tier,
            spec.rank,
            json.dumps(spec.reward),
            Pending,
            now,
            expires_at,
        )
        for grant_id, spec in zip(ids, grants, strict=True)
    ]
    # ON CONFLICT DO NOTHING on (board, period_id, player_id): a grant already there stays. The
    # new ids are random, so the rows found by them afterwards are exactly those this call wrote;
    # when every row was written (a settlement's grants, new by its own row) none is looked up.
    # Plain rows (on PostgreSQL a COPY, or a COPY into a staging table and one INSERT should a
    # grant be there already): model instances cost several times the insert.
    inserted = bulk.insert_rows(model=Grant, columns=_GRANT_COLUMNS, rows=rows, conflict=_GRANT_KEY, fresh=True)
    written = set(ids)
    if inserted != len(rows):
        written = set()
        for chunk in chunks(ids, GRANT_INSERT_BATCH):
            written.update(Grant.objects.filter(grant_id__in=chunk).values_list("grant_id", flat=True))
    game_slug = board.game.slug
    granted = [
        _granted(game_slug, board.slug, window, period_id, grant_id, spec, now, expires_at)
        for grant_id, spec in zip(ids, grants, strict=True)
        if grant_id in written
    ]
    outbox.events_emit(granted)
    return len(granted)


def _granted(
    game: str,
    board: str,
    window: str,
    period_id: str,
    grant_id: str,
    spec: GrantSpec,
    granted_at: dt.datetime,
    expires_at: dt.datetime,
) -> outbox.RewardGranted:
    return outbox.RewardGranted(
        game=game,
        leaderboard=board,
        window=window,
        period_id=period_id,
        player_id=spec.player_id,
        grant_id=grant_id,
        cohort=spec.cohort,
        tier=spec.tier,
        rank=spec.rank,
        reward=spec.reward,
        granted_at=clock.iso(granted_at),
        expires_at=clock.iso(expires_at),
    )


def grant_claim(*, game: GameRef, grant_id: str, now: dt.datetime) -> Grant:
    """Claim the game's grant ``grant_id`` at ``now``: pending becomes claimed exactly once (one
    conditional UPDATE, so of any number of concurrent claims one wins), with its
    ``reward.claimed`` event; a grant claimed already answers as it is (the same ``claimed_at``).
    422 invalid for a malformed id, 404 reward_not_found for none (or another game's), 410
    reward_expired once ``expires_at`` has passed, whether or not the sweep marked it yet."""
    if not is_grant_id(grant_id):
        raise errors.invalid("grant_id", GRANT_ID_MESSAGE)
    with transaction.atomic():
        won = Grant.objects.filter(grant_id=grant_id, game_id=game.id, status=Pending, expires_at__gt=now).update(
            status=Claimed, claimed_at=now
        )
        # Read after the write, in its transaction: the row as this claim (or an earlier one) left it.
        grant = Grant.objects.select_related("board").filter(grant_id=grant_id, game_id=game.id).first()
        if grant is None:
            raise errors.reward_not_found(grant_id=grant_id)
        if won:
            outbox.event_emit(_claimed(game.slug, grant))
    if grant.status == Claimed:
        return grant
    raise errors.reward_expired(grant_id=grant_id, expires_at=grant.expires_at)


def _claimed(game: str, grant: Grant) -> outbox.RewardClaimed:
    assert grant.claimed_at is not None
    return outbox.RewardClaimed(
        game=game,
        leaderboard=grant.board.slug,
        window=grant.window,
        period_id=grant.period_id,
        player_id=grant.player_id,
        grant_id=grant.grant_id,
        reward=grant.reward,
        claimed_at=clock.iso(grant.claimed_at),
    )


def grants_expire(*, now: dt.datetime, limit: int) -> int:
    """Mark up to ``limit`` pending grants whose window ended by ``now`` expired, oldest window
    first, ``GRANT_EXPIRE_BATCH`` per transaction, each with its ``reward.expired``; returns how
    many. A grant a claim holds at that moment is left to the next run (or to the claim)."""
    expired = 0
    while expired < limit:
        size = min(GRANT_EXPIRE_BATCH, limit - expired)
        done = _expire_batch(now, size)
        expired += done
        if done < size:
            break
    return expired


def _expire_batch(now: dt.datetime, size: int) -> int:
    with transaction.atomic():
        # Locked, and rows a claim holds skipped: their claim decides them (PostgreSQL; SQLite
        # runs one writing transaction at a time anyway).
        due = list(
            Grant.objects.select_for_update(skip_locked=True, of=("self",))
            .select_related("board", "game")
            .filter(status=Pending, expires_at__lte=now)
            .order_by("expires_at", "id")[:size]
        )
        if not due:
            return 0
        Grant.objects.filter(pk__in=[grant.pk for grant in due], status=Pending).update(status=Expired)
        outbox.events_emit([_expired(grant, now) for grant in due])
    return len(due)


def _expired(grant: Grant, now: dt.datetime) -> outbox.RewardExpired:
    return outbox.RewardExpired(
        game=grant.game.slug,
        leaderboard=grant.board.slug,
        window=grant.window,
        period_id=grant.period_id,
        player_id=grant.player_id,
        grant_id=grant.grant_id,
        reward=grant.reward,
        expires_at=clock.iso(grant.expires_at),
        expired_at=clock.iso(now),
    )


def player_grants_forget(*, game_id: int, player_id: str) -> int:
    """An erased player's rewards, claimed or not, go with them (moderation's erasure, in its
    transaction): nobody else's standing depends on them. Returns how many went."""
    deleted, _ = Grant.objects.filter(game_id=game_id, player_id=player_id).delete()
    return deleted
