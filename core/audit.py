"""The audit trail (core.models.AuditEntry): the services that hide, unhide, rename,
correct, erase and delete record here who did it, when, what and why."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

from . import clock, errors, text
from .models import AUDIT_REASON_MAX_CHARS, AuditEntry

Action = AuditEntry.Action


@dataclass(frozen=True)
class Actor:
    """Who acts: a signed-in admin, or a command run on the server."""

    name: str
    user_id: int | None = None

    @classmethod
    def of(cls, user: AbstractBaseUser | AnonymousUser) -> Actor:
        if not user.is_authenticated:
            raise ValueError("an anonymous user cannot act")
        return cls(name=user.get_username(), user_id=user.pk)

    @classmethod
    def command(cls, name: str) -> Actor:
        return cls(name=f"manage.py {name}")


# What a service records when its caller names no one (the tests, the shell).
SYSTEM = Actor(name="system")


def checked_reason(reason: str, *, required: bool = False) -> str:
    """A reason as the trail stores it: one line, trimmed; refused (422) if too long or empty when required."""
    reason = reason.strip()
    if required and not reason:
        raise errors.invalid("reason", "Say why (it goes in the audit trail).")
    if len(reason) > AUDIT_REASON_MAX_CHARS or text.has_control_characters(reason):
        raise errors.invalid("reason", f"One line of at most {AUDIT_REASON_MAX_CHARS} characters.")
    return reason


def audit_record(
    *,
    action: str,
    game_slug: str,
    by: Actor,
    player_id: str = "",
    reason: str = "",
    detail: dict[str, Any] | None = None,
) -> AuditEntry:
    return AuditEntry.objects.create(
        at=clock.now(),
        actor_id=by.user_id,
        actor_name=by.name[:150],
        action=action,
        game_slug=game_slug,
        player_id=player_id,
        reason=reason,
        detail=detail or {},
    )


def audit_forget_names(*, game_slug: str, player_id: str) -> int:
    """An erased player's earlier entries keep what was done, not the names they had."""
    entries = AuditEntry.objects.filter(game_slug=game_slug, player_id=player_id, action=Action.RENAME)
    return entries.update(detail={})
