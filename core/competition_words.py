"""A competing board's rules in words (issue 22), as admin shows them beside the settings: the
settings are many numbers and JSON lists, and a studio checks a tournament by reading what it
does ("the top 2 of each cohort go up"), not by decoding them.

Pure, like core/board_rules.cron_explain: the values of core/competition_rules in, lines out.
"""

from __future__ import annotations

import json

from .competition_rules import BALANCED, BY_RATING, BY_TIER, JOIN, NO_CUT, Competition, Cut, RewardRule, Tier

_PERIODS = {
    "daily": "each day",
    "weekly": "each week",
    "monthly": "each month",
    "custom": "each custom period",
    "all-time": "the season",
}
_UNITS = ((86400, "day"), (3600, "hour"), (60, "minute"), (1, "second"))


def _plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def duration_words(secs: int) -> str:
    """A duration in its largest whole unit: 86400 is "1 day", 5400 "90 minutes"."""
    size, noun = next((size, noun) for size, noun in _UNITS if secs % size == 0)
    return _plural(secs // size, noun)


def _cut(cut: Cut) -> str:
    return cut.text if cut.percent is not None else f"{cut.count:,}"


def line_words(cut: Cut, *, up: bool) -> str:
    """A tier's promotion or demotion line as a player reads it on the game page: "top 5 go up",
    "top 1 goes up", "bottom 20% go down" ("" for no line)."""
    if cut == NO_CUT:
        return ""
    end, verb = ("top", "up") if up else ("bottom", "down")
    one = cut.percent is None and cut.count == 1
    return f"{end} {_cut(cut)} {'goes' if one else 'go'} {verb}"


def _tier_line(tier: Tier, *, place: int, top: int, start: str) -> str:
    moves = []
    if place < top and tier.promote != NO_CUT:
        moves.append(f"top {_cut(tier.promote)} of each cohort go up")
    if place > 0 and tier.demote != NO_CUT:
        moves.append(f"bottom {_cut(tier.demote)}{'' if moves else ' of each cohort'} go down")
    where = " (top)" if place == top else " (bottom)" if place == 0 else ""
    starts = ", where new players start" if tier.slug == start else ""
    return f"{tier.name}{where}{starts}: {'; '.join(moves) or 'nobody moves'}."


def _reward_line(rule: RewardRule, tiers: tuple[Tier, ...]) -> str:
    if rule.top_percent is not None:
        who = f"Top {float(rule.top_percent):g}% of each cohort"
    elif rule.from_rank == rule.to_rank:
        who = f"Rank {rule.from_rank:,}"
    else:
        who = f"Ranks {rule.from_rank:,} to {rule.to_rank:,}"
    names = {t.slug: t.name for t in tiers}
    where = f" in {names.get(rule.tier, rule.tier)}" if rule.tier is not None else ""
    reward = json.dumps(rule.reward, separators=(", ", ": "), ensure_ascii=False)
    return f"{who}{where}: {reward}"


def _cohorts(c: Competition) -> str:
    if c.cohort_size is None:
        return "One race: the whole field."
    line = f"Cohorts of at most {c.cohort_size:,}"
    if c.cohort_fill == BALANCED:
        hold = "entry closes" if c.entry_window_secs is not None else "an hour in (a quarter of a shorter period)"
        line += f", held until {hold}, then split into cohorts whose sizes differ by one at most"
    else:
        line += ", filled first come"
    if c.cohort_by == BY_RATING:
        line += ", in bands of the rating given at join (best first)"
    elif c.cohort_by == BY_TIER:
        line += ", formed within each tier"
    return line + "; each ranks on its own."


def rules_in_words(c: Competition) -> list[tuple[str, str]]:
    """Each rule of the competition as (topic, sentence), in the order a player meets them;
    a league's ladder and the reward table take a line per tier and per rule."""
    period = _PERIODS.get(c.window, f"each {c.window} period")
    entry = f"Players join {period} before they score" if c.entry == JOIN else f"A first score enters a player {period}"
    closes = f"; entry closes {duration_words(c.entry_window_secs)} in" if c.entry_window_secs else ""
    lines = [
        ("entry", f"{entry}{closes}."),
        (
            "field",
            f"At most {_plural(c.max_entrants, 'entrant')} {period}, first come." if c.max_entrants else "Any number.",
        ),
        (
            "attempts",
            f"{_plural(c.max_attempts, 'accepted score')} per player {period} (a manage key can grant more)."
            if c.max_attempts
            else "Unlimited.",
        ),
        ("cohorts", _cohorts(c)),
    ]
    top = len(c.tiers) - 1
    lines += [("ladder", _tier_line(t, place=i, top=top, start=c.start_tier)) for i, t in enumerate(c.tiers)]
    if c.tiers and c.min_scores:
        lines.append(("ladder", f"Fewer than {_plural(c.min_scores, 'score')} in a period drops a player one tier."))
    lines += [("rewards", _reward_line(r, c.tiers)) for r in c.rewards] or [("rewards", "None.")]
    lines.append(("claim window", f"Rewards can be claimed for {duration_words(c.claim_window_secs)}, then expire."))
    delay = c.settle_delay_secs
    settles = f"{duration_words(delay)} after the period ends (a review buffer)" if delay else "as the period ends"
    lines.append(("settles", f"Settles {settles}."))
    return lines
