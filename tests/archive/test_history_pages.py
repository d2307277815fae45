"""The history pages and the player's placement history, through the real ASGI stack."""

from __future__ import annotations

import datetime as dt
import re

import pytest

from archive import views as archive_views
from core.clock import now as clock_now
from games import periods
from tests.archive.test_archived_reads import archive_period, fill, new_game
from tests.live.test_pages import XSS_NAME, board_rows, text

pytestmark = pytest.mark.django_db(transaction=True)


def day_of(days_ago: int) -> tuple[dt.datetime, str]:
    at = clock_now() - dt.timedelta(days=days_ago)
    return at, periods.current("daily", "UTC", at).id


def day_start(day_id: str) -> dt.datetime:
    """When a daily period (UTC) starts."""
    starts_at = periods.parse("daily", day_id, "UTC").starts_at
    assert starts_at is not None
    return starts_at


def history_rows(content: bytes) -> list[tuple[str, str]]:
    """(period, period_id) of each row of the history list, in order."""
    return re.findall(r'<tr data-period="([^"]+)" data-period-id="([^"]+)">', content.decode())


async def archived_days(game, days_ago: list[int], scores: dict[str, int] | None = None) -> list[str]:
    ids = []
    for n in days_ago:
        at, day = day_of(n)
        await fill(game, at, scores or {"alice": n, "bob": 1})
        await archive_period(game, "daily", day)
        ids.append(day)
    return ids


# --------------------------------------------------------------------------- history list


async def test_it_lists_past_periods_newest_first_with_their_winner(make_game, aclient):
    game = await new_game(make_game)
    days = await archived_days(game, [3, 1, 2])
    week_at = clock_now() - dt.timedelta(days=21)
    await fill(game, week_at, {"carol": 50}, names={"carol": "Carol C"})
    week = periods.current("weekly", "UTC", week_at).id
    await archive_period(game, "weekly", week)

    response = await aclient.get("/games/tetris/history/")

    assert response.status_code == 200
    assert history_rows(response.content) == [
        ("daily", days[1]),
        ("daily", days[2]),
        ("daily", days[0]),
        ("weekly", week),
    ]
    page = text(response.content)
    assert f"Daily {days[1]}" in page
    assert "Carol C 50" in page
    assert f'href="/games/tetris/history/daily/{days[1]}/"' in response.content.decode()
    assert '<a class="tab" href="?" aria-current="page">All</a>' in response.content.decode()


async def test_it_filters_the_history_by_period_kind(make_game, aclient):
    game = await new_game(make_game)
    days = await archived_days(game, [1, 2])
    week_at = clock_now() - dt.timedelta(days=21)
    await fill(game, week_at, {"carol": 50})
    await archive_period(game, "weekly", periods.current("weekly", "UTC", week_at).id)

    response = await aclient.get("/games/tetris/history/?period=daily")

    assert history_rows(response.content) == [("daily", days[0]), ("daily", days[1])]
    assert '<a class="tab" href="?period=daily" aria-current="page">Daily</a>' in response.content.decode()


async def test_it_pages_the_history(make_game, aclient, monkeypatch):
    monkeypatch.setattr(archive_views, "HISTORY_PAGE_SIZE", 2)
    game = await new_game(make_game)
    days = await archived_days(game, [1, 2, 3, 4, 5])

    first = await aclient.get("/games/tetris/history/?period=daily")
    last = await aclient.get("/games/tetris/history/?period=daily&page=3")
    past_end = await aclient.get("/games/tetris/history/?period=daily&page=99")

    assert [i for _, i in history_rows(first.content)] == days[:2]
    assert "Page 1 of 3 · 5 periods" in text(first.content)
    assert 'href="?period=daily&amp;page=2"' in first.content.decode()
    assert [i for _, i in history_rows(last.content)] == days[4:]
    assert [i for _, i in history_rows(past_end.content)] == days[4:]


async def test_it_shows_an_empty_history(make_game, aclient):
    await new_game(make_game)

    response = await aclient.get("/games/tetris/history/?period=weekly")

    assert response.status_code == 200
    assert history_rows(response.content) == []
    assert "No finished weekly periods yet." in text(response.content)


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/games/nope/history/", "There is no game “nope”."),
        ("/games/tetris/history/?period=yearly", "Tetris has no “yearly” history"),
        ("/games/tetris/history/?period=season", "Tetris has no “season” history"),
        ("/games/tetris/history/?board=nope", "Tetris has no leaderboard “nope”"),
    ],
)
async def test_it_answers_an_unknown_history_with_a_404_page(make_game, aclient, path, message):
    await new_game(make_game)

    response = await aclient.get(path)

    assert response.status_code == 404
    assert message in text(response.content)
    assert "Back to all games" in text(response.content)


