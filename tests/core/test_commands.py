"""Management commands: thin adapters that turn every bad input into a CommandError."""

from __future__ import annotations

import random
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from core import apikeys, config
from core.config import GameConfig
from core.models import ApiKey, Game, Leaderboard, Player, hash_secret
from core.redis import run_sync
from games import selectors
from games.management.commands import seed_demo
from presence import selectors as presence_selectors

# The API-key check reads the database from the Redis bridge thread: rows must be committed.
pytestmark = pytest.mark.django_db(transaction=True)


def run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_it_creates_a_game_with_every_option_and_no_board():
    out, _ = run(
        "creategame",
        "tetris",
        "--name",
        "Tetris",
        "--timezone",
        "Europe/Paris",
        "--description",
        "Falling blocks",
        "--max-per-minute",
        "10",
        "--presence-timeout",
        "90",
    )
    assert out == "Created game tetris; add a board with: manage.py createleaderboard tetris SLUG\n"
    game = Game.objects.get(slug="tetris")
    assert (game.name, game.timezone, game.description) == ("Tetris", "Europe/Paris", "Falling blocks")
    assert (game.max_submissions_per_minute, game.presence_timeout_secs) == (10, 90)
    assert not game.leaderboards.exists()


def test_it_creates_a_leaderboard_with_every_option():
    run("creategame", "racer", "--name", "Racer", "--timezone", "Europe/Paris")
    out, _ = run(
        "createleaderboard",
        "racer",
        "track-1",
        "--name",
        "Track 1",
        "--mode",
        "best",
        "--order",
        "asc",
        "--windows",
        "weekly, custom",
        "--cron",
        "0 18 * * FRI",
        "--starts-at",
        "2026-11-01T00:00Z",
        "--ends-at",
        "2027-03-01T00:00+01:00",
        "--ties",
        "earliest",
        "--format",
        "time_ms",
        "--min-score",
        "1",
        "--max-score",
        "3600000",
        "--timezone",
        "America/New_York",
    )
    assert out == "Created leaderboard racer/track-1 (weekly, custom)\n"
    board = Leaderboard.objects.get(game__slug="racer", slug="track-1")
    assert (board.name, board.mode, board.order, board.windows, board.cron) == (
        "Track 1",
        "best",
        "asc",
        ["weekly", "custom"],
        "0 18 * * FRI",
    )
    assert (board.ties, board.format, board.min_score, board.max_score, board.zone_name) == (
        "earliest",
        "time_ms",
        1,
        3_600_000,
        "America/New_York",
    )
    assert board.starts_at is not None and board.ends_at is not None
    assert (board.starts_at.isoformat(), board.ends_at.isoformat()) == (
        "2026-11-01T00:00:00+00:00",
        "2027-02-28T23:00:00+00:00",
    )


def test_it_defaults_a_board_to_the_four_windows_in_the_games_zone():
    run("creategame", "snake", "--name", "Snake", "--timezone", "Asia/Tokyo")
    run("createleaderboard", "snake", "points")
    board = Leaderboard.objects.get(slug="points")
    assert (board.name, board.windows, board.zone_name, board.mode, board.order, board.ties, board.format) == (
        "Points",
        ["daily", "weekly", "monthly", "all-time"],
        "Asia/Tokyo",
        "best",
        "desc",
        "shared",
        "integer",
    )


