"""The competition part of a board in the game admin (issue 22): its rules in words, a preview of
the current period (cohort sizes, what settling it now would do) and "End this season's
competition now", confirmed, through archive.services.competition_end (which audits it).

Only reads and adapts: the words are core.competition_words', the numbers the competition
selectors', the act the service's. The preview stays bounded on a page that shows every board
of a game: a few Redis commands per competing board, the first cohorts only, and a settlement
computed only for a field small enough to compute at once.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from archive.services import competition_end
from competitions.selectors import cohorts as cohort_reads
from competitions.selectors import phase as phase_reads
from competitions.selectors import settlement as settlement_reads
from core import board_rules, clock, competition_words
from core.audit import Actor
from core.competition_rules import Competition
from core.config import BoardConfig
from core.errors import REDIS_DOWN_MESSAGE, REDIS_ERRORS, ServiceError
from core.models import Game, Leaderboard
from core.redis import run_sync
from games import periods
from games import selectors as board_reads

if TYPE_CHECKING:
    from django.contrib.admin import ModelAdmin

# The preview lists this many cohorts' sizes (the count says how many more there are).
PREVIEW_COHORTS = 20
# ... and computes the settlement's totals only for a field this small: the computation reads
# the whole period (entrants, cohorts, board) and ranks it in the web process.
PREVIEW_MAX_ENTRANTS = 10_000
NONE = "—"
# The season's end commits before its close jobs are made due (archive.services.competition_end).
ENDED_REDIS_DOWN = (
    "The season's end moved to now, but Redis is unavailable: its close job is made by the background's "
    "sweep once Redis is back."
)


def _competition(board: Leaderboard) -> Competition | None:
    if not board.pk:
        return None
    try:
        return board.competition()
    except board_rules.RuleError:
        return None  # the form shows what is wrong with the settings


def rules_html(board: Leaderboard) -> SafeString | str:
    """The competition's rules, a line each (a league's tiers and the reward table one per line)."""
    competition = _competition(board)
    if competition is None:
        return NONE
    rows = format_html_join("", "<tr><th>{}</th><td>{}</td></tr>", competition_words.rules_in_words(competition))
    return format_html('<table class="competition-rules">{}</table>', rows)


@dataclass(frozen=True)
class Preview:
    period_id: str
    entrants: int
    settles_at: dt.datetime | None
    cohorts: cohort_reads.Cohorts | None  # None: the board has no cohorts
    cohorts_at: dt.datetime | None  # a balanced split still to come: no settlement preview before it
    settlement: settlement_reads.SettlementView | None  # None: not computed (see why in _settling)


async def _preview(board: BoardConfig) -> Preview | None:
    phase = await phase_reads.competition_phase(board=board)
    competition = board.competition
    if phase is None or competition is None:
        return None
    period, _ = board_reads.resolve_period(board=board, period=phase.window)
    cohorts = None
    if competition.cohort_size is not None:
        cohorts = await cohort_reads.cohorts_list(board=board, period=phase.window, limit=PREVIEW_COHORTS)
    settlement = None
    # A preview would draw balanced cohorts before their time (the settlement splits a period
    # first): none until they are drawn.
    if not phase.cohorts_pending and phase.entrants <= PREVIEW_MAX_ENTRANTS:
        settlement = await settlement_reads.settlement_preview(
            board=board, period=phase.window, cohort=None, player_id=None, offset=0, limit=0
        )
    return Preview(
        period_id=phase.period_id,
        entrants=phase.entrants,
        settles_at=periods.settles_at(period, competition),
        cohorts=cohorts,
        cohorts_at=phase.cohorts_at if phase.cohorts_pending else None,
        settlement=settlement,
    )


def _when(at: dt.datetime | None) -> str:
    return "never" if at is None else clock.shown(at)


def _settling(found: Preview) -> str:
    if found.settlement is not None:
        s = found.settlement
        return (
            f"If it ended now: {s.promoted:,} promoted, {s.demoted:,} demoted, {s.granted:,} rewarded "
            f"({s.entrants:,} entrants in {s.cohorts:,} cohort{'' if s.cohorts == 1 else 's'})."
        )
    if found.cohorts_at is not None:
        return f"Its cohorts are drawn at {_when(found.cohorts_at)}; what it would settle shows from then."
    return (
        f"Too many entrants to settle here at once (more than {PREVIEW_MAX_ENTRANTS:,}): "
        "GET …/settlement/preview pages it."
    )


def _cohort_sizes(cohorts: cohort_reads.Cohorts) -> str:
    if not cohorts.total:
        return f"No cohorts yet ({cohorts.held:,} held for the split)." if cohorts.held else "No cohorts yet."
    shown = ", ".join(f"{c.cohort} with {c.size:,}" for c in cohorts.cohorts)
    more = cohorts.total - len(cohorts.cohorts)
    shown += f", and {more:,} more" if more else ""
    return f"{cohorts.total:,} cohort{'' if cohorts.total == 1 else 's'}: {shown}."


def preview_html(board: Leaderboard) -> SafeString | str:
    """The current period: entrants, cohort sizes, and its settlement's totals if it ended now."""
    if _competition(board) is None or not board.active:
        return NONE
    config = BoardConfig.from_model(board, board.game)
    try:
        found = run_sync(lambda: _preview(config))
    except REDIS_ERRORS:
        return REDIS_DOWN_MESSAGE
    if found is None:
        return NONE
    lines = [
        f"Period {found.period_id}: {found.entrants:,} entrant{'' if found.entrants == 1 else 's'}; "
        f"settles {_when(found.settles_at)}."
    ]
    if found.cohorts is not None:
        lines.append(_cohort_sizes(found.cohorts))
    lines.append(_settling(found))
    return format_html("<ul>{}</ul>", format_html_join("", "<li>{}</li>", ((line,) for line in lines)))


