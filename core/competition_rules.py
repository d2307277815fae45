"""The rules of a competing board (issue 22): which window competes, who may enter and how often
they may play, how the entrants are split into cohorts, a league's tiers with their promotion and
demotion lines, and the reward table; then the arithmetic a settlement applies with them.

Pure functions over plain values, like board_rules: the model validates a board's settings with
``competition_parse``; settlement, previews and pages build on the rest. Every refusal is a
RuleError naming the setting, with a message for a person.

The lines, decided here once for every caller:

- A count (``"5"``) is that many players of a cohort; a percentage (``"20%"``) is
  floor(size x p / 100) of its entrants, so 20% of 7 is 1 and 10% of 7 is nobody.
- Equal scores are never split by a line (a board with ties ``shared`` gives them one rank): a
  promotion line takes everyone at its last rank, so more than the count may move up; a demotion
  line spares everyone at the rank it would cut through.
- Entrants without a score rank after everyone with one (and count in a cohort's size): they
  are never promoted nor rewarded, and all go down whenever their tier demotes anyone.
- A player below ``min_scores`` (accepted scores in the period) drops one tier whatever their
  rank, and never moves up; a player both above the promotion line and below the demotion line (a small cohort) is
  promoted. The top tier promotes nobody and the bottom tier demotes nobody.
- Rewards: the first rule of the table that matches the player's tier (a rule without a tier
  matches every tier) and their rank within the cohort gives the reward; at most one a period.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, cast

from .board_rules import ALL_TIME, CUSTOM, DAILY, MONTHLY, WEEKLY, RuleError

OPEN = "open"
JOIN = "join"
ENTRIES: tuple[str, ...] = (OPEN, JOIN)
FIRST_COME = "first_come"
BALANCED = "balanced"
FILLS: tuple[str, ...] = (FIRST_COME, BALANCED)
BY_NONE = "none"
BY_RATING = "rating"
BY_TIER = "tier"
COHORT_BY: tuple[str, ...] = (BY_NONE, BY_RATING, BY_TIER)
# The windows that can compete: each has an end at which it settles (all-time only in a season).
COMPETING_WINDOWS: tuple[str, ...] = (DAILY, WEEKLY, MONTHLY, CUSTOM, ALL_TIME)

COHORT_SIZE_MIN = 2
# Cohorts are races a person follows: a thousand is far past any league's (UGS buckets, Duolingo's 30).
COHORT_SIZE_MAX = 1_000
# Beamable's deepest ladders have ~10 tiers of stages; 20 leaves room and bounds every page of them.
TIERS_MAX = 20
# A reward table a studio can read at a glance; also bounds the work of matching one rank.
REWARD_RULES_MAX = 50
# A reward is the studio's own object, stored with every grant and sent in every event.
REWARD_MAX_BYTES = 1_024
# Bounds that keep arithmetic and storage sane; far above any real competition.
MAX_ENTRANTS_MAX = 100_000_000
MAX_ATTEMPTS_MAX = 1_000_000
RANK_MAX = 100_000_000
# A review buffer longer than a week holds rewards back longer than any studio's moderation needs.
SETTLE_DELAY_MAX_SECS = 7 * 24 * 3600
# How long a grant waits to be claimed: a month by default, a year at most (then it expires).
CLAIM_WINDOW_DEFAULT_SECS = 30 * 24 * 3600
CLAIM_WINDOW_MIN_SECS = 3600
CLAIM_WINDOW_MAX_SECS = 365 * 24 * 3600
# A rating given at join (``cohort_by: rating``): any skill scale a studio uses, bounded so that
# it stays exact everywhere (Redis scores, JSON, the ledger's bigint).
RATING_MAX = 10**12
# A cohort's index: its tier's place x COHORT_STRIDE + its number within the tier (from 1). Far
# above the most cohorts a tier can have (MAX_ENTRANTS_MAX / COHORT_SIZE_MIN), and every index
# stays exact as a Redis score (20 tiers x 1e9 < 2^53). core/lua/prelude/cohorts.lua is the twin.
COHORT_STRIDE = 1_000_000_000
# Balanced cohorts without an entry window hold the first entrants this long at most, then split
# them; later joiners fill the smallest cohort (the "entry stays open" case).
BALANCED_HOLD_MAX_SECS = 3600
# ... and never more than this share of the period (a 20-minute custom period holds 5 minutes).
BALANCED_HOLD_PERIOD_DIVISOR = 4
# A grant's public id, the one a game server claims it by: 'grant_' and 22 url-safe characters,
# 128 random bits (secrets.token_urlsafe(16)), so that no id can be guessed from another.
GRANT_ID_PREFIX = "grant_"
GRANT_ID_RE = r"^grant_[A-Za-z0-9_-]{22}$"
# Tier slugs name cohorts ("silver-3") and URLs: short, lowercase.
TIER_SLUG_RE = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?$")
TIER_SLUG_MAX_CHARS = 32
TIER_NAME_MAX_CHARS = 50
_COUNT_RE = re.compile(r"^\d{1,9}$")
_PERCENT_RE = re.compile(r"^(\d{1,3})(?:\.(\d{1,2}))?%$")

# The board settings this module reads, with what each is when a request leaves it out.
DEFAULTS: dict[str, Any] = {
    "competition_window": "",
    "entry": OPEN,
    "max_entrants": None,
    "entry_window_secs": None,
    "max_attempts": None,
    "cohort_size": None,
    "cohort_fill": FIRST_COME,
    "cohort_by": BY_NONE,
    "tiers": [],
    "start_tier": "",
    "min_scores": 0,
    "rewards": [],
    "claim_window_secs": CLAIM_WINDOW_DEFAULT_SECS,
    "settle_delay_secs": 0,
}


@dataclass(frozen=True)
class Cut:
    """A promotion or demotion line: a count of players, or a percentage of the cohort's entrants."""

    count: int | None = None
    percent: Fraction | None = None

    def of(self, size: int) -> int:
        """How many players of a cohort of ``size`` entrants the line takes."""
        if self.percent is not None:
            return math.floor(size * self.percent / 100)
        return min(self.count or 0, size)

    @property
    def text(self) -> str:
        if self.percent is not None:
            return f"{float(self.percent):g}%"
        return str(self.count or 0)


