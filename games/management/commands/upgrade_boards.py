"""``manage.py upgrade_boards``: convert Redis data of earlier versions (run after migrate)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from games.services import upgrade


class Command(BaseCommand):
    help = "Convert boards Redis keeps in a retired format (ties 'earliest' before 2026-11); safe to run again."

    def handle(self, *args: Any, **options: Any) -> None:
        report = upgrade.boards_upgrade()
        if report.boards or options["verbosity"] > 1:
            self.stdout.write(f"Upgraded {report.boards} period boards ({report.entries} entries).")