def endable(board: Leaderboard) -> bool:
    """Whether to offer the act: a competing season running now (the service decides for good)."""
    competition = _competition(board)
    now = clock.now()
    return (
        competition is not None
        and competition.window == periods.ALL_TIME
        and board.active
        and board.starts_at is not None
        and board.ends_at is not None
        and board.starts_at < now < board.ends_at
    )


def end_link(board: Leaderboard) -> SafeString | str:
    if not endable(board):
        return NONE
    url = reverse("admin:core_game_end_competition", args=[board.game_id, board.slug])
    return format_html('<a class="deletelink" href="{}">End this season\'s competition now…</a>', url)


def end_competition_view(admin: ModelAdmin[Game], request: HttpRequest, object_id: str, slug: str) -> HttpResponse:
    """The confirmation of ending a season's competition now, then the act (audited by the service)."""
    game = get_object_or_404(Game, pk=object_id)
    if not admin.has_change_permission(request, game):
        raise PermissionDenied
    board = get_object_or_404(Leaderboard.objects.select_related("game"), game=game, slug=slug)
    back = reverse("admin:core_leaderboard_change", args=[board.pk])
    if request.method == "POST" and request.POST.get("confirm") == "yes":
        try:
            competition_end(board=board, by=Actor.of(request.user))
        except ServiceError as error:
            admin.message_user(request, error.message, messages.ERROR)
        except REDIS_ERRORS:
            admin.message_user(request, ENDED_REDIS_DOWN, messages.WARNING)
        else:
            board.refresh_from_db()
            admin.message_user(
                request,
                f"Ended the competition of {board.name} ({board.slug}) at {_when(board.ends_at)}: it takes no more "
                "scores, and it settles when its close job runs.",
                messages.SUCCESS,
            )
        return HttpResponseRedirect(back)
    competition = _competition(board)
    context: dict[str, Any] = {
        **admin.admin_site.each_context(request),
        "title": f"End the competition of {board.name} now?",
        "opts": admin.opts,
        "object": game,
        "board": board,
        "rules": competition_words.rules_in_words(competition) if competition else [],
        "delay": competition_words.duration_words(competition.settle_delay_secs)
        if competition and competition.settle_delay_secs
        else "",
        "back": back,
    }
    return TemplateResponse(request, "admin/core/game/end_competition.html", context)