async def test_it_links_the_game_page_to_its_history(make_game, aclient):
    await new_game(make_game)

    weekly = await aclient.get("/games/tetris/?period=weekly")
    all_time = await aclient.get("/games/tetris/?period=all-time")

    assert 'href="/games/tetris/history/?period=weekly"' in weekly.content.decode()
    assert 'href="/games/tetris/history/"' in all_time.content.decode()


# --------------------------------------------------------------------------- one period


async def test_it_shows_a_periods_final_standings_paginated(make_game, aclient):
    game = await new_game(make_game)
    at, day = day_of(2)
    await fill(game, at, {f"p{i:02d}": 100 - i // 2 for i in range(60)}, names={"p00": "Champion"})
    await archive_period(game, "daily", day)

    first = await aclient.get(f"/games/tetris/history/daily/{day}/")
    second = await aclient.get(f"/games/tetris/history/daily/{day}/?page=2")

    assert first.status_code == 200
    rows = board_rows(first.content)
    assert len(rows) == 50
    assert (rows[0].rank, rows[0].name, rows[0].score) == ("1", "Champion", "100")
    assert (rows[1].rank, rows[2].rank) == ("1", "3")
    assert rows[0].href == "/games/tetris/players/p00/?period=daily"
    page = text(first.content)
    assert f"Daily {day}" in page
    assert day_start(day).strftime("%-d %b %Y") in page
    assert "60 players" in page and "Page 1 of 2" in page
    assert 'href="/games/tetris/history/?period=daily"' in first.content.decode()
    assert [r.name for r in board_rows(second.content)] == [f"p{i}" for i in range(50, 60)]


async def test_it_opens_the_page_of_a_player_and_marks_their_row(make_game, aclient):
    game = await new_game(make_game)
    at, day = day_of(2)
    await fill(game, at, {f"p{i:02d}": 100 - i for i in range(60)})
    await archive_period(game, "daily", day)

    response = await aclient.get(f"/games/tetris/history/daily/{day}/?player=p55")

    assert "Page 2 of 2" in text(response.content)
    marked = [r for r in board_rows(response.content) if "is-me" in r.classes]
    assert [(r.rank, r.name) for r in marked] == [("56", "p55")]
    assert 'href="?page=1&amp;player=p55"' in response.content.decode()


@pytest.mark.parametrize("which", ["not archived", "snapshot", "current", "bad kind", "bad id", "unknown game"])
async def test_it_answers_an_unarchived_period_with_a_404_page(make_game, aclient, which):
    game = await new_game(make_game)
    at, day = day_of(2)
    await fill(game, at, {"alice": 1})
    today = periods.current("daily", "UTC", clock_now()).id
    path = {
        "not archived": f"/games/tetris/history/daily/{day}/",
        "snapshot": f"/games/tetris/history/daily/{day}/",
        "current": f"/games/tetris/history/daily/{today}/",
        "bad kind": f"/games/tetris/history/all-time/{day}/",
        "bad id": "/games/tetris/history/daily/<b>/",
        "unknown game": f"/games/nope/history/daily/{day}/",
    }[which]
    if which == "snapshot":
        await archive_period(game, "daily", day, force=True, now=at)

    response = await aclient.get(path)

    assert response.status_code == 404
    page = text(response.content)
    assert "There is no game “nope”." in page if which == "unknown game" else "has no final" in page
    assert "<b>" not in response.content.decode()


async def test_it_escapes_names_on_history_pages(make_game, aclient):
    game = await new_game(make_game)
    at, day = day_of(2)
    await fill(game, at, {"evil": 10}, names={"evil": XSS_NAME})
    await archive_period(game, "daily", day)

    listing = await aclient.get("/games/tetris/history/")
    standings = await aclient.get(f"/games/tetris/history/daily/{day}/")
    player = await aclient.get("/games/tetris/players/evil/")

    for response in (listing, standings, player):
        assert response.status_code == 200
        assert XSS_NAME.encode() not in response.content
        assert b"&lt;img src=x onerror=alert(1)&gt;" in response.content


# --------------------------------------------------------------------------- the player page


def chart_points(content: bytes) -> list[tuple[float, float]]:
    svg = re.search(r'<figure class="placement-chart"[^>]*>.*?</figure>', content.decode(), re.S)
    assert svg is not None
    found = re.findall(r'<span class="chart-point" style="left: ([\d.]+)%; top: ([\d.]+)%"', svg[0])
    return [(float(x), float(y)) for x, y in found]


def placement_rows(content: bytes) -> list[list[str]]:
    section = re.search(r'<section class="placements".*?</section>', content.decode(), re.S)
    assert section is not None
    rows = re.findall(r"<tr>\s*(<td>.*?)</tr>", section[0], re.S)
    return [
        [" ".join(re.sub(r"<[^>]+>", " ", cell).split()) for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        for row in rows
    ]


async def test_it_shows_the_players_placement_history_with_a_chart(make_game, aclient):
    game = await new_game(make_game)
    # alice finishes 1st, 3rd and 2nd over three days (oldest first).
    boards = {4: {"alice": 9, "b": 1, "c": 0}, 3: {"alice": 1, "b": 5, "c": 4}, 2: {"alice": 5, "b": 9, "c": 0}}
    days = {}
    for n, scores in boards.items():
        at, days[n] = day_of(n)
        await fill(game, at, scores)
        await archive_period(game, "daily", days[n])
    await fill(game, clock_now(), {"alice": 1})

    response = await aclient.get("/games/tetris/players/alice/")

    assert response.status_code == 200
    assert [row[:3] for row in placement_rows(response.content)] == [
        [f"{days[2]} {day_start(days[2]).strftime('%a %-d %b %Y')}", "2 of 3", "5"],
        [f"{days[3]} {day_start(days[3]).strftime('%a %-d %b %Y')}", "3 of 3", "1"],
        [f"{days[4]} {day_start(days[4]).strftime('%a %-d %b %Y')}", "1 of 3", "9"],
    ]
    points = chart_points(response.content)
    assert len(points) == 3
    # Oldest on the left; rank 1 at the top (smallest y), the worst rank at the bottom.
    assert points[0][0] < points[1][0] < points[2][0]
    assert points[0][1] < points[2][1] < points[1][1]
    assert f'href="/games/tetris/history/daily/{days[2]}/?player=alice"' in response.content.decode()
    assert 'role="img"' in response.content.decode()
    assert "Rank in the last 3 daily periods: best #1, worst #3." in text(response.content)


async def test_it_spaces_the_chart_by_date_and_labels_its_time_axis(make_game, aclient):
    game = await new_game(make_game)
    # Three days with a gap: 12, 11 and 2 days ago.
    days = {}
    for n in (12, 11, 2):
        at, days[n] = day_of(n)
        await fill(game, at, {"alice": n, "b": 5})
        await archive_period(game, "daily", days[n])

    response = await aclient.get("/games/tetris/players/alice/")

    xs = [x for x, _ in chart_points(response.content)]
    assert xs == [0.0, 10.0, 100.0]  # one day of ten between the first two
    dates = re.findall(
        r'<span class="chart-date chart-date-(\w+)" style="left: ([\d.]+)%">([^<]+)</span>', response.content.decode()
    )
    label = "%-d %b"
    assert dates == [
        ("start", "0.00", day_start(days[12]).strftime(label)),
        ("end", "100.00", day_start(days[2]).strftime(label)),
    ]


async def test_it_shows_the_placements_of_the_shown_period_kind(make_game, aclient):
    game = await new_game(make_game)
    await archived_days(game, [2, 3])
    week_at = clock_now() - dt.timedelta(days=21)
    await fill(game, week_at, {"alice": 1})
    await archive_period(game, "weekly", periods.current("weekly", "UTC", week_at).id)

    weekly = await aclient.get("/games/tetris/players/alice/?period=weekly")
    all_time = await aclient.get("/games/tetris/players/alice/?period=all-time")

    assert len(chart_points(weekly.content)) == 1
    assert len(placement_rows(weekly.content)) == 1
    assert "The all-time board never closes." in text(all_time.content)
    assert "placement-chart" not in all_time.content.decode()


async def test_it_says_when_a_player_has_no_placement_history(make_game, aclient):
    game = await new_game(make_game)
    await fill(game, clock_now(), {"alice": 1})

    response = await aclient.get("/games/tetris/players/alice/")

    assert response.status_code == 200
    assert "No finished daily periods for alice yet." in text(response.content)
    assert "placement-chart" not in response.content.decode()


async def test_it_shows_a_player_with_history_and_no_current_score(make_game, aclient):
    game = await new_game(make_game, periods_kept=["daily", "weekly"])
    at, day = day_of(30)
    await fill(game, at, {"alice": 3}, names={"alice": "Alice"})
    await archive_period(game, "daily", day)
    await archive_period(game, "weekly", periods.current("weekly", "UTC", at).id)

    response = await aclient.get("/games/tetris/players/alice/")
    ghost = await aclient.get("/games/tetris/players/ghost/")

    assert response.status_code == 200
    page = text(response.content)
    assert "Alice" in page and "Daily — no score this period" in page
    assert len(chart_points(response.content)) == 1
    assert ghost.status_code == 404