NO_CUT = Cut(count=0)


@dataclass(frozen=True)
class Tier:
    slug: str
    name: str
    promote: Cut = NO_CUT
    demote: Cut = NO_CUT


@dataclass(frozen=True)
class RewardRule:
    """Ranks ``from_rank``..``to_rank`` (inclusive), or the top ``top_percent`` of the cohort, of
    ``tier`` (None: any tier) get ``reward``. The reward is kept as its compact JSON text: a
    board's rules are compared and hashed (its config is), which a dict would not allow."""

    reward_text: str
    tier: str | None = None
    from_rank: int | None = None
    to_rank: int | None = None
    top_percent: Fraction | None = None

    @property
    def reward(self) -> dict[str, Any]:
        """The studio's reward (a fresh copy each time: callers may keep or change it)."""
        return cast("dict[str, Any]", json.loads(self.reward_text))

    def matches(self, *, tier: str | None, rank: int, size: int) -> bool:
        if self.tier is not None and self.tier != tier:
            return False
        if self.top_percent is not None:
            return rank * 100 <= size * self.top_percent
        return (self.from_rank or 0) <= rank <= (self.to_rank or 0)


@dataclass(frozen=True)
class Competition:
    window: str
    entry: str = OPEN
    max_entrants: int | None = None
    entry_window_secs: int | None = None
    max_attempts: int | None = None
    cohort_size: int | None = None
    cohort_fill: str = FIRST_COME
    cohort_by: str = BY_NONE
    tiers: tuple[Tier, ...] = ()
    start_tier: str = ""
    min_scores: int = 0
    rewards: tuple[RewardRule, ...] = ()
    claim_window_secs: int = CLAIM_WINDOW_DEFAULT_SECS
    settle_delay_secs: int = 0

    def tier_index(self, slug: str) -> int:
        """The tier's place on the ladder, 0 for the bottom (tiers are listed bottom first)."""
        return [t.slug for t in self.tiers].index(slug)

    def reward_for(self, *, tier: str | None, rank: int | None, size: int) -> RewardRule | None:
        """The first rule that gives a player at ``rank`` (None: no score) in a cohort of ``size``."""
        if rank is None:
            return None
        # A plain loop, not next() over a generator: a settlement asks once per entrant.
        for rule in self.rewards:
            if rule.matches(tier=tier, rank=rank, size=size):
                return rule
        return None


