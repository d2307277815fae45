"""Erasing a player (moderation.services.player_erase, ``manage.py erase_player``): nothing
of them is left anywhere but the erasure's own marks, and everyone else is untouched."""

from __future__ import annotations

import datetime as dt
import io
import json
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from accounts import services as account_services
from accounts.models import PlayerLink
from archive import ledger
from archive.ledger import rebuild
from archive.models import ArchivedPeriod, ArchivedStanding, ScoreEvent
from archive.services import period_archive
from core import keys
from core.audit import Actor
from core.config import GameConfig
from core.errors import ServiceError
from core.models import AuditEntry, DeadLetter, Game, Player
from core.redis import get_redis, run_sync
from games import periods, selectors, services
from games.scripts import game as game_scripts
from live import services as live_services
from moderation import services as moderation
from presence import services as presence_services
from tests.conftest import clock_at

pytestmark = pytest.mark.django_db

# Monday 2026-03-02 10:00 UTC: a daily board that ends today, a weekly one that runs on.
MONDAY = dt.datetime(2026, 3, 2, 10, 0, tzinfo=dt.UTC)
ERASED, NAME = "alice-7", "Alice Wonder"


def config_of(game: Game) -> GameConfig:
    return GameConfig.from_model(game, "0")


def submit(game: Game, player_id: str, score: int, now: dt.datetime, name: str | None = None, key: str = "") -> None:
    config = config_of(game)
    idempotency = services.Idempotency("abcd1234", key, "fp-" + key) if key else None
    with clock_at(now):
        run_sync(
            lambda: services.score_submit(
                game=config,
                board=config.boards[0],
                player_id=player_id,
                score=score,
                display_name=name,
                idempotency=idempotency,
            )
        )


async def _dump(slug: str) -> dict[str, Any]:
    """Every key of the game and what it holds, as text."""
    client = get_redis()
    found: dict[str, Any] = {}
    for pattern in keys.game_patterns(slug):
        async for key in client.scan_iter(match=pattern):
            kind = await client.type(key)
            if kind == "string":
                found[key] = await client.get(key)
            elif kind == "hash":
                found[key] = await client.hgetall(key)
            elif kind == "zset":
                found[key] = await client.zrange(key, 0, -1, withscores=True)
            elif kind == "set":
                found[key] = sorted(await client.smembers(key))
            elif kind == "list":
                found[key] = await client.lrange(key, 0, -1)
            else:
                found[key] = await client.xrange(key)
    return found


def traces(slug: str, *needles: str) -> dict[str, Any]:
    """The keys whose name or content mentions any needle (the erasure's own marks aside)."""
    dump = run_sync(_dump, slug)
    dump.pop(keys.erased(slug), None)
    stream = keys.ledger(keys.board_ref(slug, "main"))
    if stream in dump:
        dump[stream] = [entry for entry in dump[stream] if entry[1].get("k") != "erase"]
    return {k: v for k, v in dump.items() if any(n in k or n in json.dumps(v, default=str) for n in needles)}


def settle(game: Game) -> None:
    """What runs in the background within seconds: the ledger drain, the presence announcer."""
    ledger.ledger_drain()
    with clock_at(MONDAY):
        run_sync(lambda: presence_services.presence_claim_changes(game=config_of(game), announcer="b1"))


def board(game: Game, period: str, now: dt.datetime) -> list[tuple[int, str, int]]:
    config = config_of(game)
    with clock_at(now):
        page = run_sync(lambda: selectors.leaderboard_page(board=config.boards[0], period=period))
    return [(e.rank, e.player_id, e.score) for e in page.entries]


@pytest.fixture
def game(make_game) -> Game:
    return make_game("tetris", max_submissions_per_minute=10, periods_kept=["daily", "weekly", "all-time"])


def live_everywhere(game: Game, django_user_model: Any) -> None:
    """The erased player everywhere a player can be: boards of an archived (kept) period and
    of current ones, names, recent list, idempotency records, presence, follows, link codes,
    an account link, score events in the table and in the stream, an archived standing."""
    yesterday = MONDAY - dt.timedelta(days=1)
    submit(game, ERASED, 50, yesterday, "Al")
    submit(game, "bob", 40, yesterday, "Bob")
    submit(game, "carol", 60, yesterday, "Carol")
    ledger.ledger_drain()
    with clock_at(MONDAY):
        period_archive(
            board=game.leaderboards.get(), period="daily", period_id=periods.current("daily", "UTC", yesterday).id
        )
    services.players_sync_pending()
    services.player_rename(player=Player.objects.get(game=game, player_id=ERASED), display_name="Ally", reason="typo")
    submit(game, ERASED, 70, MONDAY, NAME, key="retry-1")
    submit(game, "bob", 30, MONDAY)
    config = config_of(game)
    with clock_at(MONDAY):
        run_sync(lambda: presence_services.page_beat(game=config, player_id=ERASED, socket_id="tab-1"))
        run_sync(lambda: live_services.live_follow(game=config, player_ids=[ERASED, "bob"]))
        code = run_sync(lambda: account_services.link_code_issue(game=config, player_id=ERASED)).code
        user = django_user_model.objects.create_user("fan", password="pw-long-enough-1")
        account_services.link_code_redeem(user=user, game=game, code=code, ip="10.0.0.1")
        run_sync(lambda: account_services.link_code_issue(game=config, player_id=ERASED))  # one left unredeemed


