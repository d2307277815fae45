"""Client -> server socket messages: each declared in live/sockets/messages.py as a closed
model, dispatched from one table, documented in docs/websocket.md."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from pydantic import BaseModel

from live import events
from live.sockets import messages
from live.sockets.game import GameSocket
from live.sockets.home import HomeSocket
from tests.live.live_helpers import QUIET_SECS, make_config

pytestmark = pytest.mark.django_db(transaction=True)

# One valid message of each action, every field set.
EXAMPLES: dict[str, dict[str, Any]] = {
    "subscribe": {"action": "subscribe", "leaderboard": "main", "period": "daily", "limit": 10, "cohort": "mine"},
    "unsubscribe": {"action": "unsubscribe", "leaderboard": "main", "period": "daily", "cohort": "3"},
    "follow": {"action": "follow", "player_ids": ["alice", "b.o:b-2"]},
    "presence": {"action": "presence"},
    "recent": {"action": "recent"},
}
# What each action answers first, on a game with one board and nobody followed yet.
FIRST_REPLY = {"subscribe": "standings", "presence": "presence", "recent": "recent"}


def test_it_declares_every_action_a_socket_takes_and_nothing_else() -> None:
    assert set(GameSocket.actions) == set(messages.MESSAGES) == set(EXAMPLES)
    assert {name: action.model for name, action in GameSocket.actions.items()} == messages.MESSAGES
    assert HomeSocket.actions == {}


@pytest.mark.parametrize("action", sorted(EXAMPLES))
def test_it_round_trips_each_message(action: str) -> None:
    model = messages.MESSAGES[action]
    parsed = model.model_validate(EXAMPLES[action])

    assert parsed.model_dump(exclude_unset=True) == EXAMPLES[action]
    assert model.model_validate(parsed.model_dump()) == parsed
    assert model.model_validate_json(parsed.model_dump_json()) == parsed
    assert model.model_json_schema()["additionalProperties"] is False


@pytest.mark.parametrize("action", sorted(EXAMPLES))
def test_it_refuses_an_unknown_field_of_each_message_by_name(action: str) -> None:
    refused = messages.parse(GameSocket.actions, {**EXAMPLES[action], "colour": "red"})

    assert isinstance(refused, messages.Refusal)
    assert (refused.code, refused.field, refused.unknown_field) == ("invalid", "colour", True)
    assert "'colour'" in refused.message and action in refused.message


def test_it_keeps_the_defaults_the_protocol_promises() -> None:
    parsed = messages.parse(GameSocket.actions, {"action": "subscribe", "period": "daily"})

    assert not isinstance(parsed, messages.Refusal)
    _, subscribe = parsed
    assert isinstance(subscribe, messages.Subscribe)
    assert (subscribe.leaderboard, subscribe.limit) == (None, messages.DEFAULT_LIMIT)


def test_it_documents_every_action_and_field() -> None:
    text = (Path(settings.BASE_DIR) / "docs" / "websocket.md").read_text()
    section = text[text.index("## Client → server") : text.index("## Server → client")]
    headings = set(re.findall(r"^### (\w+)$", section, re.MULTILINE))
    for action, model in messages.MESSAGES.items():
        assert action in headings, f"docs/websocket.md has no '### {action}'"
        body = section[section.index(f"### {action}\n") :]
        body = body[: body.index("\n### ", 1)] if "\n### " in body[1:] else body
        for field in set(model.model_fields) - {"action"}:
            assert f"`{field}`" in body, f"docs/websocket.md's {action} does not document `{field}`"


async def test_it_answers_each_action_through_the_table(make_game: Any, sockets: Any) -> None:
    await make_config(make_game)
    ws = await sockets.open()
    for action in ("subscribe", "presence", "recent", "follow", "unsubscribe"):
        # This game's board has no cohorts (tests/live/test_live_cohorts.py subscribes to some).
        await ws.send_json_to({k: v for k, v in EXAMPLES[action].items() if k != "cohort"})
        if action in FIRST_REPLY:
            assert (await ws.receive_json_from())["type"] == FIRST_REPLY[action]
        else:
            assert await ws.receive_nothing(timeout=QUIET_SECS)  # nobody on the board to report


async def test_it_answers_an_unknown_field_with_an_error_and_stays_open(make_game: Any, sockets: Any) -> None:
    await make_config(make_game)
    ws = await sockets.open()

    await ws.send_json_to({"action": "subscribe", "period": "daily", "limt": 5})
    error = await ws.receive_json_from()

    assert error == {
        "type": "error",
        "code": "invalid",
        "message": "Unknown field 'limt': subscribe takes action, leaderboard, period, limit, offset, cohort.",
    }
    await ws.send_json_to({"action": "subscribe", "period": "daily", "limit": 5})
    assert (await ws.receive_json_from())["type"] == "standings"


def test_it_documents_every_error_code() -> None:
    text = (Path(settings.BASE_DIR) / "docs" / "websocket.md").read_text()
    section = text[text.index("### error\n") : text.index("## Presence: what an open socket counts as")]
    summary = text[text.index("### Validation summary") : text.index("## Server → client")]
    for code in events.ERROR_CODES:
        assert f"`{code}`" in section, f"docs/websocket.md's error does not list `{code}`"
        assert f"`{code}`" in summary, f"docs/websocket.md's validation summary does not say when `{code}` comes"


def test_it_refuses_a_cohort_that_cannot_be_an_id() -> None:
    for cohort in ("", "Mine", "3 ", "x" * (messages.COHORT_MAX_CHARS + 1), 3):
        refused = messages.parse(GameSocket.actions, {"action": "subscribe", "period": "weekly", "cohort": cohort})
        assert isinstance(refused, messages.Refusal), cohort
        assert (refused.code, refused.field) == ("invalid", "cohort")


def test_it_closes_every_model() -> None:
    for model in messages.MESSAGES.values():
        assert issubclass(model, BaseModel)
        assert model.model_config.get("extra") == "forbid", model
