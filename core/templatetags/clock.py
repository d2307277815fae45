"""Template filters that read the time from core/clock.py (Django's own timesince,
timeuntil and {% now %} read the wall clock, which tests pin and pages must agree with)."""

from __future__ import annotations

import datetime as dt

from django import template
from django.utils.timesince import timesince, timeuntil

from core import clock

register = template.Library()


@register.filter
def ago(moment: dt.datetime | None) -> str:
    """'5 minutes' for an instant five minutes before now (the page adds 'ago')."""
    return "" if moment is None else timesince(moment, now=clock.now())


@register.filter
def until(moment: dt.datetime | None) -> str:
    """'3 hours, 2 minutes' until an instant after now."""
    return "" if moment is None else timeuntil(moment, now=clock.now())


@register.filter
def iso(moment: dt.datetime | None) -> str:
    """The one text form of an instant (``2026-11-22T10:51:32.598Z``), for datetime attributes."""
    return "" if moment is None else clock.iso(moment)


@register.simple_tag
def server_now_ms() -> int:
    """Now, in epoch ms: the page's scripts measure their own clock's offset against it."""
    return clock.now_ms()
