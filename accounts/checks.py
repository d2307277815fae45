"""`manage.py check --deploy`: a production that cannot mail its password resets."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core import checks

CONSOLE_MAIL = "django.core.mail.backends.console.EmailBackend"


@checks.register(checks.Tags.security, deploy=True)
def mail_check(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    if settings.DEBUG or settings.EMAIL_BACKEND != CONSOLE_MAIL:
        return []
    return [
        checks.Warning(
            "Password-reset mails are printed on the server's console, where no user reads them.",
            hint="Set EMAIL_URL to your mail server (smtp://user:password@host:587); README, Configuration.",
            id="accounts.W001",
        )
    ]
