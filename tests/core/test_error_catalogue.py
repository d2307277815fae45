"""The error catalogue (core/errors/) is the one place that names error codes: no service builds
a ServiceError of its own, docs/api.md's tables and the codes each endpoint's section names agree
with it, and so does the OpenAPI schema (core/openapi.py): each operation lists exactly the codes
it can answer, with an example of each. (tests/contract/ checks every error the running server
answers against the schema.)"""

from __future__ import annotations

import ast
import re
from http import HTTPStatus
from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest
from django.test import Client

from core import errors, openapi

pytestmark = pytest.mark.django_db

REPO = Path(__file__).resolve().parents[2]
API_DOC = REPO / "docs" / "api.md"
_SOURCE_DIRS = (
    "core",
    "games",
    "presence",
    "accounts",
    "competitions",
    "archive",
    "moderation",
    "webhooks",
    "live",
    "leaderboard_site",
)

# docs/api.md's sections per endpoint, and the operations each one documents.
SECTIONS: dict[str, tuple[str, ...]] = {
    "POST /games/{game}/leaderboards/{board}/scores": ("games_api_submit_score",),
    "POST /games/{game}/scores/batch": ("games_api_submit_batch",),
    "PUT /games/{game}/leaderboards/{board}": ("games_api_put_board",),
    "PATCH /games/{game}/leaderboards/{board}": ("games_api_patch_board",),
    "DELETE /games/{game}/leaderboards/{board}": ("archive_api_delete_board",),
    "POST /games/{game}/leaderboards/{board}/entries": ("competitions_api_join",),
    "POST /games/{game}/leaderboards/{board}/players/{player_id}/attempts": ("competitions_api_grant_attempts",),
    "GET /games/{game}/players/{player_id}/rewards": ("competitions_rewards_api_player_rewards",),
    "POST /games/{game}/rewards/{grant_id}/claim": ("competitions_rewards_api_claim_reward",),
    "POST /games/{game}/presence": ("presence_api_report_presence",),
    "GET /games": ("games_api_list_games",),
    "GET /games/{game}": ("games_api_get_game",),
    "GET /games/{game}/leaderboards": ("games_api_list_boards", "games_api_get_board"),
    "GET /games/{game}/players/{player_id}": ("games_api_player_profile",),
    "GET /games/{game}/leaderboards/{board}/periods": ("archive_api_archived_periods",),
    "GET /games/{game}/recent": ("games_api_recent",),
    "GET /games/{game}/players?q=…": ("games_api_find_players",),
    "GET /games/{game}/leaderboards/{board}/{period}": ("archive_api_leaderboard", "archive_api_leaderboard_named"),
    "POST /games/{game}/leaderboards/{board}/end": ("archive_api_end_competition",),
    "GET …/{period}/{period_id}/export": ("archive_api_export_period",),
    "GET …/{period}/settlement/preview": ("competitions_settlement_api_settlement_preview",),
    "GET …/{period}/{period_id}/settlement": ("competitions_settlement_api_settlement",),
    "GET …/{period}/cohorts": ("competitions_cohorts_api_cohorts", "competitions_cohorts_api_cohorts_named"),
    "GET …/{period}/cohorts/{cohort}": ("competitions_cohorts_api_cohort", "competitions_cohorts_api_cohort_named"),
    "GET …/{period}/players/{player_id}": ("archive_api_standing", "archive_api_standing_named"),
    "GET …/{period}/players/{player_id}/around": ("archive_api_around", "archive_api_around_named"),
    "GET …/{period}/players?ids=…": ("archive_api_friends", "archive_api_friends_named"),
    "GET /games/{game}/leaderboards/{board}/players/{player_id}/league": ("competitions_rewards_api_player_league",),
    "GET /games/{game}/presence?offset=0&limit=50": ("presence_api_presence",),
    "GET /games/{game}/presence/{player_id}": ("presence_api_player_presence",),
    "POST /games/{game}/players/{player_id}/link-code": ("accounts_api_link_code",),
    "GET /games/{game}/webhooks": ("webhooks_api_list_webhooks",),
    "POST /games/{game}/webhooks": ("webhooks_api_create_webhook",),
    "GET /games/{game}/webhooks/events": ("webhooks_api_event_log",),
    "GET /games/{game}/webhooks/{endpoint_id}": ("webhooks_api_get_webhook",),
    "PATCH /games/{game}/webhooks/{endpoint_id}": ("webhooks_api_patch_webhook",),
    "DELETE /games/{game}/webhooks/{endpoint_id}": ("webhooks_api_delete_webhook",),
    "POST …/webhooks/{endpoint_id}/rotate-secret": ("webhooks_api_rotate_secret",),
    "POST …/webhooks/{endpoint_id}/test": ("webhooks_api_test_webhook",),
    "GET …/webhooks/{endpoint_id}/deliveries": ("webhooks_api_list_deliveries",),
    "GET …/webhooks/{endpoint_id}/deliveries/{delivery_id}": ("webhooks_api_get_delivery",),
    "POST …/deliveries/{delivery_id}/replay": ("webhooks_api_replay_delivery",),
    "POST …/webhooks/{endpoint_id}/replay": ("webhooks_api_replay_failed",),
}

_ROW = re.compile(r"^\| (\d{3}) \| `([a-z_]+)` \|", re.M)
_STATUS_CODE = re.compile(r"\b([45]\d\d) `([a-z_]+)`")
_CODE = re.compile(r"`([a-z_]+)`")


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    response = Client().get("/api/v1/openapi.json")
    assert response.status_code == 200
    return response.json()