def test_it_makes_a_board_with_any_tie_rule_on_every_window_without_bounds():
    run("creategame", "arcade", "--name", "Arcade")
    run(
        "createleaderboard",
        "arcade",
        "hi",
        "--ties",
        "subscore",
        "--subscore-order",
        "asc",
        "--windows",
        "daily,all-time",
    )
    board = Leaderboard.objects.get(slug="hi")
    assert (board.ties, board.subscore_order, board.min_score, board.max_score) == ("subscore", "asc", None, None)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--mode", "highest"], "invalid choice: 'highest'"),
        (["--order", "up"], "invalid choice: 'up'"),
        (["--windows", "daily,yearly"], "--windows: Unknown windows: yearly"),
        (["--windows", "daily,daily"], "--windows: Each window may appear once."),
        (["--windows", ","], "--windows: Choose at least one window."),
        (["--timezone", "Mars/Olympus"], "--timezone: 'Mars/Olympus' is not an IANA time zone name"),
        (["--min-score", "10", "--max-score", "5"], "--max-score: Must not be below the minimum."),
        (["--min-score", "ten"], "invalid int value: 'ten'"),
        (["--windows", "custom", "--cron", "61 * * * *"], "--cron: '61 * * * *' is not a valid cron expression"),
        (["--windows", "custom", "--cron", "0 18 * *"], "--cron: '0 18 * *' is not a 5-field cron expression"),
        (["--windows", "custom", "--cron", "*/5 * * * *"], "a custom window lasts at least 60 minutes"),
        (["--windows", "custom"], "--cron: The custom window needs a cron expression, or a season"),
        (["--cron", "0 18 * * FRI"], "--cron: A cron expression needs the custom window."),
        (["--starts-at", "yesterday"], "--starts-at: 'yesterday' is not an ISO 8601 time"),
        (["--ends-at", "2026-12-01T00:00"], "--ends-at: '2026-12-01T00:00' has no offset"),
        (
            ["--starts-at", "2026-12-01T00:00Z", "--ends-at", "2026-11-01T00:00Z"],
            "--ends-at: The season must end after it starts.",
        ),
        (["--format", "hex"], "--format: 'hex' is not a format"),
        (["--ties", "first"], "argument --ties: invalid choice: 'first'"),
        (["--ties", "subscore", "--subscore-order", "up"], "argument --subscore-order: invalid choice: 'up'"),
    ],
)
def test_it_refuses_bad_board_options_with_a_clear_message(extra, message):
    run("creategame", "tetris", "--name", "Tetris")
    with pytest.raises(CommandError) as caught:
        run("createleaderboard", "tetris", "main", *extra)
    assert message in str(caught.value)
    assert not Leaderboard.objects.exists()


def test_it_refuses_bad_game_options_with_a_clear_message():
    with pytest.raises(CommandError, match="--timezone: 'Mars/Olympus' is not an IANA time zone name"):
        run("creategame", "tetris", "--name", "Tetris", "--timezone", "Mars/Olympus")
    with pytest.raises(CommandError, match="--max-per-minute: must be 0"):
        run("creategame", "tetris", "--name", "Tetris", "--max-per-minute", "-1")
    assert not Game.objects.exists()


def test_it_refuses_a_board_of_an_unknown_game_or_a_taken_slug():
    with pytest.raises(CommandError, match="No game 'nope'"):
        run("createleaderboard", "nope", "main")
    run("creategame", "tetris", "--name", "Tetris")
    run("createleaderboard", "tetris", "main")
    with pytest.raises(CommandError, match="tetris already has a leaderboard 'main'"):
        run("createleaderboard", "tetris", "main", "--mode", "increment")
    assert Leaderboard.objects.get().mode == "best"


@pytest.mark.parametrize("slug", ["Tetris", "-tetris", "tetris-", "te_tris", "t" * 51])
def test_it_refuses_a_bad_slug(slug):
    with pytest.raises(CommandError) as caught:
        run("creategame", "--name", "Tetris", "--", slug)
    assert str(caught.value).startswith("SLUG: ")
    assert not Game.objects.exists()


def test_it_reports_every_problem_at_once():
    with pytest.raises(CommandError) as caught:
        run("creategame", "Bad Slug", "--name", "x", "--timezone", "Nowhere")
    lines = str(caught.value).splitlines()
    assert [line.split(":")[0] for line in lines] == ["SLUG", "--timezone"]


def test_it_refuses_a_duplicate_slug():
    run("creategame", "tetris", "--name", "Tetris")
    with pytest.raises(CommandError, match=r"A game with slug 'tetris' already exists\."):
        run("creategame", "tetris", "--name", "Tetris again")
    assert Game.objects.get().name == "Tetris"


def test_it_requires_a_name():
    with pytest.raises(CommandError, match="--name"):
        run("creategame", "tetris")


def test_it_prints_only_the_new_key_and_the_key_works(make_game):
    make_game("tetris")
    out, err = run("createapikey", "tetris", "--name", "eu-servers", "--requests-per-minute", "120")
    raw = out.rstrip("\n")
    assert out.count("\n") == 1 and raw.startswith("lbk_") and " " not in raw
    api_key = ApiKey.objects.get()
    assert (api_key.name, api_key.requests_per_minute) == ("eu-servers", 120)
    assert raw.split("_")[1] == api_key.prefix and raw not in err
    assert api_key.secret_hash == hash_secret(raw.split("_", 2)[2]) != raw
    assert api_key.scope == "submit" and "(submit)" in err

    authorized = run_sync(lambda: apikeys.request_authorize(raw_key=raw, game_slug="tetris"))
    assert authorized.api_key.prefix == api_key.prefix
    assert authorized.rate_headers["RateLimit-Policy"] == '"api-key";q=120;w=60, "items";q=60000;w=60'


