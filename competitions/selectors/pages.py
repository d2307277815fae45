"""What the game page shows of a competing board with cohorts (issue 22): the league's ladder with
its lines in words, one cohort's table with the promotion and demotion lines drawn between its
rows, a bounded list of the period's cohorts, and the signed-in player's "if it ended now".

The lines here are the settlement's own (core/competition_rules.tier_moves) read off a ranked
cohort: rank <= the promotion count goes up, rank past size - the demotion count goes down, those
without a score go down whenever the tier demotes anyone. live/static/live/cohort.js is their
twin for rows that arrive live; a player's own preview comes from the settlement's rules whole
(settlement.player_preview), which also knows their count of scores (min_scores).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass
from typing import Any

from core import errors, keys
from core.competition_rules import NO_CUT, Competition, Tier
from core.competition_words import line_words
from core.config import BoardConfig
from core.redis import get_redis
from games import periods
from games import selectors as board_reads

from . import cohorts as cohort_reads
from .settlement import player_preview

# A cohort's table shows this many rows a page (a cohort holds up to 1,000).
COHORT_PAGE_SIZE = 50
# The list of the period's cohorts links this many a page: a page's size must not follow how many
# cohorts a competition has (100,000 entrants in cohorts of 30 are 3,334 of them).
COHORT_LINKS_MAX = 20
# A cohort asked for in a link is at most this long when a message quotes it back.
COHORT_QUOTE_MAX_CHARS = 48

UP, STAY, DOWN = 1, 0, -1


@dataclass(frozen=True)
class TierStep:
    """One tier of a league's ladder as a page shows it."""

    slug: str
    name: str
    up: str  # its promotion line in words ("" at the top, or for none)
    down: str  # its demotion line in words ("" at the bottom, or for none)
    start: bool  # where a player no settlement has placed races
    yours: bool  # the signed-in player's tier


def ladder(competition: Competition, *, yours: str | None = None) -> list[TierStep]:
    """The league's tiers, top first (the way a league table reads); empty outside a league."""
    last = len(competition.tiers) - 1
    return [
        TierStep(
            slug=tier.slug,
            name=tier.name,
            up="" if i == last else line_words(tier.promote, up=True),
            down="" if i == 0 else line_words(tier.demote, up=False),
            start=tier.slug == competition.start_tier,
            yours=tier.slug == yours,
        )
        for i, tier in reversed(list(enumerate(competition.tiers)))
    ]


def _tier(competition: Competition, slug: str | None) -> Tier | None:
    return next((t for t in competition.tiers if t.slug == slug), None)


def cohort_label(competition: Competition, cohort: str, tier: str | None) -> str:
    """A cohort as people read it: "Silver 3" in a league, else "Cohort 3"."""
    number = cohort.rpartition("-")[2]
    found = _tier(competition, tier)
    return f"{found.name} {number}" if found is not None else f"Cohort {number}"


@dataclass(frozen=True)
class Lines:
    """A cohort's promotion and demotion lines (a league's; none elsewhere): as written for the
    live script ("5", "20%"; "" for none), in words, the tiers they lead to, and how many
    players each takes in a cohort of ``size``."""

    up: str
    down: str
    up_words: str
    down_words: str
    up_to: str  # the tier above's name ("" at the top)
    down_to: str
    up_count: int
    down_count: int
    size: int

    def move(self, rank: int | None) -> int:
        """Where the lines put a rank now (None: no score), as tier_moves does without min_scores."""
        if rank is not None and rank <= self.up_count:
            return UP
        return DOWN if self.down_count and (rank is None or rank > self.size - self.down_count) else STAY


def cohort_lines(competition: Competition, tier: str | None, size: int) -> Lines | None:
    """The lines of a cohort of ``tier`` with ``size`` entrants (None outside a league)."""
    found = _tier(competition, tier)
    if found is None:
        return None
    place = competition.tier_index(found.slug)
    top, bottom = place == len(competition.tiers) - 1, place == 0
    promote = NO_CUT if top else found.promote
    demote = NO_CUT if bottom else found.demote
    return Lines(
        up="" if promote == NO_CUT else promote.text,
        down="" if demote == NO_CUT else demote.text,
        up_words=line_words(promote, up=True),
        down_words=line_words(demote, up=False),
        up_to="" if top else competition.tiers[place + 1].name,
        down_to="" if bottom else competition.tiers[place - 1].name,
        up_count=promote.of(size),
        down_count=demote.of(size),
        size=size,
    )


@dataclass(frozen=True)
class CohortRow:
    entry: board_reads.Entry
    move: int  # UP, STAY or DOWN where the lines put the row now
    lines_after: tuple[str, ...]  # "up", "down": the lines drawn under this row


