"""Template filters of board pages: numbers as people read them."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django import template
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from core import board_rules, branding

register = template.Library()


@register.filter
def count(value: int | None) -> str:
    """1234567 -> '1,234,567' (what the live pages' scripts write too)."""
    return "" if value is None else f"{value:,}"


@register.filter
def score(value: int | None, fmt: str = board_rules.INTEGER) -> str:
    """A score in its board's format: 1,234,567 (integer), 1:21.999 (time_ms), 1,234.56 (decimal:2)."""
    return "" if value is None else board_rules.format_score(value, fmt or board_rules.INTEGER)


@register.filter
def metadata(value: dict[str, Any] | None) -> str:
    """An entry's metadata as a short line: 'car: mx-5 · replay: r-8812' (keys as submitted)."""
    if not value:
        return ""
    return " · ".join(f"{key}: {item}" for key, item in value.items())


@register.filter
def window_label(board: Any, kind: str) -> str:
    """A window as a tab or a heading names it: the board's own name for it ("Race week"), else
    Daily, Weekly, Monthly, All-time or Custom."""
    return board_rules.window_label(getattr(board, "window_labels", None) or {}, kind)


@register.filter
def window_phrase(board: Any, kind: str) -> str:
    """A window inside a sentence: "on the daily board", "on the Race week board"."""
    return board_rules.window_phrase(getattr(board, "window_labels", None) or {}, kind)


@register.simple_tag(takes_context=True)
def board_score(context: template.Context, value: int, board_slug: str) -> str:
    """A score in the format of the game's board ``board_slug`` (a recent panel mixes boards)."""
    game = context.get("game")
    board = game.board_named(board_slug) if game is not None else None
    return score(value, board.format if board is not None else board_rules.INTEGER)


@register.simple_tag(takes_context=True)
def board_name(context: template.Context, board_slug: str) -> str:
    """The display name of the game's board ``board_slug`` (its slug once deleted)."""
    game = context.get("game")
    board = game.board_named(board_slug) if game is not None else None
    return board.name if board is not None else board_slug


@register.simple_tag(takes_context=True)
def recent_player_url(context: template.Context, item: Any) -> str:
    """A recent submission's player on the board it went to: on the page's board, in the window
    shown; on another, that board's first window (it may keep no window of the page's)."""
    url = reverse("live:player", args=[context["game"].slug, item.player_id])
    shown = context.get("leaderboard")
    if shown is not None and item.leaderboard == shown.slug:
        return f"{url}?{context.get('board_query', '')}period={context.get('period', '')}"
    return f"{url}?{urlencode({'board': item.leaderboard})}"


@register.simple_tag
def game_brand(game: Any) -> str:
    """The game's name in a page's heading, with the studio's branding set in admin: its accent
    as a stripe before it, its logo, and its short name in place of the name on phones."""
    parts = []
    if game.accent:
        stripe = '<span class="game-accent" style="--game-accent: {}" aria-hidden="true"></span>'
        parts.append(format_html(stripe, game.accent))
    if game.logo_version:
        logo = branding.logo_path(game.slug, game.logo_version)
        parts.append(format_html('<img class="game-logo" src="{}" alt="" height="32">', logo))
    if game.short_name and game.short_name != game.name:
        names = '<span class="name-full">{}</span><span class="name-short">{}</span>'
        parts.append(format_html(names, game.name, game.short_name))
    else:
        parts.append(format_html("{}", game.name))
    return mark_safe("".join(parts))  # each part escaped by format_html
