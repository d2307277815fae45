"""A league's game and player pages (issue 22), server-rendered: the period's line with when it
settles, the ladder in words, a cohort's table with its promotion and demotion lines, the period's
cohorts a page at a time, the signed-in player's "if it ended now", and on a player's page their
tier with its history, their cohort now and their rewards. Every link answers 200."""

from __future__ import annotations

from urllib.parse import urlencode, urljoin

import pytest
from django.test import Client

from competitions.selectors import pages, settlement
from core import config
from core.redis import run_sync
from tests.competitions.league_pages import (
    API,
    BOARD,
    GAME,
    LADDER,
    LEAGUE,
    ME,
    League,
    link_user,
    links,
    make_game,
    make_league,
    ok,
    play,
    text_of,
)

pytestmark = pytest.mark.django_db(transaction=True)

PAGE = f"/games/{GAME}/?board={BOARD}"


@pytest.fixture
def league() -> League:
    return make_league()


def get(client: Client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    return response.content.decode()


def test_it_says_when_a_period_settles_after_its_review_buffer(league):
    line = text_of(get(Client(), PAGE), "data-competition>", "</p>")
    assert "ends 9 Mar 00:00 UTC · settles 9 Mar 01:00 UTC" in line

    ok(Client(), "put", f"{API}/now", league.manage, {**LEAGUE, "name": "Now", "settle_delay_secs": 0})
    assert "settles" not in text_of(get(Client(), f"/games/{GAME}/?board=now"), "data-competition>", "</p>")


def test_it_shows_the_ladder_top_first_with_each_tiers_lines_in_words(league):
    html = get(link_user(league), PAGE)
    ladder = text_of(html, '<ol class="ladder">', "</ol>")
    assert ladder == (
        "Gold top tier ▼ bottom 1 goes down "
        "Silver you start ▲ top 2 go up ▼ bottom 20% go down "
        "Bronze ▲ top 2 go up bottom tier"
    )
    assert '<li class="is-yours" aria-current="true">' in html


def test_it_draws_the_lines_on_the_signed_in_players_cohort(league):
    html = get(link_user(league), PAGE)
    table = text_of(html, "data-live-cohort")
    assert "Your cohort: Silver 1 5 entrants" in table
    # Nia and Bea go up, the line under them; the last entrant has no score: the demotion line
    # falls under the last row with one.
    rows = text_of(html, "<tbody>", "</tbody>")
    assert rows == (
        "1 Nia 50 2 Bea 40 ▲ Promotion line: above it, up to Gold 3 n2 30 4 n4 5 "
        "▼ Demotion line: below it, down to Bronze 1 entrant without a score yet"
    )
    assert text_of(html, 'class="cohort-legend"', "</p>") == (
        "▲ Top 2 go up to Gold ▼ Bottom 20% go down to Bronze, and with them everyone without a score"
    )
    assert 'data-player-id="p2" data-move="up" class="is-me" aria-current="true"' in html
    assert f'href="/games/{GAME}/players/n2/?board={BOARD}&amp;period=weekly"' in html


def test_it_shows_the_signed_in_player_their_period_if_it_ended_now(league):
    html = get(link_user(league), PAGE)
    assert text_of(html, "data-outlook>", "</aside>") == (
        "If it ended now #2 of 5 in Silver 1 ▲ Up to Gold Reward: coins: 20 "
        "As this page loaded. It settles 9 Mar 01:00 UTC."
    )
    # Not entered, then held for a balanced split: said, not previewed.
    html = get(link_user(league, "stranger"), PAGE)
    assert "You have not entered 2026-W10: join it in the game" in text_of(html, "data-outlook>", "</aside>")
    # A visitor is asked to link their player.
    listed = text_of(get(Client(), PAGE), "cohort-list-title", "</nav>")
    assert "Link your player to see your own cohort here" in listed


def test_it_previews_each_entrant_as_the_settlements_preview_does(league):
    # Ties, a player below min_scores and entrants without a score, in a cohort of five.
    board_settings = {**LEAGUE, "name": "Ties", "min_scores": 2, "cohort_by": "tier"}
    ok(Client(), "put", f"{API}/ties", league.manage, board_settings)
    play(league, {"a": 10, "b": 10, "c": 10, "d": 5, "e": None, "f": 7, "g": 7, "h": None}, board="ties")
    ok(Client(), "post", f"{API}/ties/scores", league.submit, {"player_id": "a", "score": 11})
    for slug in (BOARD, "ties"):
        game = run_sync(lambda: config.get_game(GAME))
        board = game.board_named(slug) if game is not None else None
        assert board is not None
        whole = run_sync(
            lambda board=board: settlement.settlement_preview(
                board=board, period="weekly", cohort=None, player_id=None, offset=0, limit=1000
            )
        )
        for entry in whole.entries:
            mine = run_sync(lambda board=board, e=entry: settlement.player_preview(board=board, player_id=e.player_id))
            assert mine == entry, (slug, entry.player_id)
        assert run_sync(lambda board=board: settlement.player_preview(board=board, player_id="nobody")) is None


def test_it_shows_a_cups_cohort_and_reward_without_tiers_or_lines(league):
    html = get(link_user(league), f"/games/{GAME}/?board=cup")
    assert text_of(html, 'id="cohorts-title"', "</h2>") == "Cohorts · 2026-W10"
    assert text_of(html, "<tbody>", "</tbody>") == "1 Bea 35 2 c1 20 1 entrant without a score yet"
    assert "cohort-line" not in html and "cohort-legend" not in html and "ladder" not in html
    assert text_of(html, "data-outlook>", "</aside>") == (
        "If it ended now #1 of 3 in Cohort 1 Reward: gems: 5 As this page loaded. It ends 9 Mar 00:00 UTC."
    )
    # On the player's page: their cohort on the cup, beside their league.
    html = get(Client(), f"/games/{GAME}/players/{ME}/?board=cup")
    assert text_of(html, 'data-competing="cup"') == "Weekly cup Cohort in 2026-W10 Cohort 1: #1 of 3"
    # Then the league a settlement placed her in.
    assert html.index('data-competing="cup"') < html.index('data-competing="league"')
    assert "Tier Silver since 2026-W09" in text_of(html, 'data-competing="league"')


def test_it_pages_a_long_cohort_with_its_lines_where_they_fall():
    league = make_game()
    ladder = [LADDER[0], {**LADDER[1], "demote": "10"}, LADDER[2]]
    ok(Client(), "put", f"{API}/{BOARD}", league.manage, {**LEAGUE, "cohort_size": 60, "tiers": ladder})
    play(league, {f"x{n:02d}": 100 - n for n in range(1, 61)})  # x01 first ... x60 last
    # Silver: the top 2 go up, the bottom 10 down: ranks 51 to 60, the whole second page. The
    # line between the pages is drawn under the first and above the second.
    first = text_of(get(Client(), f"{PAGE}&cohort=silver-1"), "<tbody>", "</tbody>")
    assert first.startswith("1 x01 99 2 x02 98 ▲ Promotion line: above it, up to Gold 3 x03 97")
    assert first.endswith("50 x50 50 ▼ Demotion line: below it, down to Bronze")
    second = text_of(get(Client(), f"{PAGE}&cohort=silver-1&cohort_page=2"), "<tbody>", "</tbody>")
    assert second.startswith("▼ Demotion line: below it, down to Bronze 51 x51 49")
    assert second.endswith("60 x60 40") and "Promotion" not in second
    html = get(Client(), f"{PAGE}&cohort=silver-1&cohort_page=9")  # past the end: the last page
    assert "Page 2 of 2" in text_of(html, 'aria-label="Pages of Silver 1"', "</nav>")


def test_it_lists_the_periods_cohorts_a_page_at_a_time():
    league = make_game()
    ok(Client(), "put", f"{API}/{BOARD}", league.manage, {**LEAGUE, "cohort_size": 2})
    play(league, {f"x{n:02d}": n for n in range(1, 46)})  # 23 cohorts of silver

    html = get(Client(), PAGE)
    listed = text_of(html, 'class="card cohort-list"', "</nav>")
    assert listed.startswith("23 cohorts in 2026-W10 Choose a cohort to see its race, with the lines")
    assert "Silver 1 · 2 Silver 2 · 2" in listed
    assert "Silver 20 · 2 1 of 2 Later →" in listed and "Silver 21" not in listed
    assert html.count('<li><a href="?period=weekly&amp;cohort=') == pages.COHORT_LINKS_MAX

    html = get(Client(), f"{PAGE}&cohorts_page=2")
    assert "Silver 23 · 1 ← Earlier 2 of 2" in text_of(html, 'class="card cohort-list"', "</nav>")
    # Past the end: the last page.
    assert "Silver 23 · 1" in text_of(get(Client(), f"{PAGE}&cohorts_page=99"), 'class="card cohort-list"', "</nav>")

    html = get(Client(), f"{PAGE}&cohort=silver-23")
    assert "Silver 23 1 entrant" in text_of(html, "data-live-cohort")


@pytest.mark.parametrize("asked", ["silver-9", "gold-0", "nope", "x" * 300, "%00", "silver-1\x07"])
def test_it_says_a_cohort_the_period_has_not_without_failing(league, asked):
    response = Client().get(f"{PAGE}&{urlencode({'cohort': asked})}")
    assert response.status_code == 200
    html = response.content.decode()
    if "\x07" in asked:
        assert 'role="alert"' not in html  # a control character names nothing: no table asked for
    else:
        assert "has no cohort “" in html
    assert "data-live-cohort" not in html


def test_it_shows_the_cohorts_on_the_competing_window_only(league):
    two = {**LEAGUE, "name": "Two windows", "windows": ["daily", "weekly"], "competition_window": "weekly"}
    ok(Client(), "put", f"{API}/two", league.manage, two)
    html = get(Client(), f"/games/{GAME}/?board=two")
    assert "data-cohorts" not in html
    assert "Cohorts race on the weekly board: see the cohorts of 2026-W10 →" in text_of(
        html, 'class="cohorts-elsewhere"', "</p>"
    )
    assert "data-cohorts" in get(Client(), f"/games/{GAME}/?board=two&period=weekly")


def test_it_shows_a_players_tier_history_cohort_and_rewards_on_their_page(league):
    html = get(Client(), f"/games/{GAME}/players/p1/?board={BOARD}")
    assert text_of(html, 'data-competing="league"') == (
        "Weekly league Tier Gold since 2026-W09 Cohort in 2026-W10 Gold 1: #1 of 2 "
        "Period Move Rank 2026-W09 ▲ up to Gold #2 Silver 1"
    )
    rewards = text_of(html, 'class="card rewards"')
    assert rewards == ("Rewards coins: 20 #2 in Weekly league, 2026-W09 Pending: claim by 1 Apr 2026 01:02 UTC")

    html = get(Client(), f"/games/{GAME}/players/p5/?board={BOARD}")
    assert "coins: 100 #1 in Weekly league, 2026-W09 Claimed 4 Mar 2026 12:00 UTC" in text_of(
        html, 'class="card rewards"'
    )
    html = get(Client(), f"/games/{GAME}/players/p4/?board={BOARD}")
    assert "2026-W09 ▼ down to Bronze #5 Silver 1" in text_of(html, 'data-competing="league"')
    html = get(Client(), f"/games/{GAME}/players/p6/?board={BOARD}")
    assert "2026-W09 = stayed in Silver no score Silver 2" in text_of(html, 'data-competing="league"')
    assert "Cohort in 2026-W10 Silver 2: #1 of 3" in text_of(html, 'data-competing="league"')
    assert "No rewards yet." in text_of(html, 'class="card rewards"')

    # On the game's other board, the league is still listed: the player has a tier there.
    html = get(Client(), f"/games/{GAME}/players/p1/")
    assert 'data-competing="league"' in html


def test_it_answers_200_for_every_link_of_the_league_pages(league):
    for client in (Client(), link_user(league)):
        for start in (
            PAGE,
            f"{PAGE}&cohort=gold-1",
            f"{PAGE}&cohort=silver-2",
            f"/games/{GAME}/players/p1/?board={BOARD}",
            f"/games/{GAME}/players/p6/?board={BOARD}",
        ):
            for href in links(get(client, start)):
                if href.startswith(("/admin", "/accounts/logout", "/api/")):
                    continue
                target = urljoin(start, href)
                assert client.get(target).status_code == 200, (start, target)


def test_it_does_not_split_a_balanced_period_early_to_show_a_page():
    league = make_game()
    balanced = {**LEAGUE, "cohort_fill": "balanced", "entry_window_secs": 4 * 86400}
    ok(Client(), "put", f"{API}/{BOARD}", league.manage, balanced)
    play(league, {"p2": 5, "q": 7})
    html = get(link_user(league), PAGE)
    assert "your cohort is drawn 6 Mar 00:00 UTC" in text_of(html, "data-outlook>", "</aside>")
    assert "2 entrants wait for the split" in text_of(html, 'class="card cohort-list"', "</nav>")
    # Still held: nobody was placed by the page.
    status = ok(Client(), "get", f"{API}/{BOARD}/weekly/cohorts", league.submit)
    assert (status["held"], status["total"]) == (2, 0)