def test_it_leaves_nothing_of_the_player_in_redis_or_the_database(game, django_user_model):
    live_everywhere(game, django_user_model)
    assert traces("tetris", ERASED, NAME)  # the check finds what is there

    with clock_at(MONDAY):
        erased = moderation.player_erase(game=game, player_id=ERASED, reason="GDPR request #12", by=Actor("dpo"))

    # Only what is on its way: the stream's entries not stored yet, and the leave the
    # broadcaster announces (so that open pages drop the player).
    assert set(traces("tetris", ERASED, NAME, "Ally")) == {keys.ledger("tetris.main"), keys.presence_left("tetris")}
    ledger.ledger_drain()
    with clock_at(MONDAY):
        announced = run_sync(lambda: presence_services.presence_claim_changes(game=config_of(game), announcer="b1"))
    assert announced is not None and announced.left == [ERASED]
    assert traces("tetris", ERASED, NAME, "Ally") == {}
    assert not Player.objects.filter(player_id=ERASED).exists()
    assert not PlayerLink.objects.filter(player_id=ERASED).exists()
    assert not ScoreEvent.objects.filter(player_id=ERASED).exists()
    assert (erased.boards, erased.links, erased.other["idempotency records"], erased.other["online"]) == (5, 1, 1, 1)
    # The stream still held Monday's score: the drain stored it, then dropped it at the tombstone.
    assert not ScoreEvent.objects.filter(player_id=ERASED).exists()
    assert ScoreEvent.objects.filter(player_id="bob").count() == 2


def test_it_keeps_everyone_elses_ranks_and_the_archived_rank_under_deleted_player(game, django_user_model):
    live_everywhere(game, django_user_model)
    with clock_at(MONDAY):
        moderation.player_erase(game=game, player_id=ERASED, reason="GDPR request #12")

    assert board(game, "all-time", MONDAY) == [(1, "carol", 60), (2, "bob", 40)]
    assert board(game, "weekly", MONDAY) == [(1, "bob", 30)]
    archived = ArchivedPeriod.objects.get(game=game, period="daily")
    rows = list(ArchivedStanding.objects.filter(archived_period=archived).values_list("rank", "display_name", "score"))
    assert sorted(rows) == [(1, "Carol", 60), (2, "deleted player", 50), (3, "Bob", 40)]
    assert not ArchivedStanding.objects.filter(player_id=ERASED).exists()
    # The stand-in ids are no player's: no page, no lookup finds them.
    stand_in = ArchivedStanding.objects.get(display_name="deleted player").player_id
    assert stand_in.startswith("~")
    response = Client().get(f"/games/tetris/players/{ERASED}/")
    assert response.status_code == 404


def test_it_records_the_erasure_and_forgets_the_names_in_the_trail(game, django_user_model):
    live_everywhere(game, django_user_model)
    with clock_at(MONDAY):
        moderation.player_erase(game=game, player_id=ERASED, reason="GDPR request #12", by=Actor("dpo"))

    entry = AuditEntry.objects.get(action=AuditEntry.Action.ERASE)
    assert (entry.actor_name, entry.game_slug, entry.player_id, entry.reason) == (
        "dpo",
        "tetris",
        ERASED,
        "GDPR request #12",
    )
    assert entry.at == MONDAY
    assert entry.detail["score events"] == 1 and entry.detail["standings anonymised"] == 1
    rename = AuditEntry.objects.get(action=AuditEntry.Action.RENAME)
    assert (rename.player_id, rename.reason, rename.detail) == (ERASED, "typo", {})


def test_it_starts_a_new_player_when_the_id_scores_again(game, django_user_model):
    live_everywhere(game, django_user_model)
    with clock_at(MONDAY):
        moderation.player_erase(game=game, player_id=ERASED, reason="GDPR")
    later = MONDAY + dt.timedelta(minutes=5)

    submit(game, ERASED, 5, later, key="retry-1")  # the old record is gone: applied anew

    assert board(game, "all-time", later) == [(1, "carol", 60), (2, "bob", 40), (3, ERASED, 5)]
    ledger.ledger_drain()
    assert list(ScoreEvent.objects.filter(player_id=ERASED).values_list("value", flat=True)) == [5]
    services.players_sync_pending()
    assert Player.objects.get(player_id=ERASED).display_name == ERASED


