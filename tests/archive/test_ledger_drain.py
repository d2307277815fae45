"""ledger_drain: the ledger stream copied to ScoreEvent exactly once, whatever crashes in between."""

from __future__ import annotations

import datetime as dt
import json
import logging
from typing import cast

import pytest
from redis.typing import EncodableT, FieldT

from archive import ledger
from archive.ledger import drain
from archive.models import ScoreEvent
from core import keys
from core.config import GameConfig
from core.errors import ServiceError
from core.models import MAX_SAFE_SCORE, DeadLetter, Game
from core.redis import get_redis, run_sync
from games import services
from tests import redis_replies
from tests.conftest import clock_at

pytestmark = pytest.mark.django_db

NOW = dt.datetime(2026, 11, 22, 12, 0, tzinfo=dt.UTC)


def config_of(game: Game) -> GameConfig:
    return GameConfig.from_model(game, "0")


def submit(
    game: Game, player_id: str, score: int, name: str | None = None, idempotency: services.Idempotency | None = None
) -> services.Submitted:
    config = config_of(game)
    return run_sync(
        lambda: services.score_submit(
            game=config,
            board=config.boards[0],
            player_id=player_id,
            score=score,
            display_name=name,
            idempotency=idempotency,
        )
    )


def submit_many(game: Game, items: list[services.Submission], now: dt.datetime = NOW) -> list:
    config = config_of(game)
    with clock_at(now):
        return run_sync(lambda: services.score_submit_many(game=config, items=items))


def stream(slug: str = "tetris") -> list[tuple[str, dict[str, str]]]:
    return run_sync(lambda: redis_replies.entries(keys.ledger(keys.board_ref(slug, "main"))))


def rows(slug: str = "tetris") -> list[tuple]:
    return list(
        ScoreEvent.objects.filter(game__slug=slug)
        .order_by("stream_ms", "stream_seq")
        .values_list("event_id", "kind", "player_id", "value", "display_name", "mode", "at")
    )


def expected(entries: list[tuple[str, dict[str, str]]]) -> list[tuple]:
    return [
        (
            event_id,
            f["k"],
            f["p"],
            int(f["v"]),
            f["n"],
            f["m"],
            dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(milliseconds=int(f["t"])),
        )
        for event_id, f in entries
    ]


def pending(slug: str = "tetris") -> int:
    return run_sync(lambda: get_redis().xpending(keys.ledger(keys.board_ref(slug, "main")), ledger.LEDGER_GROUP))[
        "pending"
    ]


def read_without_ack(consumer: str, slug: str = "tetris") -> list[tuple[str, dict[str, str]]]:
    """What a drain that crashed before its XACK left behind: entries delivered to ``consumer``, unacknowledged."""
    reply = run_sync(
        lambda: get_redis().xreadgroup(
            ledger.LEDGER_GROUP, consumer, {keys.ledger(keys.board_ref(slug, "main")): ">"}, count=100
        )
    )
    # The suite speaks RESP2: [[stream, [(id, fields), ...]]]. redis-py annotates every protocol's shape at once.
    streams = cast("list[tuple[str, list[tuple[str, dict[str, str]]]]]", reply)
    return streams[0][1] if streams else []


def stored_row(game: Game, event_id: str, fields: dict[str, str]) -> ScoreEvent:
    """The row the drain stores for an entry a submission appended (always a score event)."""
    row = ledger.event_row(game.pk, game.leaderboards.get().pk, event_id, fields)
    assert isinstance(row, ScoreEvent), (event_id, fields)
    return row


@pytest.fixture
def game(make_game) -> Game:
    return make_game("tetris", mode="increment", max_submissions_per_minute=0)


