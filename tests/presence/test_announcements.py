"""Joins and leaves queued for the broadcaster (presence_claim_changes), and pruning:
each change goes to one claim, and two prunes at once never announce a leave twice."""

from __future__ import annotations

import asyncio
import datetime as dt
import threading
from collections import Counter

import pytest
from asgiref.sync import sync_to_async
from django.db import connections
from redis.exceptions import ResponseError

from core import config, keys
from core.clock import now as clock_now
from core.config import GameConfig
from core.models import Game
from core.redis import get_redis, run_sync
from games import services as game_services
from presence import selectors, services, tasks
from tests.conftest import clock_at
from tests.presence.conftest import at

pytestmark = pytest.mark.django_db(transaction=True)


async def claimed(game, now):
    with clock_at(now):
        changes = await services.presence_claim_changes(announcer="test", game=game)
    assert changes is not None
    return [p.player_id for p in changes.joined], changes.left


async def test_it_hands_each_change_to_one_claim_with_names_times_and_counts(presence_game):
    game = await presence_game()
    with clock_at(at(0)):
        await game_services.score_submit(game=game, board=game.boards[0], player_id="a", score=1, display_name="Ann")
    with clock_at(at(1)):
        await services.presence_report(game=game, online=["b"], offline=[])
    with clock_at(at(1)):
        await services.watcher_beat(game=game, socket_id="w")

    with clock_at(at(2)):
        first = await services.presence_claim_changes(announcer="test", game=game)
    assert first is not None
    assert [(p.player_id, p.display_name, p.last_seen) for p in first.joined] == [
        ("a", "Ann", at(0)),
        ("b", "b", at(1)),
    ]
    assert (first.version, first.online, first.watching, first.left) == (1, 2, 1, [])
    with clock_at(at(2)):
        second = await services.presence_claim_changes(announcer="test", game=game)
    assert second is not None
    assert (second.version, second.online, second.watching, second.joined, second.left) == (2, 2, 1, [], [])
    with clock_at(at(2)):
        assert (await selectors.presence_page(game=game)).version == 2


async def test_it_keeps_only_the_latest_change_of_a_player_between_claims(presence_game):
    # A leave replaces a join not yet announced (a page may show the player from its
    # snapshot), and a join replaces a leave: see games/lua/presence_update.lua.
    game = await presence_game()
    with clock_at(at(0)):
        await services.presence_report(game=game, online=["a", "b"], offline=[])
    with clock_at(at(1)):
        await services.presence_report(game=game, online=[], offline=["a"])
    assert await claimed(game, at(1)) == (["b"], ["a"])

    with clock_at(at(2)):
        await services.presence_report(game=game, online=[], offline=["b"])
    with clock_at(at(3)):
        await services.presence_report(game=game, online=["b"], offline=[])
    assert await claimed(game, at(3)) == (["b"], [])


async def test_it_announces_nothing_for_heartbeats_of_a_player_already_online(presence_game):
    game = await presence_game()
    with clock_at(at(0)):
        await services.presence_report(game=game, online=["a"], offline=[])
    await claimed(game, at(0))
    with clock_at(at(30)):
        await services.presence_report(game=game, online=["a"], offline=[])
    with clock_at(at(40)):
        await services.page_beat(game=game, player_id="a", socket_id="tab")
    with clock_at(at(50)):
        await game_services.score_submit(game=game, board=game.boards[0], player_id="a", score=1)
    assert await claimed(game, at(50)) == ([], [])


async def test_it_announces_the_leave_of_an_expired_player_once_when_pruned(presence_game):
    game = await presence_game()
    with clock_at(at(0)):
        await services.presence_report(game=game, online=["a", "b"], offline=[])
    with clock_at(at(30)):
        await services.presence_report(game=game, online=["b"], offline=[])
    assert await claimed(game, at(30)) == (["a", "b"], [])
    assert await claimed(game, at(61)) == ([], [])  # expiry alone is announced by the prune
    with clock_at(at(61)):
        assert await services.presence_prune(game=game) == ["a"]
    with clock_at(at(62)):
        assert await services.presence_prune(game=game) == []
    assert await claimed(game, at(62)) == ([], ["a"])
    assert await claimed(game, at(62)) == ([], [])


async def test_it_announces_the_leave_of_an_expired_player_told_offline(presence_game):
    """An expired player the prune has not reached yet, told offline: the prune will not
    see them any more, so this is the last chance to end them for a page that saw them join."""
    game = await presence_game()
    with clock_at(at(0)):
        await services.presence_report(game=game, online=["a"], offline=[])
    assert await claimed(game, at(0)) == (["a"], [])
    with clock_at(at(100)):
        await services.presence_report(game=game, online=[], offline=["a"])
    with clock_at(at(100)):
        await services.presence_prune(game=game)
    assert await claimed(game, at(100)) == ([], ["a"])


