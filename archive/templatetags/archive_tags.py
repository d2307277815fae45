"""Template helpers of the history pages: a period's local dates, and the placement chart."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from django import template
from django.utils import dateformat

from games import periods

from ..selectors import Placement

register = template.Library()

# The chart's drawing area, in SVG user units; it scales to the width of its box.
CHART_WIDTH = 600
CHART_HEIGHT = 160
# Room for the rank labels on the left, and for the point markers at the edges.
CHART_LABEL_WIDTH = 48
CHART_MARGIN = 12


@register.filter
def period_dates(period: periods.Period, tz_name: str) -> str:
    """The days a period covered, in the game's time zone (its end is exclusive)."""
    if period.starts_at is None or period.ends_at is None:
        return "all time"
    tz = periods.zone(tz_name)
    first = period.starts_at.astimezone(tz).date()
    last = (period.ends_at - dt.timedelta(microseconds=1)).astimezone(tz).date()
    if period.kind == periods.MONTHLY:
        return dateformat.format(first, "F Y")
    if first == last:
        return dateformat.format(first, "D j M Y")
    if first.year != last.year:
        start = "D j M Y"
    elif first.month != last.month:
        start = "D j M"
    else:
        start = "D j"
    return f"{dateformat.format(first, start)} \u2013 {dateformat.format(last, 'D j M Y')}"


@register.inclusion_tag("archive/_placement_chart.html")
def placement_chart(placements: Sequence[Placement], kind: str) -> dict[str, Any]:
    """A line of the player's rank per period, oldest on the left, rank 1 at the top.

    ``placements`` come newest first (as the table lists them). The y scale runs
    from rank 1 to the worst rank shown, so a single point or equal ranks sit on one line.
    """
    oldest_first = list(reversed(placements))
    worst = max((p.rank for p in oldest_first), default=1)
    left, right = CHART_LABEL_WIDTH, CHART_WIDTH - CHART_MARGIN
    top, bottom = CHART_MARGIN, CHART_HEIGHT - CHART_MARGIN
    step = (right - left) / (len(oldest_first) - 1) if len(oldest_first) > 1 else 0
    points = []
    for i, placement in enumerate(oldest_first):
        x = left + i * step if step else (left + right) / 2
        y = top + (placement.rank - 1) * (bottom - top) / (worst - 1) if worst > 1 else top
        # Formatted here: the template would localize a float.
        points.append({"x": f"{x:.1f}", "y": f"{y:.1f}", "placement": placement})
    return {
        "kind": kind,
        "points": points,
        "polyline": " ".join(f"{p['x']},{p['y']}" for p in points),
        "best": min((p.rank for p in oldest_first), default=1),
        "worst": worst,
        "width": CHART_WIDTH,
        "height": CHART_HEIGHT,
        "left": left,
        "right": right,
        "top": top,
        "bottom": bottom,
    }
