"""Game servers' heartbeats and offlines (presence_report) and the reads that follow,
with an injected clock: the inclusive window, last-seen times, order, paging, bad input."""

from __future__ import annotations

import pytest

from core.errors import ServiceError
from presence import selectors, services
from presence.services import Reported
from tests.conftest import clock_at
from tests.presence.conftest import at, redis_state

pytestmark = pytest.mark.django_db(transaction=True)


async def presence_of(game, player_id, now):
    with clock_at(now):
        found = await selectors.player_presence(game=game, player_id=player_id)
    return found.online, found.last_seen


async def online_ids(game, now, **paging):
    with clock_at(now):
        page = await selectors.presence_page(game=game, **paging)
    return [p.player_id for p in page.players]


async def test_it_counts_a_player_online_until_the_window_passes_boundary_included(presence_game):
    game = await presence_game(presence_timeout_secs=60)
    with clock_at(at(0)):
        assert await services.presence_report(game=game, online=["a"], offline=[]) == Reported(1, 0, 1, 0)

    for now, online in ((at(0), True), (at(59.999), True), (at(60), True), (at(60.001), False)):
        assert await presence_of(game, "a", now) == (online, at(0)), now
        with clock_at(now):
            page = await selectors.presence_page(game=game)
        assert (page.online, [p.player_id for p in page.players]) == ((1, ["a"]) if online else (0, [])), now
        with clock_at(now):
            assert await selectors.online_among(game=game, player_ids=["a", "b"]) == ({"a"} if online else set())


async def test_it_answers_with_the_game_timeout(presence_game):
    game = await presence_game(presence_timeout_secs=30)
    with clock_at(at(0)):
        await services.presence_report(game=game, online=["a"], offline=[])
    assert await presence_of(game, "a", at(30)) == (True, at(0))
    assert await presence_of(game, "a", at(30.001)) == (False, at(0))


async def test_it_moves_last_seen_with_each_heartbeat_and_never_back(presence_game):
    game = await presence_game()
    with clock_at(at(10)):
        await services.presence_report(game=game, online=["a"], offline=[])
    with clock_at(at(40)):
        assert await services.presence_report(game=game, online=["a"], offline=[]) == Reported(1, 0, 0, 0)
    assert await presence_of(game, "a", at(40)) == (True, at(40))
    # A late request carrying an older time does not move it back.
    with clock_at(at(20)):
        assert await services.presence_report(game=game, online=["a"], offline=[]) == Reported(1, 0, 0, 0)
    assert await presence_of(game, "a", at(100)) == (True, at(40))


async def test_it_counts_a_heartbeat_after_the_window_as_a_join(presence_game):
    game = await presence_game()
    with clock_at(at(0)):
        await services.presence_report(game=game, online=["a"], offline=[])
    with clock_at(at(61)):
        assert await services.presence_report(game=game, online=["a"], offline=[]) == Reported(1, 0, 1, 0)
    assert await presence_of(game, "a", at(61)) == (True, at(61))


async def test_it_takes_a_player_offline_at_once_last_seen_then(presence_game):
    game = await presence_game()
    with clock_at(at(0)):
        await services.presence_report(game=game, online=["a", "b"], offline=[])
    with clock_at(at(5)):
        assert await services.presence_report(game=game, online=[], offline=["a"]) == Reported(0, 1, 0, 1)
    assert await presence_of(game, "a", at(5)) == (False, at(5))
    assert await online_ids(game, at(5)) == ["b"]
    # A heartbeat brings them back.
    with clock_at(at(6)):
        assert await services.presence_report(game=game, online=["a"], offline=[]) == Reported(1, 0, 1, 0)
    assert await presence_of(game, "a", at(6)) == (True, at(6))


async def test_it_reports_a_player_never_seen_offline_with_no_last_seen_and_stores_nothing(presence_game):
    game = await presence_game()
    before = await redis_state()
    with clock_at(at(0)):
        assert await services.presence_report(game=game, online=[], offline=["ghost"]) == Reported(0, 1, 0, 0)
    assert await presence_of(game, "ghost", at(0)) == (False, None)
    assert await redis_state() == before


async def test_it_reads_the_same_whether_or_not_a_prune_ran(presence_game):
    pruned, unpruned = await presence_game("pruned"), await presence_game("unpruned")
    for game in (pruned, unpruned):
        with clock_at(at(0)):
            await services.presence_report(game=game, online=["a", "b", "c"], offline=[])
        with clock_at(at(50)):
            await services.presence_report(game=game, online=["b"], offline=[])
    with clock_at(at(100)):
        assert await services.presence_prune(game=pruned) == ["a", "c"]
    for now in (at(100), at(110), at(110.001)):
        for player_id in ("a", "b", "c", "ghost"):
            assert await presence_of(pruned, player_id, now) == await presence_of(unpruned, player_id, now)
        with clock_at(now):
            page_of_pruned = await selectors.presence_page(game=pruned)
        with clock_at(now):
            page_of_unpruned = await selectors.presence_page(game=unpruned)
        assert (page_of_pruned.online, page_of_pruned.players) == (page_of_unpruned.online, page_of_unpruned.players)
    assert await presence_of(pruned, "a", at(100)) == (False, at(0))