# --------------------------------------------------------------------------- parsing


def competition_parse(settings: Mapping[str, Any], *, windows: Sequence[str], has_season: bool) -> Competition | None:
    """The board's competition, or None when none of its settings is set (a board like any)."""
    values = {name: settings.get(name, default) for name, default in DEFAULTS.items()}
    if all(values[name] == default for name, default in DEFAULTS.items()):
        return None
    window = _window(values["competition_window"], windows=windows, has_season=has_season)
    _choice(values["entry"], ENTRIES, "entry")
    _choice(values["cohort_fill"], FILLS, "cohort_fill")
    _choice(values["cohort_by"], COHORT_BY, "cohort_by")
    tiers = _tiers(values["tiers"])
    competition = Competition(
        window=window,
        entry=values["entry"],
        max_entrants=_whole(values["max_entrants"], "max_entrants", 1, MAX_ENTRANTS_MAX, optional=True),
        entry_window_secs=_whole(values["entry_window_secs"], "entry_window_secs", 1, None, optional=True),
        max_attempts=_whole(values["max_attempts"], "max_attempts", 1, MAX_ATTEMPTS_MAX, optional=True),
        cohort_size=_whole(values["cohort_size"], "cohort_size", COHORT_SIZE_MIN, COHORT_SIZE_MAX, optional=True),
        cohort_fill=values["cohort_fill"],
        cohort_by=values["cohort_by"],
        tiers=tiers,
        start_tier=_start_tier(values["start_tier"], tiers),
        min_scores=_whole(values["min_scores"], "min_scores", 0, MAX_ATTEMPTS_MAX) or 0,
        rewards=_rewards(values["rewards"], tiers),
        claim_window_secs=_whole(
            values["claim_window_secs"], "claim_window_secs", CLAIM_WINDOW_MIN_SECS, CLAIM_WINDOW_MAX_SECS
        )
        or CLAIM_WINDOW_DEFAULT_SECS,
        settle_delay_secs=_whole(values["settle_delay_secs"], "settle_delay_secs", 0, SETTLE_DELAY_MAX_SECS) or 0,
    )
    _fits_together(competition)
    return competition


def _window(value: object, *, windows: Sequence[str], has_season: bool) -> str:
    if value in ("", None):
        if len(windows) == 1 and windows[0] in COMPETING_WINDOWS:
            value = windows[0]
        else:
            raise RuleError(
                f"Name the window that competes, one of the board's: {', '.join(windows)}.",
                field="competition_window",
            )
    if value not in windows:
        raise RuleError(
            f"{value!r} is not one of the board's windows ({', '.join(windows)}).", field="competition_window"
        )
    if value == ALL_TIME and not has_season:
        raise RuleError(
            "The all-time window competes only in a season: set starts_at and ends_at.", field="competition_window"
        )
    return str(value)


def _choice(value: object, allowed: Sequence[str], field: str) -> None:
    if value not in allowed:
        raise RuleError(f"Use one of {', '.join(allowed)}.", field=field)


def _whole(value: object, field: str, low: int, high: int | None, *, optional: bool = False) -> int | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise RuleError("A whole number.", field=field)
    if value < low or (high is not None and value > high):
        bound = f"from {low:,} to {high:,}" if high is not None else f"at least {low:,}"
        raise RuleError(f"A whole number {bound}.", field=field)
    return value