def test_it_copies_every_applied_submission_in_stream_order(make_game):
    games = {
        "inc": make_game("inc", mode="increment", max_submissions_per_minute=0),
        "best": make_game("best", mode="best", order="asc", max_submissions_per_minute=0),
        "last": make_game("last", mode="latest", max_submissions_per_minute=0),
    }
    for game in games.values():
        with clock_at(NOW):
            submit(game, "a", 5, "Ann")
        with clock_at(NOW + dt.timedelta(seconds=1)):
            submit(game, "b", -3)
        submit_many(
            game,
            [
                services.Submission("c", 7, "Cy", leaderboard="main"),
                services.Submission("a", 2, leaderboard="main"),
                services.Submission("a", 9, "", leaderboard="main"),
            ],
            now=NOW + dt.timedelta(seconds=2),
        )
    appended = {slug: stream(slug) for slug in games}
    assert ledger.ledger_drain() == 15
    for slug in games:
        assert len(appended[slug]) == 5
        assert rows(slug) == expected(appended[slug])
        assert stream(slug) == []
        assert [r[2:5] for r in rows(slug)] == [
            ("a", 5, "Ann"),
            ("b", -3, ""),
            ("c", 7, "Cy"),
            ("a", 2, ""),
            ("a", 9, ""),
        ]
        assert {r[1] for r in rows(slug)} == {"submit"}
        assert {r[5] for r in rows(slug)} == {GameConfig.from_model(games[slug], "0").boards[0].mode}
        assert rows(slug)[0][6] == NOW
        assert pending(slug) == 0


def test_it_stores_nothing_twice(game):
    for i in range(5):
        submit(game, f"p{i}", i + 1)
    assert ledger.ledger_drain() == 5
    assert ledger.ledger_drain() == 0
    submit(game, "p0", 10)
    assert ledger.ledger_drain() == 1
    assert ScoreEvent.objects.count() == 6
    assert stream() == []  # what the table holds leaves the stream


def test_it_drains_in_batches_until_a_short_one(game):
    submit_many(game, [services.Submission(f"p{i}", 1, leaderboard="main") for i in range(25)])
    appended = stream()
    assert ledger.ledger_drain(batch_size=10) == 25
    assert rows() == expected(appended)
    assert pending() == 0


def test_it_delivers_again_what_a_crash_between_read_and_ack_left(game):
    ledger.ledger_drain(game=game, consumer="worker-1")  # the group exists, as in production
    for i in range(3):
        submit(game, f"p{i}", i + 1)
    assert len(read_without_ack("worker-1")) == 3
    assert pending() == 3
    appended = stream()
    # The same process, restarted under the same consumer name, reads its pending entries first.
    assert ledger.ledger_drain(consumer="worker-1") == 3
    assert rows() == expected(appended)
    assert pending() == 0


def test_it_stores_once_when_the_crash_came_after_the_insert(game):
    ledger.ledger_drain(game=game, consumer="worker-1")
    for i in range(3):
        submit(game, f"p{i}", i + 1)
    entries = read_without_ack("worker-1")
    appended = stream()
    # The rows were inserted, then the process died before its XACK.
    ScoreEvent.objects.bulk_create([stored_row(game, event_id, fields) for event_id, fields in entries])
    assert ledger.ledger_drain(consumer="worker-1") == 3  # handled again...
    assert ScoreEvent.objects.count() == 3  # ...and stored once
    assert rows() == expected(appended)
    assert pending() == 0


def test_it_takes_over_what_a_dead_consumer_held(game):
    ledger.ledger_drain(game=game, consumer="dead")
    submit(game, "a", 1)
    submit(game, "b", 2)
    read_without_ack("dead")
    appended = stream()
    # Not yet: the dead consumer might only be slow.
    assert ledger.ledger_drain(consumer="alive") == 0
    assert pending() == 2
    # Once the entries have been idle long enough, another consumer claims and stores them.
    assert ledger.ledger_drain(consumer="alive", claim_min_idle_ms=0) == 2
    assert rows() == expected(appended)
    assert pending() == 0


def test_it_takes_over_a_dead_consumers_backlog_a_batch_at_a_time(game):
    ledger.ledger_drain(game=game, consumer="dead")
    submit_many(game, [services.Submission(f"p{i}", 1, leaderboard="main") for i in range(25)])
    assert len(read_without_ack("dead")) == 25
    appended = stream()
    assert ledger.ledger_drain(consumer="alive", batch_size=10, claim_min_idle_ms=0) == 25
    assert rows() == expected(appended)
    assert pending() == 0


def test_it_stores_once_what_a_recreated_group_delivers_again(game):
    ledger.ledger_drain(game=game, consumer="worker-1")
    for i in range(3):
        submit(game, f"p{i}", i + 1)
    entries = read_without_ack("worker-1")
    appended = stream()
    # Two were stored, then the worker died before its XACK and the group was lost with it:
    # the recreated group hands all three out as new.
    ScoreEvent.objects.bulk_create([stored_row(game, event_id, fields) for event_id, fields in entries[:2]])
    run_sync(lambda: get_redis().xgroup_destroy(keys.ledger("tetris.main"), ledger.LEDGER_GROUP))

    assert ledger.ledger_drain(consumer="worker-2") == 3
    assert ScoreEvent.objects.count() == 3
    assert rows() == expected(appended)
    assert pending() == 0
    assert not DeadLetter.objects.exists()  # the two already stored were dropped, not refused


