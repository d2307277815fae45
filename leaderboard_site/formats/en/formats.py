"""How the admin and the pages write dates and times: one form everywhere, in UTC (the
project's TIME_ZONE), read the same by a studio in any country: 2026-11-26 16:04 UTC.
core.clock.shown() writes the same form for what a template does not render."""

from __future__ import annotations

DATETIME_FORMAT = "Y-m-d H:i T"
SHORT_DATETIME_FORMAT = "Y-m-d H:i T"
DATE_FORMAT = "Y-m-d"
SHORT_DATE_FORMAT = "Y-m-d"
TIME_FORMAT = "H:i"
