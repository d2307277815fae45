"""Admin of the archive app: archived periods and close jobs (admin_archive.py), the
score ledger and corrections (admin_ledger.py)."""

from __future__ import annotations

from . import admin_archive, admin_ledger  # noqa: F401 - they register their ModelAdmins