@pytest.mark.parametrize("loss", ["stream deleted", "group destroyed", "flushed"])
def test_it_recreates_a_lost_stream_or_group_and_carries_on(game, loss):
    submit(game, "a", 1)
    submit(game, "b", 2)
    assert ledger.ledger_drain() == 2
    stream_key = keys.ledger("tetris.main")
    if loss == "stream deleted":
        run_sync(lambda: get_redis().delete(stream_key))
    elif loss == "group destroyed":
        run_sync(lambda: get_redis().xgroup_destroy(stream_key, ledger.LEDGER_GROUP))
    else:
        run_sync(lambda: get_redis().flushdb())
    submit(game, "c", 3)
    # A destroyed group is recreated from the stream's start: the old entries come
    # again and are not stored twice.
    assert ledger.ledger_drain() == 1
    assert [r[2] for r in rows()] == ["a", "b", "c"]
    assert ScoreEvent.objects.count() == 3
    assert pending() == 0
    submit(game, "d", 4)
    assert ledger.ledger_drain() == 1


def test_it_recreates_a_group_lost_between_two_reads(game):
    submit(game, "a", 1)
    ledger.ledger_drain()
    submit(game, "b", 2)
    run_sync(lambda: get_redis().delete(keys.ledger("tetris.main")))
    # The own-pending read finds no group; the drain recreates it and goes on.
    assert ledger.ledger_drain(consumer="other") == 0
    submit(game, "c", 3)
    assert ledger.ledger_drain(consumer="other") == 1
    assert [r[2] for r in rows()] == ["a", "c"]


def test_it_leaves_replays_and_refusals_out_of_the_ledger(make_game):
    game = make_game("tetris", mode="increment", max_submissions_per_minute=2)
    idem = services.Idempotency("key1", "order-1", "fp")
    submit(game, "a", 5, idempotency=idem)
    submit(game, "a", 5, idempotency=idem)  # replayed: nothing applied
    with pytest.raises(ServiceError):
        submit(game, "a", 5, idempotency=services.Idempotency("key1", "order-1", "other"))
    submit(game, "a", 1)
    with pytest.raises(ServiceError):
        submit(game, "a", 1)  # over the per-player limit
    submit(game, "big", MAX_SAFE_SCORE)
    with pytest.raises(ServiceError):
        submit(game, "big", 1)  # overflow
    services.player_set_hidden(game=game, player_id="h", hidden=True)
    with pytest.raises(ServiceError):
        submit(game, "h", 1)
    with pytest.raises(ServiceError):
        submit(game, "bad id", 1)  # invalid: never reaches Redis
    assert ledger.ledger_drain() == 3
    assert [(r[2], r[3]) for r in rows()] == [("a", 5), ("a", 1), ("big", MAX_SAFE_SCORE)]


@pytest.mark.parametrize("reader", ["worker-1", "other"])
def test_it_acks_entries_trimmed_before_they_were_stored(game, caplog, reader):
    ledger.ledger_drain(game=game, consumer="worker-1")
    submit(game, "a", 1)
    read_without_ack("worker-1")
    run_sync(lambda: get_redis().xtrim(keys.ledger("tetris.main"), maxlen=0))
    with caplog.at_level(logging.ERROR, logger="archive.ledger"):
        # Read again by the consumer that held it, or taken over by another.
        assert ledger.ledger_drain(consumer=reader, claim_min_idle_ms=0) == 0
    assert "trimmed before it was stored" in caplog.text
    assert pending() == 0
    assert ScoreEvent.objects.count() == 0


def test_it_drops_long_idle_consumers_holding_nothing(game, monkeypatch):
    ledger.ledger_drain(game=game, consumer="gone")
    submit(game, "a", 1)
    read_without_ack("holding")
    monkeypatch.setattr(drain, "LEDGER_CONSUMER_IDLE_DROP_MS", 0)
    ledger.ledger_drain(consumer="current")
    consumers = run_sync(lambda: get_redis().xinfo_consumers(keys.ledger("tetris.main"), ledger.LEDGER_GROUP))
    # 'gone' held nothing; 'holding' keeps its entry until someone claims it.
    assert sorted(c["name"] for c in consumers) == ["current", "holding"]


