"""The bad-input catalogue (tests/bad_inputs.py) sent along the contract run: each generated case
of an operation carries a few of the operation's catalogue requests, derived from it (its body
with a catalogue value spliced in at a place drawn from it, a bad setting merged into it, a bad
slug or query parameter), sent to the same server with the run's key. hooks.py runs them as the
check ``hostile_inputs_refused``; test_schemathesis.py checks that every one was sent.

Each must meet the house's rule: no server error, a refusal in the error envelope with a code
the schema lists for that operation and status, exactly the refusal the catalogue says where
that is certain (a value refused wherever it stands, a bad slug or query parameter), and nothing
changed (every board's settings, the recent scores and who is online read back the same).
"""

from __future__ import annotations

import json
import os
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from tests import bad_inputs as catalogue
from tests.bad_inputs import Bad, BadQuery, BadSettings, BadSlug

GAME = "contract"
BASE = f"/api/v1/games/{GAME}"
# The hostile requests' path parameters: the test's game and board, whatever was generated.
PATH_PARAMETERS = {
    "game": GAME,
    "board": "main",
    "period": "daily",
    "player_id": "ada",
    "cohort": "1",
    # No such endpoint or delivery: the refusal of the request comes first.
    "endpoint_id": "ep_none",
    "delivery_id": "dlv_none",
}
# The slug a PUT past the game's limit asks for (the test sets the game's max_boards to its boards).
NEW_SLUG = "over-the-limit"
SCORE_OPERATIONS = ("games_api_submit_score", "games_api_submit_batch")
BOARD_OPERATIONS = ("games_api_put_board", "games_api_patch_board")
# What stands in for a generated body that is no object to mutate.
VALID_BODIES: dict[str, Any] = {
    "games_api_submit_score": {"player_id": "hostile", "score": 1},
    "games_api_submit_batch": {"scores": [{"leaderboard": "main", "player_id": "hostile", "score": 1}]},
    "presence_api_report_presence": {"online": ["hostile"], "offline": []},
    "games_api_put_board": {"mode": "best", "order": "desc"},
    "games_api_patch_board": {"name": "Main"},
}
# What the required query parameters other than the bad one are.
VALID_QUERY = {"q": "ada", "ids": "ada,bob"}
ITEM_FIELDS: dict[str, tuple[Bad, ...]] = {
    "player_id": catalogue.PLAYER_IDS,
    "score": catalogue.SCORES,
    "subscore": catalogue.SCORES,
    "display_name": catalogue.NAMES,
    "metadata": catalogue.METADATA,
}
_LISTED = re.compile(r"`([a-z_]+)`")

Expected = tuple[int, str, str | None]


@dataclass(frozen=True)
class Hostile:
    """One request of the catalogue, derived from a generated case."""

    name: str
    method: str
    path: str
    raw: bytes | None  # the body; None: none
    params: dict[str, str]
    # What it must get exactly; None: any refusal (a 4xx, or a batch refusing its every item).
    expected: Expected | None


@dataclass(frozen=True)
class Operation:
    """What the plan needs of an OpenAPI operation."""

    operation_id: str
    method: str
    path: str
    query: tuple[str, ...]
    required_query: tuple[str, ...]
    has_body: bool

    @classmethod
    def of(cls, method: str, path: str, raw: dict[str, Any]) -> Operation:
        query = [p for p in raw.get("parameters", []) if p.get("in") == "query"]
        names = tuple(p["name"] for p in query)
        required = tuple(p["name"] for p in query if p.get("required"))
        return cls(raw.get("operationId", ""), method.upper(), path, names, required, "requestBody" in raw)

    def url(self, **overrides: str) -> str:
        values = {**PATH_PARAMETERS, "period_id": os.environ.get("ST_PERIOD_ID", ""), **overrides}
        return re.sub(r"\{(\w+)\}", lambda m: values[m.group(1)], self.path)


# A request of the plan, made from the generated body and the case's random draws.
Maker = Callable[[Any, random.Random], Hostile]


def plan(operation: Operation) -> list[tuple[str, Maker]]:
    """Every catalogue request for ``operation``, named, in the order they are sent."""
    made: list[tuple[str, Maker]] = []
    if operation.has_body and operation.operation_id in VALID_BODIES:
        made += [(f"{'key' if b.key else 'anywhere'}: {b.name}", _anywhere(operation, b)) for b in _whole()]
        made += [(f"body: {b.name}", _body(operation, b)) for b in catalogue.BODIES]
        made += _field_plan(operation)
    if operation.operation_id == "games_api_put_board":
        made += [(f"slug: {s.name}", _slug(operation, s)) for s in catalogue.SLUGS]
        made.append(("a board past the limit", _over_the_limit(operation)))
    for parameter in operation.query:
        bads = catalogue.QUERIES.get(parameter, ())
        made += [(f"query {parameter}: {b.name}", _query(operation, parameter, b)) for b in bads]
    return made