def cut_parse(value: object, *, field: str) -> Cut:
    """A line as written: a count (``"5"`` or 5) or a percentage (``"20%"``, ``"12.5%"``)."""
    if value in (None, "", 0):
        return NO_CUT
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= COHORT_SIZE_MAX:
        return Cut(count=value)
    if isinstance(value, str):
        if _COUNT_RE.match(value) and int(value) <= COHORT_SIZE_MAX:
            return Cut(count=int(value))
        percent = _percent_of(value)
        if percent is not None:
            return Cut(percent=percent)
    raise RuleError(
        f'A count of players (0 to {COHORT_SIZE_MAX:,}) or a percentage of the cohort ("20%", up to 100%).',
        field=field,
    )


def _fields(value: object, field: str, allowed: Sequence[str]) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise RuleError("An object.", field=field)
    unknown = sorted(str(k) for k in value if k not in allowed)
    if unknown:
        raise RuleError(f"Unknown field {unknown[0]!r}; use {', '.join(allowed)}.", field=f"{field}.{unknown[0]}")
    return value


def _tiers(value: object) -> tuple[Tier, ...]:
    """The league's tiers, bottom first (Bronze ... Diamond)."""
    if value in (None, []):
        return ()
    if not isinstance(value, list) or len(value) < 2 or len(value) > TIERS_MAX:
        raise RuleError(f"A league has from 2 to {TIERS_MAX} tiers, listed bottom first.", field="tiers")
    tiers = []
    for i, raw in enumerate(value):
        where = f"tiers[{i}]"
        item = _fields(raw, where, ("slug", "name", "promote", "demote"))
        slug, name = item.get("slug"), item.get("name") or item.get("slug")
        if not isinstance(slug, str) or not TIER_SLUG_RE.match(slug):
            raise RuleError("Up to 32 lowercase letters, digits and inner hyphens.", field=f"{where}.slug")
        if not isinstance(name, str) or not name.strip() or len(name) > TIER_NAME_MAX_CHARS or not name.isprintable():
            raise RuleError(f"A name of 1 to {TIER_NAME_MAX_CHARS} printable characters.", field=f"{where}.name")
        promote = cut_parse(item.get("promote"), field=f"{where}.promote")
        demote = cut_parse(item.get("demote"), field=f"{where}.demote")
        if i == len(value) - 1 and promote != NO_CUT:
            raise RuleError("The top tier promotes nobody: leave its promote out.", field=f"{where}.promote")
        if i == 0 and demote != NO_CUT:
            raise RuleError("The bottom tier demotes nobody: leave its demote out.", field=f"{where}.demote")
        tiers.append(Tier(slug=slug, name=name.strip(), promote=promote, demote=demote))
    slugs = [t.slug for t in tiers]
    if len(set(slugs)) != len(slugs):
        raise RuleError("Each tier needs a slug of its own.", field="tiers")
    return tuple(tiers)


def _start_tier(value: object, tiers: Sequence[Tier]) -> str:
    if value in ("", None):
        return tiers[0].slug if tiers else ""
    if not tiers:
        raise RuleError("A start tier needs tiers.", field="start_tier")
    if value not in [t.slug for t in tiers]:
        raise RuleError(f"Not a tier; use one of {', '.join(t.slug for t in tiers)}.", field="start_tier")
    return str(value)


def _percent_of(text: str) -> Fraction | None:
    """``"12.5%"`` as 25/2, or None unless it is a percentage from 0 to 100 with two decimals at most."""
    match = _PERCENT_RE.match(text)
    if match is None:
        return None
    decimals = match[2] or ""
    percent = Fraction(int(match[1])) + Fraction(int(decimals or 0), 10 ** len(decimals))
    return percent if percent <= 100 else None