async def test_it_announces_at_most_a_tick_of_changes_per_claim(presence_game):
    game = await presence_game()
    players = [f"p{i:03}" for i in range(services.ANNOUNCE_MAX_PER_TICK + 5)]
    with clock_at(at(0)):
        await services.presence_report(game=game, online=players, offline=[])
    first, second = await claimed(game, at(0)), await claimed(game, at(0))
    assert (len(first[0]), len(second[0])) == (services.ANNOUNCE_MAX_PER_TICK, 5)
    assert sorted(first[0] + second[0]) == players


async def test_it_bounds_the_unannounced_changes(presence_game):
    game = await presence_game()
    with clock_at(at(0)):
        await services.presence_report(game=game, online=["a"], offline=[])
    with clock_at(at(0)):
        await services.presence_report(game=game, online=["b"], offline=[])
    with clock_at(at(1)):
        await services.presence_report(game=game, online=[], offline=["b"])
    for key in (keys.presence_joined(game.slug), keys.presence_left(game.slug)):
        assert 0 < await get_redis().pttl(key) <= services.PRESENCE_ANNOUNCE_TTL_MS, key


async def test_it_hands_each_change_to_one_of_two_claims_at_once(presence_game):
    game = await presence_game()
    players = [f"p{i}" for i in range(50)]
    with clock_at(at(0)):
        await services.presence_report(game=game, online=players, offline=[])
    with clock_at(at(1)):
        await services.presence_report(game=game, online=[], offline=players[:20])
    with clock_at(at(1)):
        claims = await asyncio.gather(*(services.presence_claim_changes(announcer="test", game=game) for _ in range(4)))
    announced = [c for c in claims if c is not None]  # one announcer: none is refused the lease
    assert len(announced) == len(claims)
    joined = Counter(p.player_id for c in announced for p in c.joined)
    left = Counter(p for c in announced for p in c.left)
    assert joined == Counter(players[20:]) and left == Counter(players[:20])


# --------------------------------------------------------------------------- prunes at once


async def test_it_announces_each_leave_once_when_two_prunes_run_at_once(presence_game, monkeypatch):
    # Small batches, so that the two prunes' loops interleave call by call.
    monkeypatch.setattr(services, "PRUNE_BATCH_MAX", 3)
    game = await presence_game()
    expiring = [f"p{i:02}" for i in range(40)]
    with clock_at(at(0)):
        await services.presence_report(game=game, online=expiring, offline=[])
    with clock_at(at(50)):
        await services.presence_report(game=game, online=["stays"], offline=[])
    joined, _ = await claimed(game, at(50))
    assert sorted(joined) == sorted([*expiring, "stays"])

    with clock_at(at(61)):
        removed = await asyncio.gather(*(services.presence_prune(game=game) for _ in range(2)))
    assert Counter(removed[0] + removed[1]) == Counter(expiring)
    left = [p for _ in range(3) for p in (await claimed(game, at(61)))[1]]
    assert Counter(left) == Counter(expiring)
    with clock_at(at(61)):
        page = await selectors.presence_page(game=game)
    assert (page.online, [p.player_id for p in page.players]) == (1, ["stays"])


def _in_thread(target, results, index):
    def run():
        try:
            results[index] = target()
        except BaseException as error:  # reported by the test thread
            results[index] = error
        finally:
            connections.close_all()  # PostgreSQL refuses to drop the test database while one is open

    return threading.Thread(target=run)


def _seen_long_ago(slug: str, players: list[str], timeout_secs: int) -> None:
    game = GameConfig.from_model(Game.objects.get(slug=slug), "0")
    long_ago = clock_now() - dt.timedelta(seconds=2 * timeout_secs)
    with clock_at(long_ago):
        run_sync(lambda: services.presence_report(game=game, online=players, offline=[]))