def _drawn(move: int, after: int | None) -> tuple[str, ...]:
    """The lines between a row and what follows it (None: nothing known follows)."""
    drawn = []
    if after is not None and move == UP and after != UP:
        drawn.append("up")
    if after is not None and move != DOWN and after == DOWN:
        drawn.append("down")
    return tuple(drawn)


def cohort_rows(
    entries: list[board_reads.Entry],
    lines: Lines | None,
    *,
    before: board_reads.Entry | None = None,
    after: board_reads.Entry | None = None,
    unscored: bool = False,
) -> tuple[tuple[str, ...], list[CohortRow]]:
    """The lines drawn above a page of a cohort, and its rows, each with the lines drawn under
    it. A line falls between two rows whose moves differ: also between the page's first row and
    the one ``before`` it on the previous page (drawn above, and under that page's last row), and
    under the last row with a score when those without one (``unscored``, who rank after
    everyone) move otherwise."""
    if lines is None:
        return (), [CohortRow(entry, STAY, ()) for entry in entries]
    moves = [lines.move(entry.rank) for entry in entries]
    tail = lines.move(after.rank) if after is not None else lines.move(None) if unscored else None
    above = _drawn(lines.move(before.rank), moves[0]) if before is not None and moves else ()
    rows = [
        CohortRow(entry, moves[i], _drawn(moves[i], moves[i + 1] if i + 1 < len(moves) else tail))
        for i, entry in enumerate(entries)
    ]
    return above, rows


@dataclass(frozen=True)
class CohortTable:
    """A page of one cohort's standings, ranked within it, with its lines."""

    cohort: str
    label: str
    tier_name: str
    size: int  # entrants, with a score or not
    scored: int
    page: int
    pages: int
    lines_above: tuple[str, ...]  # the lines between the previous page's last row and this one's first
    rows: list[CohortRow]
    lines: Lines | None
    yours: bool  # the signed-in player's own cohort
    unscored: int  # entrants without a score, said under the last row (0 on an earlier page)
    page_size: int = COHORT_PAGE_SIZE