def test_it_refuses_scores_rather_than_lose_them_when_the_backlog_is_full(game, settings):
    settings.LEDGER_STREAM_MAXLEN = 3
    ledger.ledger_drain()  # the group exists, as in production
    for i in range(3):
        submit(game, f"p{i}", 1)
    board_before = run_sync(lambda: get_redis().zrange(keys.board("tetris.main", "all-time", "all-time"), 0, -1))

    with pytest.raises(ServiceError) as refused:
        submit(game, "late", 1)

    assert (refused.value.status, refused.value.code, refused.value.headers) == (
        503,
        "ledger_full",
        {"Retry-After": "5"},
    )
    assert (
        run_sync(lambda: get_redis().zrange(keys.board("tetris.main", "all-time", "all-time"), 0, -1)) == board_before
    )
    # Once the drain has stored the backlog, the stream is empty again and scores go in.
    assert ledger.ledger_drain() == 3
    assert stream() == []
    submit(game, "late", 1)
    assert len(stream()) == 1


def test_it_keeps_entries_read_but_not_yet_stored_when_it_trims(game):
    ledger.ledger_drain(game=game, consumer="worker-1")
    submit(game, "a", 1)
    read_without_ack("worker-1")  # a drain that is still storing these
    submit(game, "b", 2)  # and one nobody has read yet

    ledger.ledger_drain(consumer="other")  # stores "b" only ("a" is not idle long enough)

    # Nothing from the oldest unstored entry on is trimmed, "b" included.
    assert [fields["p"] for _, fields in stream()] == ["a", "b"]
    assert ledger.ledger_drain(consumer="worker-1") == 1
    assert stream() == []


# --------------------------------------------------------------------------- entries it cannot store


def inject(fields: dict[str, str], slug: str = "tetris") -> str:
    """An entry written straight into the stream, as no script of the product writes one."""
    payload: dict[FieldT, EncodableT] = dict(fields.items())
    entry_id = run_sync(lambda: get_redis().xadd(keys.ledger(keys.board_ref(slug, "main")), payload))
    assert isinstance(entry_id, str)
    return entry_id


def entry(player_id: str, value: int | str, name: str = "") -> dict[str, str]:
    ms = str(int(NOW.timestamp() * 1000))
    return {"k": "submit", "p": player_id, "v": str(value), "n": name, "m": "increment", "t": ms}


def test_it_sets_aside_entries_it_cannot_store_and_goes_on(game):
    submit(game, "before", 1)
    past_a_bigint = inject(entry("huge", 2**70))  # an integer, but no column holds it
    garbage = inject({"k": "submit", "p": "nobody"})  # no value, no time: not the scripts' writing
    submit(game, "after", 2)

    assert ledger.ledger_drain() == 3

    assert [r[2] for r in rows()] == ["before", "after"]
    letters = {d.key: d for d in DeadLetter.objects.filter(game=game)}
    assert set(letters) == {past_a_bigint, garbage}
    assert letters[garbage].error.startswith("malformed entry: KeyError")
    assert json.loads(letters[past_a_bigint].payload)["v"] == str(2**70)
    assert {d.source for d in letters.values()} == {DeadLetter.Source.LEDGER}
    # Acknowledged and trimmed: the backlog the submit script caps holds none of them.
    assert stream() == [] and pending() == 0
    assert ledger.ledger_drain() == 0 and DeadLetter.objects.count() == 2


def test_it_never_lets_a_name_the_database_refuses_stop_the_ledger(game):
    """A NUL in a name (refused by the API since, but an entry may predate that): PostgreSQL
    refuses the row, so it is set aside; SQLite stores it. Either way the drain goes on."""
    poisoned = inject(entry("nul", 5, "bad\x00name"))
    submit(game, "after", 2)

    ledger.ledger_drain()

    stored = {r[2] for r in rows()}
    letters = set(DeadLetter.objects.values_list("key", flat=True))
    assert "after" in stored
    assert ("nul" in stored) != (poisoned in letters)
    assert stream() == [] and pending() == 0