def _operations(schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {op["operationId"]: op for ops in schema["paths"].values() for op in ops.values()}


def _declared(op_id: str, op: dict[str, Any]) -> set[str]:
    return openapi.operation_errors(op_id, keyed=bool(op.get("security")), body="requestBody" in op)


def _sections(text: str) -> dict[str, str]:
    parts = re.split(r"^### (.+)$", text, flags=re.M)
    return {title.strip(): body.split("\n## ")[0] for title, body in zip(parts[1::2], parts[2::2], strict=True)}


def _errors_text(section: str) -> str:
    """What a section says about its errors: its "Errors" paragraphs with their lists, and its error tables."""
    kept: list[str] = []
    lines = section.splitlines()
    inside = False
    for i, line in enumerate(lines):
        start = re.search(r"(?:^|\. |- )Errors\b", line)
        if start or line.startswith("| Status | `code`"):
            inside = True
            line = line[start.start() :] if start else line
        elif inside and not line.strip():
            following = next((later for later in lines[i + 1 :] if later.strip()), "")
            inside = following.startswith(("- ", "|", "  "))
        if inside:
            kept.append(line)
    return "\n".join(kept)


def test_it_gives_every_code_one_known_http_status() -> None:
    for code, entry in errors.CODES.items():
        assert entry.code == code
        assert re.fullmatch(r"[a-z][a-z_]*[a-z]", code), code
        assert 400 <= HTTPStatus(entry.status) < 600, code
        assert entry.when.endswith("."), code
        built = entry.error("message")
        assert (built.status, built.code) == (entry.status, code)


def test_it_has_an_example_of_every_code_an_api_client_can_meet() -> None:
    assert set(openapi.ERROR_SAMPLES) == set(errors.api_codes())
    for code, sample in openapi.ERROR_SAMPLES.items():
        assert (sample.status, sample.code) == (errors.CODES[code].status, code)


def test_it_builds_no_service_error_outside_the_catalogue() -> None:
    builders: set[str] = set()
    for top in _SOURCE_DIRS:
        for path in (REPO / top).rglob("*.py"):
            relative = path.relative_to(REPO).as_posix()
            if relative.startswith("core/errors/") or "/migrations/" in relative:
                continue
            for node in ast.walk(ast.parse(path.read_text(), relative)):
                if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) in (
                    "ServiceError",
                    "ErrorCode",
                ):
                    builders.add(relative)
    assert not builders, f"build errors with core.errors' constructors: {sorted(builders)}"


def test_it_lists_every_code_an_api_client_can_meet_in_the_main_table_of_api_md() -> None:
    main = _sections(API_DOC.read_text())["Errors"]
    rows = _ROW.findall(main)
    assert len(rows) == len(set(rows)), "a code is listed twice"
    listed = {code: int(status) for status, code in rows}
    assert listed == {code: entry.status for code, entry in errors.api_codes().items()}


def test_it_names_codes_in_api_md_only_as_the_catalogue_has_them() -> None:
    text = API_DOC.read_text()
    for status, code in [*_ROW.findall(text), *_STATUS_CODE.findall(text)]:
        assert code in errors.CODES, f"{status} `{code}` is not in the catalogue"
        assert errors.CODES[code].status == int(status), f"{status} `{code}`: not its status"


def test_it_documents_under_each_endpoint_only_codes_that_endpoint_can_answer(schema: dict[str, Any]) -> None:
    operations = _operations(schema)
    sections = _sections(API_DOC.read_text())
    assert {op for ops in SECTIONS.values() for op in ops} == set(operations), "an endpoint has no section"
    for title, op_ids in SECTIONS.items():
        said = _errors_text(sections[title])
        assert said, f"{title} says nothing of its errors"
        can = set().union(*(_declared(op_id, operations[op_id]) for op_id in op_ids))
        if op_ids == (openapi.BATCH_OPERATION,):
            can |= set(openapi.BATCH_ITEM_ERRORS)
        named = {code for code in _CODE.findall(said) if code in errors.CODES}
        assert named <= can, f"{title} names codes it cannot answer: {named - can}"
        table = {code for _, code in _ROW.findall(said)}
        if table:  # an endpoint's own table lists all its own codes
            assert table == set().union(*(openapi.OPERATION_ERRORS[op_id] for op_id in op_ids)), title


def test_it_lists_the_codes_a_batch_item_can_carry() -> None:
    batch = _sections(API_DOC.read_text())["POST /games/{game}/scores/batch"]
    listed = batch.split("Item errors use the single-score codes:")[1].split("Every item error")[0]
    assert set(_CODE.findall(listed)) == set(openapi.BATCH_ITEM_ERRORS)


def test_it_declares_for_each_operation_exactly_the_codes_it_can_answer_with_an_example_each(
    schema: dict[str, Any],
) -> None:
    operations = _operations(schema)
    assert set(openapi.OPERATION_ERRORS) == set(operations)
    error_out = schema["components"]["schemas"]["ErrorOut"]
    validator = jsonschema_rs.validator_for({**error_out, "components": schema["components"]})
    for op_id, op in operations.items():
        shown: set[str] = set()
        for status, response in op["responses"].items():
            if int(status) < 400:
                continue
            examples = response["content"]["application/json"]["examples"]
            assert examples, (op_id, status)
            for code, example in examples.items():
                assert errors.CODES[code].status == int(status), (op_id, status, code)
                assert example["value"]["error"]["code"] == code
                assert validator.is_valid(example["value"]), (op_id, code)
                assert f"`{code}`" in response["description"], (op_id, code)
            shown |= set(examples)
        assert shown == _declared(op_id, op), op_id
