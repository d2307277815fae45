"""A competing board's rules (core/competition_rules.py): what a studio may set, refused by the
setting's name, and the arithmetic of the lines a settlement draws: counts and percentages, equal
scores at a line, entrants without a score, idle players, small cohorts, balanced cohorts."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core import competition_rules as rules
from core.board_rules import RuleError
from core.competition_rules import Placed

LEAGUE_TIERS = [
    {"slug": "bronze", "name": "Bronze", "promote": "5"},
    {"slug": "silver", "name": "Silver", "promote": "20%", "demote": 5},
    {"slug": "gold", "name": "Gold", "demote": "5"},
]
LEAGUE: dict[str, Any] = {
    "competition_window": "weekly",
    "entry": "join",
    "entry_window_secs": 3600,
    "cohort_size": 30,
    "cohort_fill": "balanced",
    "cohort_by": "tier",
    "tiers": LEAGUE_TIERS,
    "min_scores": 1,
    "rewards": [{"from_rank": 1, "to_rank": 3, "reward": {"coins": 500}}],
}


def parse(settings: dict[str, Any], *, windows: tuple[str, ...] = ("daily", "weekly"), season: bool = False) -> Any:
    return rules.competition_parse(settings, windows=windows, has_season=season)


def refused(settings: dict[str, Any], **kwargs: Any) -> RuleError:
    with pytest.raises(RuleError) as error:
        parse(settings, **kwargs)
    return error.value


def test_it_reads_no_competition_from_a_board_that_sets_none_of_its_settings():
    assert parse({}) is None
    assert parse(dict(rules.DEFAULTS)) is None


def test_it_reads_a_weekly_league_with_its_lines():
    league = parse(LEAGUE)
    assert (league.window, league.entry, league.cohort_size, league.cohort_fill) == ("weekly", "join", 30, "balanced")
    assert [t.slug for t in league.tiers] == ["bronze", "silver", "gold"]
    assert league.start_tier == "bronze"  # the bottom tier unless set
    assert league.tiers[1].promote == rules.Cut(percent=Fraction(20)) and league.tiers[1].demote == rules.Cut(count=5)
    assert league.rewards[0].reward == {"coins": 500} and league.claim_window_secs == rules.CLAIM_WINDOW_DEFAULT_SECS


def test_it_needs_the_competing_window_named_unless_the_board_has_one():
    assert refused({"entry": "join"}).field == "competition_window"
    assert parse({"entry": "join"}, windows=("weekly",)).window == "weekly"
    assert refused({"competition_window": "monthly", "entry": "join"}).field == "competition_window"


def test_it_lets_all_time_compete_only_in_a_season():
    settings = {"competition_window": "all-time", "max_attempts": 3}
    assert "season" in str(refused(settings, windows=("all-time",)))
    assert parse(settings, windows=("all-time",), season=True).max_attempts == 3


@pytest.mark.parametrize(
    ("chosen", "field"),
    [
        ({"entry": "invite"}, "entry"),
        ({"max_entrants": 0}, "max_entrants"),
        ({"max_entrants": True}, "max_entrants"),
        ({"max_entrants": "100"}, "max_entrants"),
        ({"max_attempts": 10**7}, "max_attempts"),
        ({"entry_window_secs": -1}, "entry_window_secs"),
        ({"cohort_size": 1}, "cohort_size"),
        ({"cohort_size": 1001}, "cohort_size"),
        ({"cohort_fill": "random"}, "cohort_fill"),
        ({"cohort_by": "age"}, "cohort_by"),
        ({"min_scores": -1}, "min_scores"),
        ({"claim_window_secs": 60}, "claim_window_secs"),
        ({"settle_delay_secs": 8 * 24 * 3600}, "settle_delay_secs"),
        ({"start_tier": "gold"}, "start_tier"),
    ],
)
def test_it_refuses_a_setting_out_of_its_bounds_by_name(chosen, field):
    assert refused({"competition_window": "daily", **chosen}).field == field


@pytest.mark.parametrize(
    ("tiers", "field", "says"),
    [
        ([{"slug": "solo"}], "tiers", "from 2 to 20 tiers"),
        ([{"slug": f"t{i}"} for i in range(21)], "tiers", "from 2 to 20 tiers"),
        ([{"slug": "a"}, {"slug": "a"}], "tiers", "slug of its own"),
        ([{"slug": "a"}, {"slug": "B!"}], "tiers[1].slug", "lowercase"),
        ([{"slug": "a"}, {"slug": "b", "name": "x\n"}], "tiers[1].name", "printable"),
        ([{"slug": "a", "demote": 1}, {"slug": "b"}], "tiers[0].demote", "bottom tier demotes nobody"),
        ([{"slug": "a"}, {"slug": "b", "promote": "10%"}], "tiers[1].promote", "top tier promotes nobody"),
        ([{"slug": "a", "promote": "101%"}, {"slug": "b"}], "tiers[0].promote", "percentage"),
        ([{"slug": "a", "promote": "1.234%"}, {"slug": "b"}], "tiers[0].promote", "percentage"),
        ([{"slug": "a", "promote": -1}, {"slug": "b"}], "tiers[0].promote", "count"),
        ([{"slug": "a", "colour": "red"}, {"slug": "b"}], "tiers[0].colour", "Unknown field"),
        (["a", "b"], "tiers[0]", "An object"),
    ],
)
def test_it_refuses_a_ladder_that_does_not_hold_together(tiers, field, says):
    error = refused({**LEAGUE, "tiers": tiers})
    assert (error.field, says in str(error)) == (field, True), str(error)


@pytest.mark.parametrize(
    ("reward_rules", "field", "says"),
    [
        ([{"from_rank": 1, "to_rank": 3}], "rewards[0].reward", "JSON object"),
        ([{"from_rank": 1, "reward": {"blob": "x" * 1100}}], "rewards[0].reward", "1,024 bytes"),
        ([{"from_rank": 3, "to_rank": 1, "reward": {"c": 1}}], "rewards[0].to_rank", "from 3"),
        ([{"from_rank": 0, "reward": {"c": 1}}], "rewards[0].from_rank", "from 1"),
        ([{"top_percent": 0, "reward": {"c": 1}}], "rewards[0].top_percent", "above 0"),
        ([{"top_percent": 10, "from_rank": 1, "reward": {"c": 1}}], "rewards[0].top_percent", "not both"),
        ([{"tier": "platinum", "from_rank": 1, "reward": {"c": 1}}], "rewards[0].tier", "Not a tier"),
        ([{"from_rank": 1, "reward": {"c": 1}, "coins": 5}], "rewards[0].coins", "Unknown field"),
    ],
)
def test_it_refuses_a_reward_table_it_could_not_pay_out(reward_rules, field, says):
    error = refused({**LEAGUE, "rewards": reward_rules})
    assert (error.field, says in str(error)) == (field, True), str(error)


@pytest.mark.parametrize(
    ("chosen", "field"),
    [
        ({"cohort_fill": "balanced"}, "cohort_fill"),  # cohorts of what size?
        ({"cohort_by": "rating", "entry": "join"}, "cohort_by"),  # bands of what size?
        ({"cohort_by": "rating", "cohort_size": 30}, "cohort_by"),  # a rating comes with a join
        # Bands are drawn once everyone is in: held (balanced) until entry closes.
        ({"cohort_by": "rating", "cohort_size": 30, "entry": "join"}, "cohort_by"),
        ({"cohort_by": "rating", "cohort_size": 30, "entry": "join", "cohort_fill": "balanced"}, "cohort_by"),
        ({"cohort_by": "tier", "cohort_size": 30}, "cohort_by"),  # no tiers
        ({"tiers": LEAGUE_TIERS, "cohort_size": 30}, "cohort_by"),  # a league's cohorts are within its tiers
        ({"rewards": [{"tier": "gold", "from_rank": 1, "reward": {"c": 1}}]}, "rewards[0].tier"),
    ],
)
def test_it_refuses_settings_that_do_not_fit_together(chosen, field):
    assert refused({"competition_window": "weekly", **chosen}).field == field


def test_it_takes_a_percentage_of_a_cohort_rounded_down_and_a_count_up_to_its_size():
    twenty, ten = rules.cut_parse("20%", field="x"), rules.cut_parse("12.5%", field="x")
    assert [twenty.of(n) for n in (4, 5, 7, 10, 30)] == [0, 1, 1, 2, 6]
    assert [ten.of(n) for n in (7, 8, 30)] == [0, 1, 3]
    assert [rules.cut_parse("5", field="x").of(n) for n in (3, 5, 30)] == [3, 5, 5]
    assert rules.cut_parse(None, field="x").of(30) == 0


@given(entrants=st.integers(0, 5_000), size=st.integers(rules.COHORT_SIZE_MIN, rules.COHORT_SIZE_MAX))
def test_it_splits_entrants_into_the_fewest_cohorts_whose_sizes_differ_by_one_at_most(entrants, size):
    sizes = rules.balanced_sizes(entrants, size)
    assert sum(sizes) == entrants and len(sizes) == -(-entrants // size)
    assert all(n <= size for n in sizes) and (not sizes or max(sizes) - min(sizes) <= 1)


def test_it_never_leaves_a_cohort_of_one_where_first_come_would():
    assert rules.balanced_sizes(101, 50) == [34, 34, 33]  # first come: 50, 50, 1


def test_it_places_a_late_entrant_in_the_smallest_cohort_with_room_else_a_new_one():
    assert rules.late_cohort([34, 33, 34], 50) == 1
    assert rules.late_cohort([34, 34], 50) == 0
    assert rules.late_cohort([50, 50], 50) == 2
    assert rules.late_cohort([], 50) == 0


def moves(
    ranks: list[int | None], *, tier: str = "silver", scores: list[int] | None = None, **league: Any
) -> list[int]:
    competition = parse({**LEAGUE, "min_scores": 0, **league})
    cohort = [Placed(f"p{i}", rank, (scores or [1] * len(ranks))[i]) for i, rank in enumerate(ranks)]
    found = rules.tier_moves(competition, tier=tier, cohort=cohort)
    return [found[p.player_id] for p in cohort]


def tiers(promote: Any, demote: Any) -> list[dict[str, Any]]:
    return [
        {"slug": "bronze", "promote": 1},
        {"slug": "silver", "promote": promote, "demote": demote},
        {"slug": "gold"},
    ]


def test_it_moves_everyone_at_the_last_rank_of_the_promotion_line():
    # Equal scores share a rank (ties 'shared'): the line takes them all, so 4 move up for 3 places.
    assert moves([1, 2, 3, 3, 5, 6], tiers=tiers(3, 0)) == [1, 1, 1, 1, 0, 0]


def test_it_spares_everyone_at_the_rank_the_demotion_line_cuts_through():
    # 5 entrants, 2 go down: ranks past 3. Three equal at rank 3 stay; two equal at 4 both go.
    assert moves([1, 2, 3, 3, 3], tiers=tiers(0, 2)) == [0, 0, 0, 0, 0]
    assert moves([1, 2, 3, 4, 4], tiers=tiers(0, 2)) == [0, 0, 0, -1, -1]


def test_it_demotes_every_entrant_without_a_score_and_never_promotes_one():
    assert moves([1, None, None, None], tiers=tiers(2, 1)) == [1, -1, -1, -1]
    assert moves([None, None], tiers=tiers(2, 0)) == [0, 0]


def test_it_drops_an_idle_player_one_tier_whatever_their_rank_but_not_below_the_bottom():
    assert moves([1, 2, 3], tiers=tiers(1, 1), scores=[1, 3, 3], min_scores=2) == [-1, 0, -1]
    assert moves([1, 2, 3], tier="bronze", tiers=tiers(1, 1), scores=[0, 3, 3], min_scores=2) == [0, 0, 0]


def test_it_promotes_rather_than_demotes_a_player_inside_both_lines_of_a_small_cohort():
    assert moves([1], tiers=tiers(1, 1)) == [1]
    assert moves([1, 2], tiers=tiers(1, 1)) == [1, -1]


def test_it_promotes_nobody_from_the_top_tier_and_demotes_nobody_from_the_bottom():
    assert moves([1, 2, 3], tier="gold", tiers=[{"slug": "bronze", "promote": 1}, {"slug": "gold", "demote": 1}]) == [
        0,
        0,
        -1,
    ]
    assert moves([1, 2, 3], tier="bronze", tiers=[{"slug": "bronze", "promote": 1}, {"slug": "gold", "demote": 1}]) == [
        1,
        0,
        0,
    ]


def test_it_gives_the_first_reward_rule_that_matches_the_players_tier_and_rank():
    table = [
        {"tier": "gold", "from_rank": 1, "to_rank": 1, "reward": {"badge": "gold-cup"}},
        {"from_rank": 1, "to_rank": 3, "reward": {"coins": 500}},
        {"top_percent": "10", "reward": {"coins": 100}},
    ]
    league = parse({**LEAGUE, "rewards": table})

    def given_to(tier: str, rank: int | None, size: int) -> dict[str, Any] | None:
        rule = league.reward_for(tier=tier, rank=rank, size=size)
        return None if rule is None else rule.reward

    assert given_to("gold", 1, 30) == {"badge": "gold-cup"}
    assert given_to("silver", 1, 30) == {"coins": 500}
    assert given_to("gold", 3, 30) == {"coins": 500}
    assert given_to("gold", 4, 30) is None  # 4 of 30 is 13%: past the top 10%
    assert given_to("gold", 4, 40) == {"coins": 100}  # 4 of 40 is exactly 10%
    assert given_to("gold", None, 30) is None  # no score, no reward