def _percent(value: object, field: str) -> Fraction:
    """A reward's top_percent: 10, 12.5, "12.5" or "12.5%"."""
    text = value if isinstance(value, str) else repr(value) if isinstance(value, int | float) else ""
    percent = None if isinstance(value, bool) else _percent_of(text if text.endswith("%") else f"{text}%")
    if percent is None or percent <= 0:
        raise RuleError("A percentage above 0 and up to 100, with at most two decimals.", field=field)
    return percent


def _reward(value: object, field: str) -> str:
    """The reward as compact JSON text (what is stored with every grant)."""
    if not isinstance(value, dict) or not value:
        raise RuleError('The studio\'s reward, a JSON object: {"coins": 500}.', field=field)
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=True)
    if len(text.encode()) > REWARD_MAX_BYTES:
        raise RuleError(f"At most {REWARD_MAX_BYTES:,} bytes as compact JSON.", field=field)
    return text


def _rewards(value: object, tiers: Sequence[Tier]) -> tuple[RewardRule, ...]:
    if value in (None, []):
        return ()
    if not isinstance(value, list) or len(value) > REWARD_RULES_MAX:
        raise RuleError(f"A list of at most {REWARD_RULES_MAX} rules.", field="rewards")
    slugs = [t.slug for t in tiers]
    rules = []
    for i, raw in enumerate(value):
        where = f"rewards[{i}]"
        item = _fields(raw, where, ("tier", "from_rank", "to_rank", "top_percent", "reward"))
        tier = item.get("tier")
        if tier is not None and tier not in slugs:
            message = f"Not a tier; use one of {', '.join(slugs)}." if slugs else "The board has no tiers."
            raise RuleError(message, field=f"{where}.tier")
        reward = _reward(item.get("reward"), f"{where}.reward")
        if item.get("top_percent") is not None:
            if item.get("from_rank") is not None or item.get("to_rank") is not None:
                raise RuleError("Either a rank range or top_percent, not both.", field=f"{where}.top_percent")
            rules.append(
                RewardRule(
                    reward_text=reward, tier=tier, top_percent=_percent(item["top_percent"], f"{where}.top_percent")
                )
            )
            continue
        low = _whole(item.get("from_rank"), f"{where}.from_rank", 1, RANK_MAX)
        to_rank = item.get("to_rank")
        high = _whole(low if to_rank is None else to_rank, f"{where}.to_rank", low or 1, RANK_MAX)
        rules.append(RewardRule(reward_text=reward, tier=tier, from_rank=low, to_rank=high))
    return tuple(rules)


def _fits_together(c: Competition) -> None:
    if c.cohort_fill == BALANCED and c.cohort_size is None:
        raise RuleError("Balanced cohorts need a cohort_size.", field="cohort_fill")
    if c.cohort_by != BY_NONE and c.cohort_size is None:
        raise RuleError("Cohorts need a cohort_size.", field="cohort_by")
    if c.cohort_by == BY_RATING:
        if c.entry != JOIN:
            raise RuleError("A rating is given when a player joins: set entry to join.", field="cohort_by")
        if c.cohort_fill != BALANCED or c.entry_window_secs is None:
            raise RuleError(
                "Rating bands are drawn once everyone has joined: set cohort_fill to balanced and an "
                "entry_window_secs.",
                field="cohort_by",
            )
    if c.cohort_by == BY_TIER and not c.tiers:
        raise RuleError("Cohorts by tier need tiers.", field="cohort_by")
    if c.tiers and c.cohort_by != BY_TIER:
        raise RuleError("A league's cohorts are formed within its tiers: set cohort_by to tier.", field="cohort_by")


# --------------------------------------------------------------------------- settlement arithmetic


