"""docs/events.md says what core/outbox/events.py declares: an example of every event type, each
one a valid envelope of its type, every type in its table, and a subscription example that runs."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from core import outbox

DOC = Path(__file__).resolve().parents[2] / "docs" / "events.md"


def _blocks(language: str) -> list[tuple[str, str]]:
    """(the ### heading above it, the code) of every fenced block in ``language``."""
    found: list[tuple[str, str]] = []
    heading = ""
    for part in re.split(r"^(### .+|```\w*\n[\s\S]*?^```)$", DOC.read_text(), flags=re.M):
        if part.startswith("### "):
            heading = part[4:].strip()
        elif part.startswith(f"```{language}\n"):
            found.append((heading, part[len(language) + 4 : -3]))
    return found


def test_it_shows_a_valid_example_of_every_event_type() -> None:
    examples: dict[str, dict[str, Any]] = {}
    for heading, code in _blocks("json"):
        envelope = json.loads(code)
        outbox.envelope_check(envelope)
        assert envelope["type"] == heading, f"the example under {heading} is a {envelope['type']}"
        assert envelope["type"] not in examples
        examples[envelope["type"]] = envelope
    assert set(examples) == set(outbox.EVENTS)


def test_it_lists_every_event_type_in_its_table() -> None:
    listed = set(re.findall(r"^\| \[`([a-z.]+)`\]", DOC.read_text(), flags=re.M))
    assert listed == set(outbox.EVENTS)


def test_it_subscribes_as_its_example_does() -> None:
    ((_, code),) = _blocks("python")
    namespace: dict[str, Any] = {"__name__": "results"}
    exec(compile(code, str(DOC), "exec"), namespace)  # the documentation's own example, as written
    namespace["ResultsConfig"].ready(None)
    try:
        (subscription,) = [s for s in outbox.subscriptions_for("season.ended") if s.name.startswith("results.")]
        assert subscription.name == "results.season-end-log"
        season = next(json.loads(c) for heading, c in _blocks("json") if heading == "season.ended")
        subscription.handler(season)
    finally:
        outbox.unsubscribe("results.season-end-log")
