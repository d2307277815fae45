"""A competing board's rules in words (core/competition_words.py), as admin shows them."""

from __future__ import annotations

from core.competition_rules import competition_parse
from core.competition_words import duration_words, rules_in_words

LEAGUE = {
    "entry": "join",
    "max_entrants": 1000,
    "entry_window_secs": 86400,
    "max_attempts": 3,
    "cohort_size": 30,
    "cohort_fill": "balanced",
    "cohort_by": "tier",
    "tiers": [
        {"slug": "bronze", "name": "Bronze", "promote": "5"},
        {"slug": "silver", "name": "Silver", "promote": "20%", "demote": "3"},
        {"slug": "gold", "name": "Gold", "demote": "12.5%"},
    ],
    "start_tier": "silver",
    "min_scores": 2,
    "rewards": [
        {"tier": "gold", "from_rank": 1, "to_rank": 3, "reward": {"coins": 500}},
        {"from_rank": 1, "reward": {"coins": 100}},
        {"top_percent": 10, "reward": {"badge": "top"}},
    ],
    "claim_window_secs": 7 * 86400,
    "settle_delay_secs": 5400,
}


def test_it_says_a_leagues_rules_in_words_with_a_line_per_tier_and_reward():
    league = competition_parse(LEAGUE, windows=["weekly"], has_season=False)
    assert league is not None

    assert rules_in_words(league) == [
        ("entry", "Players join each week before they score; entry closes 1 day in."),
        ("field", "At most 1,000 entrants each week, first come."),
        ("attempts", "3 accepted scores per player each week (a manage key can grant more)."),
        (
            "cohorts",
            "Cohorts of at most 30, held until entry closes, then split into cohorts whose sizes differ by one "
            "at most, formed within each tier; each ranks on its own.",
        ),
        ("ladder", "Bronze (bottom): top 5 of each cohort go up."),
        ("ladder", "Silver, where new players start: top 20% of each cohort go up; bottom 3 go down."),
        ("ladder", "Gold (top): bottom 12.5% of each cohort go down."),
        ("ladder", "Fewer than 2 scores in a period drops a player one tier."),
        ("rewards", 'Ranks 1 to 3 in Gold: {"coins": 500}'),
        ("rewards", 'Rank 1: {"coins": 100}'),
        ("rewards", 'Top 10% of each cohort: {"badge": "top"}'),
        ("claim window", "Rewards can be claimed for 7 days, then expire."),
        ("settles", "Settles 90 minutes after the period ends (a review buffer)."),
    ]


def test_it_says_a_plain_race_in_words_with_the_defaults_spelled_out():
    cup = competition_parse({"max_attempts": 1}, windows=["daily"], has_season=False)
    season = competition_parse({"cohort_size": 50, "entry": "join"}, windows=["all-time"], has_season=True)
    assert cup is not None and season is not None

    assert rules_in_words(cup) == [
        ("entry", "A first score enters a player each day."),
        ("field", "Any number."),
        ("attempts", "1 accepted score per player each day (a manage key can grant more)."),
        ("cohorts", "One race: the whole field."),
        ("rewards", "None."),
        ("claim window", "Rewards can be claimed for 30 days, then expire."),
        ("settles", "Settles as the period ends."),
    ]
    assert rules_in_words(season)[:4] == [
        ("entry", "Players join the season before they score."),
        ("field", "Any number."),
        ("attempts", "Unlimited."),
        ("cohorts", "Cohorts of at most 50, filled first come; each ranks on its own."),
    ]


def test_it_says_a_duration_in_its_largest_whole_unit():
    assert [duration_words(s) for s in (1, 90, 3600, 5400, 86400, 2 * 86400 + 1)] == [
        "1 second",
        "90 seconds",
        "1 hour",
        "90 minutes",
        "1 day",
        "172,801 seconds",
    ]
