"""The OpenAPI schema says what clients send and read: headers, vocabularies, examples.

(tests/contract/ checks the running server against it with schemathesis.)"""

from __future__ import annotations

from typing import Any

import jsonschema_rs
import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    response = Client().get("/api/v1/openapi.json")
    assert response.status_code == 200
    return response.json()


def _operations(schema: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(method, path, op) for path, ops in schema["paths"].items() for method, op in ops.items()]


def _resolve(schema: dict[str, Any], item: dict[str, Any]) -> dict[str, Any]:
    if "$ref" not in item:
        return item
    _, kind, name = item["$ref"].lstrip("#/").split("/")
    return schema["components"][kind][name]


def test_it_gives_every_request_and_response_schema_an_example_that_fits_it(schema: dict[str, Any]) -> None:
    for name, component in schema["components"]["schemas"].items():
        assert component.get("examples"), f"{name} has no example"
        document = {**component, "components": schema["components"]}
        validator = jsonschema_rs.validator_for({**document, "$defs": schema["components"]["schemas"]})
        for example in component["examples"]:
            errors = [e.message for e in validator.iter_errors(example)]
            assert not errors, f"{name}'s example does not fit it: {errors}"


def test_it_declares_the_headers_a_client_sends_and_reads(schema: dict[str, Any]) -> None:
    for method, path, op in _operations(schema):
        sent = {_resolve(schema, p)["name"] for p in op["parameters"] if _resolve(schema, p)["in"] == "header"}
        assert "X-Request-ID" in sent, (method, path)
        keyed = bool(op.get("security"))
        for status, response in op["responses"].items():
            headers = set(response.get("headers", {}))
            assert "X-Request-ID" in headers
            if int(status) in (429, 503):
                assert "Retry-After" in headers, (method, path, status)
            if keyed and int(status) != 401:
                assert {"RateLimit-Policy", "RateLimit"} <= headers, (method, path, status)
        assert keyed == (401 in {int(s) for s in op["responses"]}), (method, path)
    submit = schema["paths"]["/api/v1/games/{game}/leaderboards/{board}/scores"]["post"]
    names = {_resolve(schema, p)["name"] for p in submit["parameters"]}
    assert "Idempotency-Key" in names
    assert "Idempotent-Replayed" in submit["responses"]["200"]["headers"]
    assert schema["components"]["securitySchemes"]["BearerKey"]["scheme"] == "bearer"  # Authorization


def test_it_lists_the_windows_and_the_board_settings_vocabularies(schema: dict[str, Any]) -> None:
    board = schema["paths"]["/api/v1/games/{game}/leaderboards/{board}/{period}"]["get"]
    (period,) = [p for p in board["parameters"] if p.get("name") == "period"]
    assert period["schema"]["enum"] == ["daily", "weekly", "monthly", "all-time", "custom"]
    settings = schema["components"]["schemas"]["LeaderboardIn"]["properties"]
    assert settings["mode"]["enum"] == ["increment", "best", "latest"]
    assert settings["order"]["enum"] == ["desc", "asc"]
    assert settings["ties"]["enum"] == ["shared", "earliest", "subscore"]
    assert settings["subscore_order"]["enum"] == ["desc", "asc"]
    assert settings["windows"]["items"]["enum"] == ["daily", "weekly", "monthly", "all-time", "custom"]
    assert settings["format"]["pattern"] == "^(integer|time_ms|decimal:[1-6])$"


def test_it_declares_only_the_errors_each_kind_of_operation_can_answer(schema: dict[str, Any]) -> None:
    reads = [(m, p, op) for m, p, op in _operations(schema) if m == "get"]
    for method, path, op in reads:
        # A read's request can only be malformed or name what is not there; a cohort read may
        # also ask a board for cohorts it does not have (409 no_cohorts), a settlement read one that
        # does not compete (409 not_competing). a league read a board
        # without tiers (409 not_a_league); a keyed read (a player's rewards) meets its key's
        # refusals and budget too.
        cohort_read = "/cohorts" in path or "/settlement" in path or path.endswith(("/around", "/players"))
        allowed = {200, 400, 404, 422, 503} | ({409} if cohort_read or path.endswith("/league") else set())
        if op.get("security"):
            allowed |= {401, 403, 429}
        assert {int(s) for s in op["responses"]} <= allowed, (method, path)
    delete = schema["paths"]["/api/v1/games/{game}/leaderboards/{board}"]["delete"]
    assert 413 not in {int(s) for s in delete["responses"]}  # no body to be too large


def test_it_shows_what_each_error_status_says(schema: dict[str, Any]) -> None:
    error_out = schema["components"]["schemas"]["ErrorOut"]
    validator = jsonschema_rs.validator_for({**error_out, "components": schema["components"]})
    for method, path, op in _operations(schema):
        for status, response in op["responses"].items():
            if int(status) < 400:
                continue
            examples = response["content"]["application/json"].get("examples")
            assert examples, (method, path, status)
            for example in examples.values():
                assert validator.is_valid(example["value"]), (method, path, status)
    submit = schema["paths"]["/api/v1/games/{game}/leaderboards/{board}/scores"]["post"]["responses"]
    assert set(submit["429"]["content"]["application/json"]["examples"]) == {"rate_limited", "player_rate_limited"}


def test_it_names_each_api_schema_once_across_the_apps() -> None:
    # The schema's components are keyed by class name: a second EntryOut (a competition's entry)
    # silently replaced the board entry's, and the join was documented with the wrong shape.
    import inspect

    from pydantic import BaseModel

    from accounts import api as accounts_api
    from archive import api as archive_api
    from competitions import rewards_schemas
    from competitions import schemas as competition_schemas
    from core import schemas as core_schemas
    from games import schemas as game_schemas
    from presence import api as presence_api

    seen: dict[str, str] = {}
    clashes = []
    modules = (
        core_schemas,
        game_schemas,
        competition_schemas,
        rewards_schemas,
        archive_api,
        presence_api,
        accounts_api,
    )
    for module in modules:
        for name, value in vars(module).items():
            if inspect.isclass(value) and issubclass(value, BaseModel) and value.__module__ == module.__name__:
                if name in seen:
                    clashes.append(f"{name}: {seen[name]} and {module.__name__}")
                seen[name] = module.__name__
    assert clashes == []
