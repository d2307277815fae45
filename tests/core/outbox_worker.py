"""A process of its own for tests/core/test_outbox_crash.py, run as
``python -m tests.core.outbox_worker <command>`` in a node's environment (its own database):

- ``emit N``: write N events, each in a transaction of its own;
- ``deliver LOG CLAIM_SECS [HANG_AFTER MARKER]``: one delivery run (claims held CLAIM_SECS) to two
  handlers: ``test.ledger`` writes an AuditEntry named by the event's id in its delivery's
  transaction (a handler that records by event id), ``test.log`` appends the id to LOG (an effect
  outside the database). After HANG_AFTER calls of ``test.log`` it writes MARKER and waits,
  mid-delivery, for the test to kill it.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import django


def _emit(count: int) -> None:
    from django.db import transaction

    from core import clock, outbox

    for i in range(count):
        with transaction.atomic():
            outbox.event_emit(outbox.PlayerErased(game="crash", player_id=f"p{i}", erased_at=clock.iso(clock.now())))


def _deliver(log: Path, claim_secs: int, hang_after: int, marker: Path | None) -> None:
    from core import clock, outbox
    from core.models import AuditEntry

    calls = [0]

    def ledger(envelope: outbox.EventEnvelope) -> None:
        AuditEntry.objects.create(
            at=clock.now(), actor_name="test.ledger", action="erase", game_slug="crash", reason=envelope["id"]
        )

    def append(envelope: outbox.EventEnvelope) -> None:
        with log.open("a") as out:
            out.write(envelope["id"] + "\n")
            out.flush()
            os.fsync(out.fileno())
        calls[0] += 1
        if marker is not None and calls[0] == hang_after:
            marker.write_text(str(os.getpid()))
            time.sleep(3600)  # killed here, in the middle of the run

    outbox.subscribe("test.ledger", ledger)
    outbox.subscribe("test.log", append)
    run = outbox.outbox_deliver(claim_secs=claim_secs, batch=10)
    print(run.events, run.delivered, run.failed)


def main(argv: list[str]) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard_site.settings")
    django.setup()
    if argv[0] == "emit":
        _emit(int(argv[1]))
    else:
        hang_after = int(argv[3]) if len(argv) > 3 else 0
        _deliver(Path(argv[1]), int(argv[2]), hang_after, Path(argv[4]) if len(argv) > 4 else None)


if __name__ == "__main__":
    main(sys.argv[1:])