async def test_it_reads_the_same_whether_or_not_a_prune_ran_before_an_offline(presence_game):
    """An expired player told offline: the answer must not depend on whether the prune task
    got to them first (pruned: last seen when the heartbeats stopped)."""
    pruned, unpruned = await presence_game("pruned"), await presence_game("unpruned")
    for game in (pruned, unpruned):
        with clock_at(at(0)):
            await services.presence_report(game=game, online=["a"], offline=[])
    with clock_at(at(100)):
        await services.presence_prune(game=pruned)
    for game in (pruned, unpruned):
        with clock_at(at(100)):
            await services.presence_report(game=game, online=[], offline=["a"])
    assert await presence_of(pruned, "a", at(100)) == (False, at(0))
    assert await presence_of(unpruned, "a", at(100)) == await presence_of(pruned, "a", at(100))


async def test_it_forgets_a_last_seen_time_after_the_keep_window_whether_or_not_a_prune_ran(presence_game):
    keep = services.PRESENCE_LAST_SEEN_KEEP_SECS
    pruned, unpruned = await presence_game("pruned"), await presence_game("unpruned")
    for game in (pruned, unpruned):
        with clock_at(at(0)):
            await services.presence_report(game=game, online=["a"], offline=[])
        with clock_at(at(1)):
            await services.presence_report(game=game, online=[], offline=["a"])
    with clock_at(at(1 + keep)):
        await services.presence_prune(game=pruned)
    assert await presence_of(pruned, "a", at(1 + keep)) == (False, at(1))
    past_keep = at(1 + keep + 0.001)
    with clock_at(past_keep):
        await services.presence_prune(game=pruned)
    assert await presence_of(pruned, "a", past_keep) == (False, None)
    assert await presence_of(unpruned, "a", past_keep) == (False, None)


async def test_it_lists_the_most_recently_seen_first_ties_in_reverse_byte_order(presence_game):
    game = await presence_game()
    with clock_at(at(0)):
        await services.presence_report(game=game, online=["a", "B", "a1", "_u", "0"], offline=[])
    with clock_at(at(1)):
        await services.presence_report(game=game, online=["z"], offline=[])
    with clock_at(at(0.5)):
        await services.presence_report(game=game, online=["m"], offline=[])
    # ZREVRANGEBYSCORE: equal times fall in reverse byte order of the player id.
    assert await online_ids(game, at(2)) == ["z", "m", "a1", "a", "_u", "B", "0"]
    with clock_at(at(2)):
        page = await selectors.presence_page(game=game)
    assert [p.last_seen for p in page.players] == [at(1), at(0.5), *[at(0)] * 5]
    assert [p.display_name for p in page.players] == [p.player_id for p in page.players]


async def test_it_pages_the_online_players(presence_game):
    game = await presence_game()
    for i in range(7):
        with clock_at(at(i)):
            await services.presence_report(game=game, online=[f"p{i}"], offline=[])
    everyone = ["p6", "p5", "p4", "p3", "p2", "p1", "p0"]
    for offset in range(9):
        for limit in (1, 3, 50):
            with clock_at(at(10)):
                page = await selectors.presence_page(game=game, offset=offset, limit=limit)
            assert (page.online, page.offset) == (7, offset)
            assert [p.player_id for p in page.players] == everyone[offset : offset + limit], (offset, limit)
    # The window cuts the list and the count alike: p0..p2 were last seen more than 60 s before.
    with clock_at(at(63)):
        page = await selectors.presence_page(game=game, offset=1, limit=50)
    assert (page.online, [p.player_id for p in page.players]) == (4, ["p5", "p4", "p3"])


async def test_it_takes_repeated_ids_once(presence_game):
    game = await presence_game()
    with clock_at(at(0)):
        got = await services.presence_report(game=game, online=["a", "a", "b"], offline=["c", "c"])
    assert got == Reported(2, 1, 2, 0)
    assert await online_ids(game, at(0)) == ["b", "a"]


async def test_it_accepts_an_empty_report_and_stores_nothing(presence_game):
    game = await presence_game()
    before = await redis_state()
    with clock_at(at(0)):
        assert await services.presence_report(game=game, online=[], offline=[]) == Reported(0, 0, 0, 0)
    assert await redis_state() == before


@pytest.mark.parametrize(
    ("online", "offline", "field"),
    [
        (["a", "b", "c", "bad id"], [], "online[3]"),
        (["a"], ["", "b"], "offline[0]"),
        (["x" * 65], [], "online[0]"),
        ([7], [], "online[0]"),
        ([None], [], "online[0]"),
        (["<b>"], [], "online[0]"),
        (["a\n"], [], "online[0]"),  # '$' of a Python regex matches before a final newline
        (["a"], ["a\n"], "offline[0]"),
        (["a", "b"], ["b"], "offline"),
        ([f"p{i}" for i in range(600)], [f"q{i}" for i in range(401)], "online"),
    ],
    ids=["bad-char", "empty", "too-long", "int", "null", "markup", "newline", "newline-offline", "both", "1001"],
)
async def test_it_refuses_bad_ids_naming_the_field_and_changes_nothing(presence_game, online, offline, field):
    game = await presence_game()
    with clock_at(at(0)):
        await services.presence_report(game=game, online=["a"], offline=[])
    before = await redis_state()
    with pytest.raises(ServiceError) as refused, clock_at(at(1)):
        await services.presence_report(game=game, online=online, offline=offline)
    assert (refused.value.status, refused.value.code, refused.value.field) == (422, "invalid", field)
    assert refused.value.message
    assert await redis_state() == before


async def test_it_accepts_a_thousand_ids_in_all(presence_game):
    game = await presence_game()
    online, offline = [f"p{i}" for i in range(600)], [f"q{i}" for i in range(400)]
    with clock_at(at(0)):
        assert await services.presence_report(game=game, online=online, offline=offline) == Reported(600, 400, 600, 0)
    with clock_at(at(0)):
        assert (await selectors.presence_page(game=game)).online == 600