async def cohort_table(*, board: BoardConfig, window: str, cohort: str, page: int, yours: bool) -> CohortTable:
    """A page of ``cohort`` in the current period (404 cohort_not_found for one it has not);
    past the end, its last page."""
    competition = board.competition
    assert competition is not None
    read, before, entries, after = await _cohort_page(board, window, cohort, page)
    pages = max(1, -(-read.board.total // COHORT_PAGE_SIZE))
    if page > pages:  # an old link after scores were hidden: the last page rather than nothing
        page = pages
        read, before, entries, after = await _cohort_page(board, window, cohort, page)
    lines = cohort_lines(competition, read.tier, read.size)
    found = _tier(competition, read.tier)
    unscored = read.size - read.board.total if after is None else 0
    above, rows = cohort_rows(entries, lines, before=before, after=after, unscored=unscored > 0)
    return CohortTable(
        cohort=read.cohort,
        label=cohort_label(competition, read.cohort, read.tier),
        tier_name=found.name if found is not None else "",
        size=read.size,
        scored=read.board.total,
        page=page,
        pages=pages,
        lines_above=above,
        rows=rows,
        lines=lines,
        yours=yours,
        unscored=unscored,
    )


Neighbour = board_reads.Entry | None


async def _cohort_page(
    board: BoardConfig, window: str, cohort: str, page: int
) -> tuple[cohort_reads.CohortBoard, Neighbour, list[board_reads.Entry], Neighbour]:
    """A page of the cohort, with the rows just before and after it (None at either end): where
    the lines fall between two pages."""
    offset = (page - 1) * COHORT_PAGE_SIZE
    start = max(0, offset - 1)
    read = await cohort_reads.cohort_page(
        board=board, period=window, cohort=cohort, offset=start, limit=offset - start + COHORT_PAGE_SIZE + 1
    )
    rows = read.board.entries
    shown = rows[offset - start : offset - start + COHORT_PAGE_SIZE]
    before = rows[0] if offset > start and rows else None
    after = rows[offset - start + COHORT_PAGE_SIZE] if len(rows) > offset - start + COHORT_PAGE_SIZE else None
    return read, before, shown, after


@dataclass(frozen=True)
class CohortLink:
    cohort: str
    label: str
    size: int


@dataclass(frozen=True)
class CohortList:
    """A page of the period's cohorts (COHORT_LINKS_MAX at most), and who waits for a split."""

    total: int
    page: int
    pages: int
    links: list[CohortLink]
    held: int
    formed_at: dt.datetime | None
    pending: bool  # a balanced split is still to come


async def cohort_list(*, board: BoardConfig, window: str, page: int) -> CohortList:
    competition = board.competition
    assert competition is not None
    offset = (page - 1) * COHORT_LINKS_MAX
    read = await cohort_reads.cohorts_list(board=board, period=window, offset=offset, limit=COHORT_LINKS_MAX)
    pages = max(1, -(-read.total // COHORT_LINKS_MAX))
    if page > pages:  # an old link: the last page rather than nothing
        return await cohort_list(board=board, window=window, page=pages)
    return CohortList(
        total=read.total,
        page=page,
        pages=pages,
        links=[CohortLink(c.cohort, cohort_label(competition, c.cohort, c.tier), c.size) for c in read.cohorts],
        held=read.held,
        formed_at=read.formed_at,
        pending=not cohort_reads.formed(read),
    )


@dataclass(frozen=True)
class Outlook:
    """The signed-in player's period if it ended now: their place, move and reward."""

    cohort: str
    label: str
    rank: int | None
    size: int
    move: int
    tier_name: str
    tier_after_name: str
    reward: dict[str, Any] | None


@dataclass(frozen=True)
class GameCompetition:
    """A competing board with cohorts as its game page shows it."""

    window: str
    period_id: str
    ladder: list[TierStep]
    min_scores: int
    cohorts: CohortList | None  # None: the page shows another window
    table: CohortTable | None
    outlook: Outlook | None
    # The signed-in player in the period: "placed" (in a cohort), "waiting" (entered, held for
    # a balanced split), "out" (not entered); "" for a visitor with no linked player.
    me_state: str
    error: str | None  # why the cohort asked for is not shown


async def game_competition(
    *, board: BoardConfig, window: str, me: str | None, cohort: str | None, page: int, list_page: int
) -> GameCompetition | None:
    """What the game page shows of ``board``'s competition when it shows ``window``: None for a
    board without cohorts; the ladder alone for another window than the competing one. The
    table is the cohort asked for, else the signed-in player's (``me``), else none."""
    competition = board.competition
    if competition is None or competition.cohort_size is None:
        return None
    current, _ = board_reads.resolve_period(board=board, period=competition.window)
    # The player's cohort read once, for their place, the table's marker and their outlook.
    found = await cohort_reads.player_cohort(board=board, period=current, player_id=me) if me else None
    standing = cohort_reads.standing_in(found, me) if found is not None and me else None
    yours = standing.tier if standing is not None else None
    shown = GameCompetition(
        window=competition.window,
        period_id=current.id,
        ladder=ladder(competition, yours=yours),
        min_scores=competition.min_scores,
        cohorts=None,
        table=None,
        outlook=None,
        me_state=await _me_state(board, current, me, standing),
        error=None,
    )
    if window != competition.window:
        return shown
    wanted = cohort or (standing.cohort if standing is not None else None)
    table, error = None, None
    if wanted:
        mine = standing is not None and standing.cohort == wanted
        try:
            table = await cohort_table(board=board, window=window, cohort=wanted, page=page, yours=mine)
        except errors.ServiceError:
            error = f"The period {current.id} has no cohort “{wanted[:COHORT_QUOTE_MAX_CHARS]}”."
    return dataclasses.replace(
        shown,
        cohorts=await cohort_list(board=board, window=window, page=list_page),
        table=table,
        outlook=await _outlook(board, competition, standing, me, found),
        error=error,
    )


async def _me_state(
    board: BoardConfig, period: periods.Period, me: str | None, standing: cohort_reads.CohortStanding | None
) -> str:
    if me is None:
        return ""
    if standing is not None:
        return "placed"
    entered = await get_redis().zscore(keys.entry_entrants(board_reads.board_key(board, period)), me)
    return "waiting" if entered is not None else "out"


async def _outlook(
    board: BoardConfig,
    competition: Competition,
    standing: cohort_reads.CohortStanding | None,
    me: str | None,
    found: cohort_reads.RankedCohort | None,
) -> Outlook | None:
    if standing is None or me is None:
        return None
    preview = await player_preview(board=board, player_id=me, found=found)
    if preview is None:
        return None
    tier, after = _tier(competition, preview.tier), _tier(competition, preview.tier_after)
    return Outlook(
        cohort=preview.cohort,
        label=cohort_label(competition, preview.cohort, preview.tier or None),
        rank=preview.rank,
        size=standing.size,
        move=preview.move,
        tier_name=tier.name if tier is not None else "",
        tier_after_name=after.name if after is not None else "",
        reward=preview.reward,
    )
