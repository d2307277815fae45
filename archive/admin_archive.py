"""Admin of the archive app (being written)."""

from __future__ import annotations
