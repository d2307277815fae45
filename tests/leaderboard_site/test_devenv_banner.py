"""What ``make run``'s banner tells a developer to type works as written, in a shell that has
none of make's variables."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from leaderboard_site import devenv

REPO_DIR = Path(__file__).resolve().parents[2]


def test_it_prints_a_createsuperuser_command_that_works_in_a_new_terminal(tmp_path: Path) -> None:
    shown = devenv.banner("8000", "on port 8001")
    assert devenv.CREATESUPERUSER in shown
    # A new terminal: no DEBUG (make exports it), the project's own VAR_DIR (here a fresh one).
    env = {k: v for k, v in os.environ.items() if k not in ("DEBUG", "DATABASE_URL", "DJANGO_SETTINGS_MODULE")}
    env.update(
        {
            "VAR_DIR": str(tmp_path),
            "DJANGO_SUPERUSER_USERNAME": "admin",
            "DJANGO_SUPERUSER_PASSWORD": "a-long-enough-password-1",
            "DJANGO_SUPERUSER_EMAIL": "admin@example.com",
        }
    )
    # Typed in the project's folder, as the banner means, where make made .venv.
    command = devenv.CREATESUPERUSER
    migrate = command.replace("createsuperuser", "migrate -v 0")
    for line in (migrate, command + " --noinput"):
        done = subprocess.run(line, shell=True, env=env, cwd=REPO_DIR, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-2000:]
    assert "Superuser created successfully." in done.stdout
