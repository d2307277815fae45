"""Template filters of board pages: numbers as people read them."""

from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def count(value: int | None) -> str:
    """1234567 -> '1,234,567' (what the live pages' scripts write too)."""
    return "" if value is None else f"{value:,}"


@register.filter
def score(value: int | None) -> str:
    """A score as a page shows it: an integer with thousands separators."""
    return count(value)
