"""Presence keeps no database models, so it registers nothing in admin."""

from __future__ import annotations
