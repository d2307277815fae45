from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def manage(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


PRODUCTION = {
    "DEBUG": "0",
    "SECRET_KEY": "k" * 20 + "-production-secret-from-the-environment-0123456789",
    "ALLOWED_HOSTS": "leaderboard.example.com",
    "EMAIL_URL": "smtp://mailer:secret@mail.example.com:587",
}


def test_it_passes_the_deploy_check_under_production_settings():
    result = manage("check", "--deploy", "--fail-level", "WARNING", **PRODUCTION)
    assert result.returncode == 0, result.stdout + result.stderr


def test_it_warns_a_production_that_would_print_its_password_reset_mails():
    result = manage("check", "--deploy", "--fail-level", "WARNING", **{**PRODUCTION, "EMAIL_URL": ""})
    assert result.returncode != 0
    assert "accounts.W001" in result.stderr and "EMAIL_URL" in result.stderr


def test_it_refuses_to_start_without_a_secret_key_when_debug_is_off():
    result = manage("check", DEBUG="0", SECRET_KEY="")
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr


def test_it_fails_loudly_on_a_malformed_setting():
    result = manage("check", PERIOD_RETENTION_SECS="a week")
    assert result.returncode != 0
    assert "PERIOD_RETENTION_SECS must be an integer" in result.stderr