def _whole() -> tuple[Bad, ...]:
    return catalogue.ANYWHERE + catalogue.KEYS


def _field_plan(operation: Operation) -> list[tuple[str, Maker]]:
    if operation.operation_id in BOARD_OPERATIONS:
        return [(f"settings: {s.name}", _settings(operation, s)) for s in catalogue.BOARD_SETTINGS]
    if operation.operation_id in SCORE_OPERATIONS:
        return [(f"{f}: {b.name}", _item_field(operation, f, b)) for f, bads in ITEM_FIELDS.items() for b in bads]
    return [
        (f"{f}: {b.name}", _player_list(operation, f, b)) for f in ("online", "offline") for b in catalogue.PLAYER_IDS
    ]


def _base(operation: Operation, body: Any) -> Any:
    """The generated body to mutate, if it is JSON; else a valid one."""
    try:
        json.dumps(body)
    except (TypeError, ValueError):
        return VALID_BODIES[operation.operation_id]
    return body if isinstance(body, dict | list) else VALID_BODIES[operation.operation_id]


def _anywhere(operation: Operation, bad: Bad) -> Maker:
    def make(body: Any, rng: random.Random) -> Hostile:
        base = _base(operation, body)
        if bad.key and not any(catalogue.objects(base)):
            base = VALID_BODIES[operation.operation_id]  # a list of no objects: nowhere for a key
        place = rng.choice(list(catalogue.objects(base) if bad.key else catalogue.places(base)))
        raw, field = catalogue.spliced(base, place, bad)
        expected = (bad.refusal.status, bad.refusal.code, field)
        return Hostile(
            f"{bad.name} at {catalogue.field_name(place) or 'the root'}",
            operation.method,
            operation.url(),
            raw,
            {},
            expected,
        )

    return make


def _body(operation: Operation, bad: Bad) -> Maker:
    expected = (bad.refusal.status, bad.refusal.code, None)
    return lambda body, rng: Hostile(bad.name, operation.method, operation.url(), bad.raw, {}, expected)


def _item_field(operation: Operation, field: str, bad: Bad) -> Maker:
    def make(body: Any, rng: random.Random) -> Hostile:
        # A batch of the generated first item alone: the others would apply.
        base = _base(operation, body)
        if operation.operation_id == "games_api_submit_batch":
            items = base.get("scores") if isinstance(base, dict) else None
            item = items[0] if isinstance(items, list) and items and isinstance(items[0], dict) else None
            base = {"scores": [item if item is not None else VALID_BODIES[operation.operation_id]["scores"][0]]}
            raw, _ = catalogue.spliced(base, ("scores", 0, field), bad)
        else:
            raw, _ = catalogue.spliced(base if isinstance(base, dict) else {}, (field,), bad)
        return Hostile(f"{bad.name} as {field}", operation.method, operation.url(), raw, {}, None)

    return make


def _player_list(operation: Operation, field: str, bad: Bad) -> Maker:
    def make(body: Any, rng: random.Random) -> Hostile:
        base = dict(_base(operation, body)) if isinstance(body, dict) else dict(VALID_BODIES[operation.operation_id])
        listed = base.get(field)
        base[field] = [None, *(listed if isinstance(listed, list) else [])[:5]]
        raw, _ = catalogue.spliced(base, (field, 0), bad)
        return Hostile(f"{bad.name} in {field}", operation.method, operation.url(), raw, {}, None)

    return make


def _settings(operation: Operation, bad: BadSettings) -> Maker:
    def make(body: Any, rng: random.Random) -> Hostile:
        base = _base(operation, body)
        settings = {**(base if isinstance(base, dict) else VALID_BODIES[operation.operation_id]), **bad.settings}
        return Hostile(bad.name, operation.method, operation.url(), json.dumps(settings).encode(), {}, None)

    return make


def _slug(operation: Operation, bad: BadSlug) -> Maker:
    field = "slug" if bad.refusal == catalogue.INVALID else None
    expected = (bad.refusal.status, bad.refusal.code, field)
    raw = json.dumps(VALID_BODIES[operation.operation_id]).encode()
    return lambda body, rng: Hostile(bad.name, "PUT", operation.url(board=bad.path), raw, {}, expected)