def test_it_announces_each_leave_once_when_two_beat_tasks_run_at_once(make_game, monkeypatch):
    monkeypatch.setattr(services, "PRUNE_BATCH_MAX", 4)
    make_game("tetris")
    inactive = make_game("chess")
    inactive.active = False
    inactive.save()
    expired = {slug: [f"{slug}-{i:02}" for i in range(30)] for slug in ("tetris", "chess")}
    for slug, players in expired.items():
        _seen_long_ago(slug, players, 60)

    results: list[object] = [None] * 3
    threads = [
        _in_thread(tasks.prune_presence, results, 0),
        _in_thread(tasks.prune_presence, results, 1),
        _in_thread(services.presence_prune_all, results, 2),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not [r for r in results if isinstance(r, BaseException)], results
    pruned = [r for r in results if isinstance(r, int)]
    assert len(pruned) == len(results) and sum(pruned) == 60, results

    for slug, players in expired.items():
        game = GameConfig.from_model(Game.objects.get(slug=slug), "0")
        left: list[str] = []
        for _ in range(3):
            claim = run_sync(lambda g=game: services.presence_claim_changes(announcer="test", game=g))
            assert claim is not None
            left += claim.left
        assert Counter(left) == Counter(players), slug
        assert run_sync(lambda g=game: get_redis().zcard(keys.presence_online(g.slug))) == 0


def test_it_prunes_games_in_pipelines_each_by_its_own_timeout(make_game, monkeypatch):
    monkeypatch.setattr(services, "PRUNE_GAMES_PER_PIPELINE", 2)
    monkeypatch.setattr(services, "PRUNE_BATCH_MAX", 3)
    # Seen 90 s ago: gone where the timeout is 60 s, still there where it is 120 s.
    timeouts = {"g1": 60, "g2": 120, "g3": 60, "g4": 120, "g5": 60}
    for slug, timeout in timeouts.items():
        make_game(slug, presence_timeout_secs=timeout)
        game = GameConfig.from_model(Game.objects.get(slug=slug), "0")
        with clock_at(clock_now() - dt.timedelta(seconds=90)):
            run_sync(
                lambda g=game, s=slug: services.presence_report(
                    game=g, online=[f"{s}-{i}" for i in range(7)], offline=[]
                )
            )

    assert tasks.prune_presence() == 3 * 7
    for slug, timeout in timeouts.items():
        online = run_sync(lambda s=slug: get_redis().zcard(keys.presence_online(s)))
        assert online == (7 if timeout == 120 else 0), slug
    assert tasks.prune_presence() == 0


def test_it_announces_the_games_it_pruned_when_another_games_prune_fails(make_game):
    for slug in ("g1", "g2", "g3"):
        make_game(slug, presence_timeout_secs=60)
        _seen_long_ago(slug, [f"{slug}-a", f"{slug}-b"], 60)
    # g2's presence set is not a sorted set any more (a stray write): its script call fails.
    run_sync(lambda: get_redis().delete(keys.presence_online("g2")))
    run_sync(lambda: get_redis().set(keys.presence_online("g2"), "not a zset"))
    run_sync(lambda: get_redis().delete(keys.live_presence_changes()))

    with pytest.raises(ResponseError):
        tasks.prune_presence()

    for slug in ("g1", "g3"):
        assert run_sync(lambda s=slug: get_redis().zcard(keys.presence_online(s))) == 0
    changed = run_sync(lambda: get_redis().zrange(keys.live_presence_changes(), 0, -1))
    assert sorted(changed) == ["g1", "g3"]


async def test_it_prunes_every_game_through_the_beat_task_active_or_not(make_game):
    await sync_to_async(make_game)("tetris", presence_timeout_secs=30)
    chess = await sync_to_async(make_game)("chess")
    chess.active = False
    await sync_to_async(chess.save)()
    await sync_to_async(_seen_long_ago)("tetris", ["a", "b"], 30)
    await sync_to_async(_seen_long_ago)("chess", ["c"], 60)
    tetris, inactive = await config.get_game("tetris"), await config.get_game("chess")
    assert tetris is not None and inactive is not None
    with clock_at(clock_now()):
        await services.presence_report(game=tetris, online=["fresh"], offline=[])
    await services.presence_claim_changes(announcer="test", game=tetris)
    await services.presence_claim_changes(announcer="test", game=inactive)

    assert await sync_to_async(tasks.prune_presence)() == 3
    # Memory: the online sets hold only who is online; the leaves are queued.
    assert await get_redis().zrange(keys.presence_online("tetris"), 0, -1) == ["fresh"]
    assert await get_redis().zrange(keys.presence_online("chess"), 0, -1) == []
    tetris_claim = await services.presence_claim_changes(announcer="test", game=tetris)
    inactive_claim = await services.presence_claim_changes(announcer="test", game=inactive)
    assert tetris_claim is not None and inactive_claim is not None
    assert (sorted(tetris_claim.left), inactive_claim.left) == (["a", "b"], ["c"])
    found = await selectors.player_presence(game=inactive, player_id="c")
    assert found.online is False and found.last_seen is not None
    assert await sync_to_async(tasks.prune_presence)() == 0


def test_it_schedules_the_prune_task_every_interval_setting(settings):
    from leaderboard_site.schedule import BEAT_SCHEDULE

    entry = BEAT_SCHEDULE["prune-presence"]
    assert entry["task"] == "presence.tasks.prune_presence" == tasks.prune_presence.name
    assert entry["schedule"] == float(settings.PRESENCE_PRUNE_INTERVAL_SECS)