def test_it_creates_a_manage_key_when_asked(make_game):
    make_game("tetris")
    out, err = run("createapikey", "tetris", "--scope", "manage")
    assert ApiKey.objects.get().scope == "manage" and "(manage)" in err and out.startswith("lbk_")
    with pytest.raises(CommandError, match="invalid choice: 'admin'"):
        run("createapikey", "tetris", "--scope", "admin")


def test_it_refuses_a_key_for_an_unknown_game():
    with pytest.raises(CommandError, match="No game 'nope'"):
        run("createapikey", "nope")
    assert not ApiKey.objects.exists()


def test_it_refuses_a_key_with_no_requests_per_minute(make_game):
    make_game("tetris")
    with pytest.raises(CommandError, match="--requests-per-minute: "):
        run("createapikey", "tetris", "--requests-per-minute", "0")
    assert not ApiKey.objects.exists()


def daily_board(slug: str = seed_demo.DEMO_SLUG, period: str = "daily", limit: int = 400) -> selectors.Board:
    game = GameConfig.from_model(Game.objects.get(slug=slug), "0")
    return run_sync(lambda: selectors.leaderboard_page(board=game.boards[0], period=period, limit=limit))


def test_it_seeds_the_demo_once():
    out, _ = run("seed_demo")
    assert out == "Seeded game demo with 300 players (" + out.split("(")[1]
    game = Game.objects.get(slug="demo")
    board = game.leaderboards.get()
    assert (game.name, board.slug, board.mode, board.order, board.windows) == (
        "Demo Arena",
        "main",
        "best",
        "desc",
        ["daily", "weekly", "monthly", "all-time"],
    )
    assert "demo data" in game.description.lower() or "fictional" in game.description
    # The seed ran without the anti-spam limit and leaves the usual one.
    assert game.max_submissions_per_minute == seed_demo.DEMO_MAX_SUBMISSIONS_PER_MINUTE

    daily = daily_board()
    assert daily.total == 300
    names = {e.player_id: e.display_name for e in daily.entries}
    assert len(names) == 300 and all(names.values())
    assert len({e.rank for e in daily.entries}) < 300, "some players tie"
    assert Player.objects.filter(game=game).count() == 300
    assert dict(Player.objects.filter(game=game).values_list("player_id", "display_name")) == names
    # Seeded scores are history, not players at their keyboards: nobody is online yet.
    config_ = GameConfig.from_model(game, "0")
    presence = run_sync(lambda: presence_selectors.presence_page(game=config_, limit=5))
    assert presence.online == 0
    assert "`" not in game.description
    # Two-word names are split between their words, never inside one.
    for name in names.values():
        if " " in name:
            first, second = name.split(" ")
            # (a name drawn twice gets a number after it)
            assert first in seed_demo._PREFIXES and second.rstrip("0123456789") in seed_demo._SUFFIXES, name
    # Earlier days were played too: all-time keeps some players' better, older scores.
    all_time = {e.player_id: e.score for e in daily_board(period="all-time").entries}
    assert sum(all_time[e.player_id] > e.score for e in daily.entries) > 10

    config.invalidate()
    before = [(e.player_id, e.score) for e in daily_board().entries]
    out, _ = run("seed_demo")
    assert out == "Demo game already present\n"
    assert Game.objects.filter(slug="demo").count() == 1
    assert Player.objects.count() == 300
    assert [(e.player_id, e.score) for e in daily_board().entries] == before


def test_it_seeds_the_same_demo_on_every_machine():
    assert seed_demo.gamer_names(random.Random(42), 500) == seed_demo.gamer_names(random.Random(42), 500)
    run("seed_demo", "--players", "650")
    assert daily_board(limit=1000).total == 650


def test_it_refuses_a_bad_player_count():
    with pytest.raises(CommandError, match="--players: must be between 1 and"):
        run("seed_demo", "--players", "0")
    assert not Game.objects.exists()


def test_it_refuses_a_presence_timeout_out_of_range():
    with pytest.raises(CommandError, match="--presence-timeout: Ensure this value is greater than or equal to 30"):
        run("creategame", "snake", "--name", "Snake", "--presence-timeout", "5")
    assert not Game.objects.filter(slug="snake").exists()