def _over_the_limit(operation: Operation) -> Maker:
    expected = (catalogue.BOARD_LIMIT.status, catalogue.BOARD_LIMIT.code, "slug")
    raw = json.dumps(VALID_BODIES[operation.operation_id]).encode()
    return lambda body, rng: Hostile("a new board", "PUT", operation.url(board=NEW_SLUG), raw, {}, expected)


def _query(operation: Operation, parameter: str, bad: BadQuery) -> Maker:
    expected = (catalogue.INVALID.status, catalogue.INVALID.code, parameter)
    params = {name: VALID_QUERY[name] for name in operation.required_query if name != parameter}
    params[parameter] = bad.value
    return lambda body, rng: Hostile(bad.name, operation.method, operation.url(), None, params, expected)


# ----------------------------------------------------------------------------- sending and judging


def client() -> httpx.Client:
    key = os.environ["ST_API_KEY"]
    return httpx.Client(base_url=os.environ["ST_BASE_URL"], headers={"Authorization": f"Bearer {key}"}, timeout=30)


def send(http: httpx.Client, hostile: Hostile) -> httpx.Response:
    headers = {"Content-Type": "application/json"} if hostile.raw is not None else {}
    return http.request(hostile.method, hostile.path, params=hostile.params, content=hostile.raw, headers=headers)


def snapshot(http: httpx.Client) -> dict[str, Any]:
    """What a write through the API can change, read back: every board's settings (less each
    window's current period and whether it is open, which move with the clock), the recent
    scores (every applied one is there) and who is online (the test's game keeps them an hour)."""
    boards = _read(http, f"{BASE}/leaderboards")
    for board in boards:
        board["windows"] = [window["period"] for window in board["windows"]]
        del board["open"]
    recent = _read(http, f"{BASE}/recent", limit=50)
    return {"boards": boards, "recent": recent, "presence": _read(http, f"{BASE}/presence", limit=200)}


def _read(http: httpx.Client, path: str, **params: Any) -> Any:
    # A read that fails is no state to compare: what broke it is the finding.
    response = http.get(path, params=params)
    if response.status_code != 200:
        raise AssertionError(f"GET {path} answered {response.status_code}: {response.text[:500]}")
    return response.json()


def judge(declared: dict[str, Any], hostile: Hostile, response: httpx.Response) -> str | None:
    """What is wrong with the answer to ``hostile`` (None: nothing); ``declared`` are the operation's responses."""
    status = response.status_code
    if status >= 500:
        return f"a server error, {status}: {response.text[:500]}"
    try:
        body = response.json()
    except ValueError:
        return f"no JSON, {status}: {response.text[:300]!r}"
    if status < 400:
        results = body.get("results") if isinstance(body, dict) and hostile.expected is None else None
        if not (status == 200 and results and all(catalogue.error_of(r) for r in results)):
            return f"taken, {status}: {str(body)[:500]}"
        return undocumented(declared, status, body)
    error = catalogue.error_of(body)
    if error is None:
        return f"not in the error envelope, {status}: {str(body)[:500]}"
    if hostile.expected is not None and (status, *error) != hostile.expected:
        return f"{(status, *error)} instead of {hostile.expected}: {str(body)[:500]}"
    if hostile.expected is not None and hostile.expected[1] == catalogue.NO_ROUTE.code:
        return None  # no route took it: no operation's codes
    return undocumented(declared, status, body)


def undocumented(declared: dict[str, Any], status: int, body: Any) -> str | None:
    """Why an answer's error code (or a batch's item codes) is not listed among ``declared``
    responses for its status; None if it is."""
    listed_here = declared.get(str(status), {})
    if status >= 400:
        code = body["error"]["code"]
        listed = listed_here.get("content", {}).get("application/json", {}).get("examples", {})
        return None if code in listed else f"{status} {code!r} is not documented here: {sorted(listed)}"
    listed_items = set(_LISTED.findall(listed_here.get("description", "")))
    for result in body.get("results", []) if isinstance(body, dict) else []:
        if "error" in result and result["error"]["code"] not in listed_items:
            return f"batch item code {result['error']['code']!r} is not documented: {listed_items}"
    return None


def reproduce(hostile: Hostile) -> str:
    body = "" if hostile.raw is None else f", body ({len(hostile.raw)} bytes) {hostile.raw[:300]!r}"
    return f"{hostile.method} {hostile.path} {hostile.params or ''}{body}"


def log(operation: Operation, name: str, response: httpx.Response) -> None:
    """One line per request sent, for test_schemathesis.py to check that the whole plan went."""
    path = os.environ.get("ST_HOSTILE_LOG")
    if path:
        with open(path, "a") as out:
            out.write(
                json.dumps({"operation": operation.operation_id, "name": name, "status": response.status_code}) + "\n"
            )
