"""Template helpers of the history pages: a period's local dates, and the placement chart."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from django import template
from django.utils import dateformat
from django.utils.html import format_html
from django.utils.safestring import SafeString

from games import periods

from ..selectors import Placement

register = template.Library()

NOWRAP = '<span class="nowrap">{}</span>'

# The chart's line is drawn in this SVG box, stretched to the plot's size (its stroke
# does not stretch); the points and labels are HTML placed in percent of the plot, so
# their text stays readable however narrow the page.
CHART_BOX_WIDTH = 1000
CHART_BOX_HEIGHT = 100
# Dates on the time axis are at least this far apart (percent of the plot's width),
# so that they never overlap on a phone.
CHART_MIN_LABEL_GAP_PCT = 28.0


@register.filter
def period_dates(period: periods.Period, tz_name: str) -> SafeString:
    """The days a period covered, in the game's time zone (its end is exclusive); a range
    may break at its dash, never inside a date."""
    if period.starts_at is None or period.ends_at is None:
        return format_html("{}", "all time")
    tz = periods.zone(tz_name)
    first = period.starts_at.astimezone(tz).date()
    last = (period.ends_at - dt.timedelta(microseconds=1)).astimezone(tz).date()
    if period.kind == periods.MONTHLY:
        return format_html(NOWRAP, dateformat.format(first, "F Y"))
    if first == last:
        return format_html(NOWRAP, dateformat.format(first, "D j M Y"))
    if first.year != last.year:
        start = "D j M Y"
    elif first.month != last.month:
        start = "D j M"
    else:
        start = "D j"
    return format_html(f"{NOWRAP} \u2013 {NOWRAP}", dateformat.format(first, start), dateformat.format(last, "D j M Y"))


@register.inclusion_tag("archive/_placement_chart.html")
def placement_chart(placements: Sequence[Placement], kind: str, tz_name: str = "UTC") -> dict[str, Any]:
    """A line of the player's rank per period over time, oldest on the left, rank 1 at the top.

    ``placements`` come newest first (as the table lists them). Points sit at their
    period's start on a time axis, so a gap of weeks looks like one; the y scale runs
    from rank 1 to the worst rank shown, so a single point or equal ranks sit on one line.
    """
    oldest_first = [p for p in reversed(placements) if p.period.starts_at is not None]
    if not oldest_first:
        return {"points": []}
    worst = max(p.rank for p in oldest_first)
    first, last = oldest_first[0].period.starts_at, oldest_first[-1].period.starts_at
    assert first is not None and last is not None
    span = (last - first).total_seconds()
    points: list[dict[str, Any]] = []
    box: list[tuple[float, float]] = []
    for placement in oldest_first:
        assert placement.period.starts_at is not None
        x = (placement.period.starts_at - first).total_seconds() / span * 100 if span else 50.0
        y = (placement.rank - 1) / (worst - 1) * 100 if worst > 1 else 0.0
        # Formatted here: the template would localize a float.
        points.append({"x": f"{x:.2f}", "y": f"{y:.2f}", "x_value": x, "placement": placement})
        box.append((x * CHART_BOX_WIDTH / 100, y * CHART_BOX_HEIGHT / 100))
    return {
        "kind": kind,
        "points": points,
        "polyline": " ".join(f"{x:.1f},{y:.1f}" for x, y in box),
        "box_width": CHART_BOX_WIDTH,
        "box_height": CHART_BOX_HEIGHT,
        "best": min(p.rank for p in oldest_first),
        "worst": worst,
        "dates": _date_labels(points, kind, periods.zone(tz_name)),
    }


def _date_labels(points: list[dict[str, Any]], kind: str, tz: dt.tzinfo) -> list[dict[str, str]]:
    """The first and last point's dates, and those between that leave room around them."""
    placed: list[dict[str, Any]] = []
    for i, point in enumerate(points):
        x = point["x_value"]
        is_end = i in (0, len(points) - 1)
        clear_of_ends = x - points[0]["x_value"] >= CHART_MIN_LABEL_GAP_PCT and (
            points[-1]["x_value"] - x >= CHART_MIN_LABEL_GAP_PCT
        )
        if is_end or (clear_of_ends and (not placed or x - placed[-1]["x_value"] >= CHART_MIN_LABEL_GAP_PCT)):
            placed.append(point)
    if len(placed) == 2 and placed[1]["x_value"] - placed[0]["x_value"] < CHART_MIN_LABEL_GAP_PCT:
        placed = [placed[0]]  # two points close together: one date says enough
    years = {p["placement"].period.starts_at.astimezone(tz).year for p in points}
    date_format = "M Y" if kind == periods.MONTHLY else ("j M Y" if len(years) > 1 else "j M")
    labels = []
    for point in placed:
        align = "start" if point is points[0] and len(points) > 1 else "end" if point is points[-1] else "middle"
        text = dateformat.format(point["placement"].period.starts_at.astimezone(tz).date(), date_format)
        labels.append({"x": point["x"], "text": text, "align": align})
    return labels