def balanced_sizes(entrants: int, size: int) -> list[int]:
    """The sizes of ceil(entrants / size) cohorts that differ by at most one, largest first."""
    if entrants <= 0:
        return []
    count = -(-entrants // size)
    base, extra = divmod(entrants, count)
    return [base + 1] * extra + [base] * (count - extra)


def cohort_name(index: int, tiers: Sequence[Tier]) -> str:
    """A cohort's id in the API and on pages: its number ("3"), after its tier's slug in a league
    ("silver-3")."""
    place, number = divmod(index, COHORT_STRIDE)
    return f"{tiers[place].slug}-{number}" if tiers else str(number)


def cohort_index(name: str, tiers: Sequence[Tier]) -> int | None:
    """The index of a cohort id (None when it names none: a wrong tier, not a number)."""
    slug, _, number = name.rpartition("-") if tiers else ("", "", name)
    if not number.isascii() or not number.isdigit() or len(number) > 10 or not 1 <= int(number) < COHORT_STRIDE:
        return None
    if not tiers:
        return int(number)
    places = [t.slug for t in tiers]
    return places.index(slug) * COHORT_STRIDE + int(number) if slug in places else None


def cohort_tier(index: int, tiers: Sequence[Tier]) -> str | None:
    """The tier a cohort races in (None without tiers)."""
    return tiers[index // COHORT_STRIDE].slug if tiers else None


def cohorts_formed_at(
    competition: Competition,
    *,
    starts_at: dt.datetime | None,
    ends_at: dt.datetime | None,
    closes_at: dt.datetime | None,
) -> dt.datetime | None:
    """When a period's balanced cohorts are split (None: first come, placed as they enter): when
    entry closes, else after a hold of an hour at most (a quarter of a shorter period)."""
    if competition.cohort_size is None or competition.cohort_fill != BALANCED or starts_at is None:
        return None
    if closes_at is not None:
        return closes_at
    hold = BALANCED_HOLD_MAX_SECS
    if ends_at is not None:
        hold = min(hold, int((ends_at - starts_at).total_seconds()) // BALANCED_HOLD_PERIOD_DIVISOR)
    return starts_at + dt.timedelta(seconds=hold)


@dataclass(frozen=True)
class Held:
    """An entrant waiting for a balanced split: when they entered, their rating (rating bands)
    and their tier's place (0 outside a league)."""

    player_id: str
    entered_ms: int
    rating: int | None = None
    tier_place: int = 0


def balanced_split(held: Sequence[Held], competition: Competition) -> dict[str, int]:
    """Each held entrant's cohort index: per tier, ceil(n / size) cohorts whose sizes differ by
    one at most, filled in join order, or (rating bands) best rating first, so every cohort is a
    contiguous band of ratings. Deterministic: equal keys fall back to when they entered, then id."""
    size = competition.cohort_size
    assert size is not None
    by_rating = competition.cohort_by == BY_RATING
    groups: dict[int, list[Held]] = {}
    for h in held:
        groups.setdefault(h.tier_place, []).append(h)
    placed: dict[str, int] = {}
    for place, members in groups.items():
        members.sort(key=lambda h: (-(h.rating or 0) if by_rating else 0, h.entered_ms, h.player_id.encode()))
        start = 0
        for number, count in enumerate(balanced_sizes(len(members), size), 1):
            for h in members[start : start + count]:
                placed[h.player_id] = place * COHORT_STRIDE + number
            start += count
    return placed


def late_cohort(sizes: Sequence[int], size: int) -> int:
    """Where a player placed after the split goes: the smallest cohort below ``size`` (the first
    of equals), else a new one (its index is ``len(sizes)``)."""
    open_ = [(n, i) for i, n in enumerate(sizes) if n < size]
    return min(open_)[1] if open_ else len(sizes)


# Slots: a settlement holds one of these per entrant (100,000 and more), a third of the memory
# of an instance with a __dict__.
@dataclass(frozen=True, slots=True)
class Placed:
    """A cohort's entrant at settlement: their rank in the cohort (None without a score) and how
    many scores of theirs the period accepted."""

    player_id: str
    rank: int | None
    scores: int


def tier_moves(competition: Competition, *, tier: str, cohort: Sequence[Placed]) -> dict[str, int]:
    """Each entrant of a cohort of ``tier``: +1 (up a tier), -1 (down) or 0."""
    index = competition.tier_index(tier)
    rules = competition.tiers[index]
    top, bottom = index == len(competition.tiers) - 1, index == 0
    size = len(cohort)
    promote = 0 if top else rules.promote.of(size)
    demote = 0 if bottom else rules.demote.of(size)
    line = size - demote  # a scored rank past it goes down
    moves = {}
    for placed in cohort:
        if placed.scores < competition.min_scores:
            move = 0 if bottom else -1  # idle: never up, one down
        elif placed.rank is not None and placed.rank <= promote:
            move = 1
        elif demote and (placed.rank is None or placed.rank > line):
            move = -1
        else:
            move = 0
        moves[placed.player_id] = move
    return moves


# --------------------------------------------------------------------------- as the API shows them


def league_json(competition: Competition | None) -> dict[str, Any]:
    """A board's league and reward settings as its JSON shows them (the defaults without a
    competition)."""
    if competition is None:
        return {
            "tiers": [],
            "start_tier": "",
            "min_scores": 0,
            "rewards": [],
            "claim_window_secs": CLAIM_WINDOW_DEFAULT_SECS,
            "settle_delay_secs": 0,
        }
    return {
        "tiers": [tier_json(t) for t in competition.tiers],
        "start_tier": competition.start_tier,
        "min_scores": competition.min_scores,
        "rewards": [reward_json(r) for r in competition.rewards],
        "claim_window_secs": competition.claim_window_secs,
        "settle_delay_secs": competition.settle_delay_secs,
    }


def tier_json(tier: Tier) -> dict[str, Any]:
    """A tier as a board's JSON shows it (its lines as written: "5", "20%"; null for none)."""
    return {
        "slug": tier.slug,
        "name": tier.name,
        "promote": None if tier.promote == NO_CUT else tier.promote.text,
        "demote": None if tier.demote == NO_CUT else tier.demote.text,
    }


def reward_json(rule: RewardRule) -> dict[str, Any]:
    """A reward rule as a board's JSON shows it: a rank range or a top percentage, never both."""
    shown: dict[str, Any] = {"tier": rule.tier}
    if rule.top_percent is not None:
        shown["top_percent"] = float(rule.top_percent)
    else:
        shown.update(from_rank=rule.from_rank, to_rank=rule.to_rank)
    return {**shown, "reward": rule.reward}


# --------------------------------------------------------------------------- a cohort's outcome


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a period's settlement gives one entrant of a cohort."""

    player_id: str
    rank: int | None  # within the cohort; None without a score
    tier: str | None  # the tier they raced in (None outside a league)
    move: int  # +1 up a tier, -1 down, 0 stays (always 0 outside a league)
    tier_after: str | None
    reward: dict[str, Any] | None


def cohort_outcomes(competition: Competition, *, tier: str | None, cohort: Sequence[Placed]) -> list[Outcome]:
    """Each entrant's tier move and reward, by their rank within the cohort (module docstring:
    the lines, ties at them, idle players, the first matching reward)."""
    moves = tier_moves(competition, tier=tier, cohort=cohort) if tier is not None else {}
    place = competition.tier_index(tier) if tier is not None else 0
    outcomes = []
    for placed in cohort:
        move = moves.get(placed.player_id, 0)
        rule = competition.reward_for(tier=tier, rank=placed.rank, size=len(cohort))
        outcomes.append(
            Outcome(
                player_id=placed.player_id,
                rank=placed.rank,
                tier=tier,
                move=move,
                tier_after=competition.tiers[place + move].slug if tier is not None else None,
                reward=None if rule is None else rule.reward,
            )
        )
    return outcomes


def ranks_in(entries: Sequence[tuple[str, int, str]], *, shared: bool) -> dict[str, int]:
    """Competition ranks of (player_id, sort base, member) rows in the board's order: ascending
    base, then the member's bytes; equal bases share a rank when ties are shared."""
    ranks: dict[str, int] = {}
    rank, previous = 0, None
    for position, (player_id, base, _) in enumerate(sorted(entries, key=lambda e: (e[1], e[2])), 1):
        if not shared or base != previous:
            rank, previous = position, base
        ranks[player_id] = rank
    return ranks