def test_it_survives_a_rebuild_and_a_data_loss(game, django_user_model):
    live_everywhere(game, django_user_model)
    with clock_at(MONDAY):
        moderation.player_erase(game=game, player_id=ERASED, reason="GDPR")
        ledger.leaderboards_rebuild(game=game)
    assert board(game, "all-time", MONDAY) == [(1, "carol", 60), (2, "bob", 40)]

    run_sync(lambda: get_redis().flushdb())
    with clock_at(MONDAY):
        ledger.leaderboards_rebuild(game=game)
    assert board(game, "all-time", MONDAY) == [(1, "carol", 60), (2, "bob", 40)]
    assert traces("tetris", ERASED, NAME, "Ally") == {}


@pytest.mark.parametrize("moment", ["replaying", "restoring names"])
def test_it_erases_a_player_whose_scores_a_running_rebuild_has_read(game, monkeypatch, moment):
    """The erasure lands while a rebuild runs: the rebuild meets its tombstone in the stream,
    and its name restore does not bring the name back."""
    for i, player in enumerate([ERASED, "bob", "carol"]):
        submit(game, player, 10 + i, MONDAY, player.title())
    ledger.ledger_drain()
    submit(game, ERASED, 100, MONDAY)  # still in the stream when the rebuild starts

    def erase() -> None:
        if not AuditEntry.objects.exists():
            with clock_at(MONDAY):
                moderation.player_erase(game=game, player_id=ERASED, reason="GDPR")

    def progress(done: int, total: int) -> None:
        if moment == "replaying" and done == total:
            erase()

    if moment == "restoring names":
        names = rebuild._names

        def erase_then_read_names(*args):
            erase()
            return names(*args)

        monkeypatch.setattr(rebuild, "_names", erase_then_read_names)
    with clock_at(MONDAY):
        ledger.leaderboards_rebuild(game=game, progress=progress)

    assert AuditEntry.objects.filter(action=AuditEntry.Action.ERASE).exists()
    assert board(game, "weekly", MONDAY) == [(1, "carol", 12), (2, "bob", 11)]
    settle(game)
    assert traces("tetris", ERASED) == {}


def test_it_deletes_the_row_a_player_sync_wrote_back_after_the_erasure(game):
    submit(game, ERASED, 10, MONDAY, NAME)
    # The sync read the pending player, then the erasure ran before it wrote the row.
    raw = run_sync(lambda: game_scripts.pending_players_read(get_redis(), slug="tetris", batch=100))
    with clock_at(MONDAY):
        moderation.player_erase(game=game, player_id=ERASED, reason="GDPR")
    Player.objects.create(game=game, player_id=ERASED, display_name=NAME, first_seen_at=MONDAY)
    erased_again = run_sync(lambda: game_scripts.pending_players_ack(get_redis(), slug="tetris", players=raw[:1]))

    assert erased_again == [ERASED]


def test_it_deletes_the_players_dead_letters(game):
    submit(game, ERASED, 10, MONDAY, NAME)
    DeadLetter.objects.create(game=game, source="players", key=ERASED, payload="{}", error="refused", created_at=MONDAY)
    DeadLetter.objects.create(
        game=game,
        source="ledger",
        key="1-0",
        payload=json.dumps({"k": "submit", "p": ERASED}),
        error="x",
        created_at=MONDAY,
    )
    DeadLetter.objects.create(
        game=game,
        source="ledger",
        key="2-0",
        payload=json.dumps({"k": "submit", "p": "bob"}),
        error="x",
        created_at=MONDAY,
    )
    with clock_at(MONDAY):
        moderation.player_erase(game=game, player_id=ERASED, reason="GDPR")

    assert list(DeadLetter.objects.values_list("key", flat=True)) == ["2-0"]


@pytest.mark.parametrize(
    ("player_id", "reason", "status", "field"),
    [("nobody", "GDPR", 404, None), ("bad id!", "GDPR", 422, "player_id"), (ERASED, "  ", 422, "reason")],
)
def test_it_refuses_what_it_cannot_erase_and_changes_nothing(game, player_id, reason, status, field):
    submit(game, ERASED, 10, MONDAY, NAME)
    before = run_sync(_dump, "tetris")

    with pytest.raises(ServiceError) as refused, clock_at(MONDAY):
        moderation.player_erase(game=game, player_id=player_id, reason=reason)

    assert (refused.value.status, refused.value.field) == (status, field)
    assert run_sync(_dump, "tetris") == before
    assert not AuditEntry.objects.exists()


def test_the_command_erases_and_reports(game):
    submit(game, ERASED, 10, MONDAY, NAME)
    out = io.StringIO()
    with clock_at(MONDAY):
        call_command("erase_player", "tetris", ERASED, "--reason", "GDPR request #9", stdout=out)

    assert f"Erased {ERASED} from tetris" in out.getvalue()
    settle(game)
    assert traces("tetris", ERASED) == {}
    assert AuditEntry.objects.get().actor_name == "manage.py erase_player"
    with pytest.raises(CommandError, match="no player"), clock_at(MONDAY):
        call_command("erase_player", "tetris", ERASED, "--reason", "again")
    with pytest.raises(CommandError, match="no game"):
        call_command("erase_player", "nope", ERASED, "--reason", "GDPR")
