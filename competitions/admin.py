"""Admin of a competition's durable records: settlements with each entrant's outcome, rewards
granted, players' league tiers and their history. Read-only lists: they change only by
settlement, claims and the expiry sweep (the services in competitions/services/), so admin
offers no act and the audit trail has none."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

from django.contrib import admin
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from .models import Grant, LeagueStanding, SettledEntry, Settlement

# A settlement's page shows its first entries (cohort by cohort, best first); a settlement of
# 100,000 entrants is paged in the entries' own list, filtered to it.
SETTLEMENT_PEEK_SIZE = 50


class _ReadOnly(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Grant)
class GrantAdmin(_ReadOnly):
    """Rewards granted when periods settled. A pending grant past `expires_at` can no longer be
    claimed, whether or not the expiry sweep has marked it expired yet."""

    list_display = ("granted_at", "grant_id", "board", "period_id", "player_id", "rank", "status", "expires_at")
    list_filter = ("status", "board")
    search_fields = ("player_id", "grant_id")
    list_select_related = ("board", "board__game")
    date_hierarchy = "granted_at"
    fields = (
        "grant_id",
        "game",
        "board",
        "window",
        "period_id",
        "player_id",
        "cohort",
        "tier",
        "rank",
        "reward",
        "status",
        "granted_at",
        "expires_at",
        "claimed_at",
    )
    readonly_fields = fields


@admin.register(LeagueStanding)
class LeagueStandingAdmin(_ReadOnly):
    """Each player's tier on a league board now (a player not listed is in its start tier)."""

    list_display = ("board", "player_id", "tier", "since_period_id", "updated_at")
    list_filter = ("board", "tier")
    search_fields = ("player_id",)
    list_select_related = ("board", "board__game")
    fields = ("board", "player_id", "tier", "since_period_id", "updated_at")
    readonly_fields = fields


@admin.register(Settlement)
class SettlementAdmin(_ReadOnly):
    """How each competing period settled: its totals, and its entries a page at a time."""

    list_display = (
        "board",
        "window",
        "period_id",
        "settled_at",
        "entrants",
        "cohorts",
        "promoted",
        "demoted",
        "granted",
    )
    list_filter = ("window", "board")
    search_fields = ("period_id",)
    list_select_related = ("board", "board__game")
    date_hierarchy = "settled_at"
    fields = (
        "board",
        "window",
        "period_id",
        "settled_at",
        ("entrants", "cohorts"),
        ("promoted", "demoted", "granted"),
        "entries",
    )
    readonly_fields = (
        "board",
        "window",
        "period_id",
        "settled_at",
        "entrants",
        "cohorts",
        "promoted",
        "demoted",
        "granted",
        "entries",
    )

    @admin.display(description="entries")
    def entries(self, obj: Settlement) -> SafeString:
        shown = list(obj.entries.all()[:SETTLEMENT_PEEK_SIZE])
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (e.cohort or "—", _or_dash(e.rank), e.player_id, _or_dash(e.score), e.tier or "—", e.move,
                 e.tier_after or "—", "—" if e.reward is None else json.dumps(e.reward))
                for e in shown
            ),
        )  # fmt: skip
        url = reverse("admin:competitions_settledentry_changelist")
        query = urlencode({"settlement__id__exact": obj.pk})
        return format_html(
            "<table><thead><tr><th>cohort</th><th>rank</th><th>player</th><th>score</th><th>tier</th><th>move</th>"
            "<th>tier after</th><th>reward</th></tr></thead><tbody>{}</tbody></table>"
            '<p>The first {} of {}. <a href="{}?{}">Every entry, a page at a time</a></p>',
            rows,
            len(shown),
            f"{obj.entrants:,}",
            url,
            query,
        )


def _or_dash(value: object) -> object:
    return "—" if value is None else value


@admin.register(SettledEntry)
class SettledEntryAdmin(_ReadOnly):
    """Each entrant's outcome in a settlement (open one from its settlement's page). On a league
    board, also what the period did to their tier: a player's entries are their history."""

    list_display = ("player_id", "settlement", "cohort", "rank", "score", "tier", "move", "tier_after", "reward")
    list_filter = ("move",)
    search_fields = ("player_id", "cohort")
    list_select_related = ("settlement", "settlement__board", "settlement__board__game")
    list_per_page = 100
    # Counting every settled entry of every settlement would be the slowest part of a page.
    show_full_result_count = False
    fields = ("settlement", "player_id", "cohort", "rank", "score", "tier", "move", "tier_after", "reward")
    readonly_fields = fields
