"""The bad-input catalogue of issue 21's review: what any key holder can send that the API must
refuse with a 4xx in its error envelope, changing nothing. One module, so that the direct tests
(tests/games/test_unwritable_input.py), the model-based suites (tests/games/test_model_based.py,
test_boards_model.py) and the schemathesis run (tests/contract/hooks.py) send the same values.

A value is raw JSON text (bytes: some are not UTF-8, some are no JSON an encoder writes), spliced
into a body where a value or a key would stand (``spliced``), with the refusal it must meet there.
Board settings, slugs and query parameters are JSON that any encoder writes, so they are plain data.

Plain Python, no Django: the schemathesis hooks import it in a process of their own.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

Path = tuple[str | int, ...]


@dataclass(frozen=True)
class Refusal:
    status: int
    code: str


INVALID = Refusal(422, "invalid")
MALFORMED = Refusal(400, "malformed_json")
BODY_TOO_LARGE = Refusal(413, "body_too_large")
METADATA_TOO_LARGE = Refusal(413, "metadata_too_large")
# A PUT of a new board to a game holding its limit (MAX_BOARDS_PER_GAME, or the game's max_boards).
BOARD_LIMIT = Refusal(409, "board_limit")
NO_ROUTE = Refusal(404, "not_found")

# The API refuses a body over this many bytes (settings.MAX_BODY_BYTES).
MAX_BODY_BYTES = 1024 * 1024


@dataclass(frozen=True)
class Bad:
    """A value (or, with ``key``, an object key) as raw JSON text, and the refusal it meets."""

    name: str
    raw: bytes
    refusal: Refusal = INVALID
    # Where in the value the refusal points ((): the value itself); None: at no field (the body
    # cannot be read as a whole, so the answer names none).
    below: Path | None = ()
    key: bool = False


def _text(characters: str) -> bytes:
    return json.dumps(characters).encode()


def _nested(depth: int, inner: bytes = b"") -> bytes:
    return b"[" * depth + inner + b"]" * depth


# Values refused wherever they stand in any body (a batch's whole body with them): the parser
# reads them, but no client could read them back, or they are no text at all. Before issue 21,
# NaN and friends were stored and poisoned every read, and a lone surrogate was a 500.
ANYWHERE: tuple[Bad, ...] = (
    Bad("NaN", b"NaN"),
    Bad("Infinity", b"Infinity"),
    Bad("-Infinity", b"-Infinity"),
    Bad("a number past a double", b"1e400"),
    Bad("a negative number past a double", b"-1E+400"),
    Bad("NaN nested in an object", b'{"avg_speed": [1.5, NaN]}', below=("avg_speed", 1)),
    Bad("a lone high surrogate", b'"\\ud800"'),
    Bad("a lone low surrogate inside text", b'"a\\udc00b"'),
    Bad("a high surrogate ending text", b'"abc\\udbff"'),
    Bad("two high surrogates", b'"\\ud800\\ud800"'),
    Bad("a lone surrogate as raw UTF-8 bytes", b'"\xed\xa0\x80"'),
    Bad("a lone surrogate in nested text", b'{"tags": ["ok", "\\udfff"]}', below=("tags", 1)),
    Bad("invalid UTF-8", b'"\xff\xfe"', MALFORMED, below=None),
    Bad("overlong UTF-8", b'"\xc0\xaf"', MALFORMED, below=None),
    # Past Python's 4,300-digit limit on reading an integer.
    Bad("an integer of 5,000 digits", b"1" + b"0" * 4999, MALFORMED, below=None),
    Bad("an array 100,000 deep", _nested(100_000), MALFORMED, below=None),
    Bad("text past the body limit", _text("x" * MAX_BODY_BYTES), BODY_TOO_LARGE, below=None),
)

# Object keys refused in any object of any body; the refusal names the object holding the key.
KEYS: tuple[Bad, ...] = (
    Bad("a key with a lone surrogate", b'"k\\ud800"', key=True),
    Bad("a key that is a lone low surrogate", b'"\\udc00"', key=True),
    Bad("a key with a lone surrogate as raw UTF-8 bytes", b'"\xed\xb0\x80"', key=True),
    Bad("a key of invalid UTF-8", b'"k\xff"', MALFORMED, below=None, key=True),
)

# Whole bodies (spliced at the root): no JSON object.
BODIES: tuple[Bad, ...] = (
    Bad("an empty body", b"", MALFORMED, below=None),
    Bad("a body of whitespace", b" \r\n\t", MALFORMED, below=None),
    Bad("a truncated object", b'{"player_id": "a", "score": 1', MALFORMED, below=None),
    Bad("two objects", b'{"a": 1} {"a": 1}', MALFORMED, below=None),
    Bad("a byte order mark and nothing", b"\xef\xbb\xbf", MALFORMED, below=None),
    Bad("an empty array", b"[]"),
    Bad("an array of an object", b'[{"player_id": "a", "score": 1}]'),
    Bad("text", b'"{}"'),
    Bad("a number", b"7"),
    Bad("null", b"null"),
    Bad("true", b"true"),
)

# A score or subscore: JSON integers within +-(2^53-1) only, where every integer stays exact.
SCORES: tuple[Bad, ...] = (
    Bad("2^53", b"9007199254740992"),
    Bad("-2^53", b"-9007199254740992"),
    Bad("2^63-1", b"9223372036854775807"),
    Bad("2^63", b"9223372036854775808"),
    Bad("-2^63-1", b"-9223372036854775809"),
    Bad("2^64+1", b"18446744073709551617"),
    Bad("10^30", b"1" + b"0" * 30),
    Bad("a whole float", b"1.0"),
    Bad("an exponent", b"1e3"),
    Bad("a fraction", b"0.5"),
    Bad("a number as text", b'"7"'),
    Bad("true", b"true"),
    Bad("an object", b'{"value": 7}'),
)

# A player id: 1-64 of A-Z a-z 0-9 _ . : -, not only dots.
PLAYER_IDS: tuple[Bad, ...] = (
    Bad("empty", b'""'),
    Bad("a space", b'" "'),
    Bad("inner whitespace", b'"a b"'),
    Bad("dots only", b'".."'),
    Bad("65 characters", _text("p" * 65)),
    Bad("100,000 characters", _text("p" * 100_000)),
    Bad("a NUL", b'"a\\u0000"'),
    Bad("an accent", _text("zoë")),
    Bad("a number", b"7"),
)

# A display name: at most 64 characters, no control characters.
NAMES: tuple[Bad, ...] = (
    Bad("65 characters", _text("n" * 65)),
    Bad("100,000 characters", _text("n" * 100_000)),
    Bad("a NUL", b'"a\\u0000b"'),
    Bad("a line break", b'"two\\nlines"'),
    Bad("an escape code", b'"\\u001b[31mred"'),
    Bad("a number", b"7"),
)

# An entry's metadata: a JSON object of at most 512 bytes as compact JSON.
METADATA: tuple[Bad, ...] = (
    Bad("an array", b"[1]"),
    Bad("text", b'"car"'),
    Bad("a number", b"7"),
    Bad("513 bytes and more", json.dumps({"k": "v" * 600}).encode(), METADATA_TOO_LARGE),
    Bad("nested 300 deep", b'{"a": ' + _nested(300) + b"}", METADATA_TOO_LARGE),
    Bad("50,000 keys", json.dumps({str(i): i for i in range(50_000)}).encode(), METADATA_TOO_LARGE),
)


@dataclass(frozen=True)
class BadSettings:
    """Settings merged into a board's PUT or PATCH body, refused naming ``field``."""

    name: str
    settings: dict[str, Any]
    field: str
    refusal: Refusal = INVALID


def _custom(cron: str) -> dict[str, Any]:
    return {"windows": ["custom"], "cron": cron}


# A season's times: ISO 8601 text with its zone, that every zone can show.
SEASONS: tuple[BadSettings, ...] = (
    # Was a 500 (TypeError comparing a naive time with an aware one).
    BadSettings(
        "an aware start, a naive end",
        {"starts_at": "2020-01-01T00:00:00Z", "ends_at": "2030-02-01T00:00:00"},
        "ends_at",
    ),
    BadSettings("a naive start", {"starts_at": "2026-03-01T00:00:00"}, "starts_at"),
    BadSettings("a date without a time", {"ends_at": "2030-02-01"}, "ends_at"),
    BadSettings("a Unix time as a number", {"starts_at": 1_700_000_000}, "starts_at"),
    BadSettings("a Unix time as a float", {"ends_at": 1.7e9}, "ends_at"),
    BadSettings("a Unix time as text", {"starts_at": "1700000000"}, "starts_at"),
    BadSettings("a year past 9999 in UTC", {"ends_at": "9999-12-31T23:59:59-14:00"}, "ends_at"),
    BadSettings("a year before 1 in UTC", {"starts_at": "0001-01-01T00:00:00+14:00"}, "starts_at"),
    BadSettings("an offset of 25 hours", {"starts_at": "2026-01-01T00:00:00+25:00"}, "starts_at"),
    BadSettings(
        "an end before the start", {"starts_at": "2030-01-01T00:00:00Z", "ends_at": "2020-01-01T00:00:00Z"}, "ends_at"
    ),
)

# A custom window resets at most hourly, and does reset.
CRONS: tuple[BadSettings, ...] = (
    BadSettings("twice an hour", _custom("7,37 * * * *"), "cron"),
    BadSettings("every 5 minutes", _custom("*/5 * * * *"), "cron"),
    BadSettings("every minute", _custom("* * * * *"), "cron"),
    BadSettings("twice in one hour a week", _custom("0,30 9 * * MON"), "cron"),
    BadSettings("never (February 30)", _custom("0 0 30 2 *"), "cron"),
    BadSettings("never (April 31)", _custom("0 0 31 4 *"), "cron"),
    BadSettings("six fields", _custom("0 0 * * * *"), "cron"),
    BadSettings("out of range", _custom("99 99 99 99 99"), "cron"),
)

# The rest of a board's settings: very long text, integers past 2^53, unknown names.
SETTINGS: tuple[BadSettings, ...] = (
    BadSettings("a minimum past 2^53", {"min_score": 2**53}, "min_score"),
    BadSettings("a maximum past 2^63", {"max_score": 2**63}, "max_score"),
    BadSettings("a minimum above the maximum", {"min_score": 10, "max_score": 1}, "max_score"),
    BadSettings("a name of 100,000 characters", {"name": "n" * 100_000}, "name"),
    BadSettings("a description of 100,000 characters", {"description": "d" * 100_000}, "description"),
    BadSettings("an unknown zone", {"timezone": "Mars/Olympus"}, "timezone"),
    BadSettings("a zone that is a path", {"timezone": "../../etc/passwd"}, "timezone"),
    BadSettings("a window 5,000 times", {"windows": ["daily"] * 5000}, "windows"),
    BadSettings("no window", {"windows": []}, "windows"),
    BadSettings("an unknown format", {"format": "decimal:99"}, "format"),
)

# A competing board's entry rules (issue 22): strict whole numbers in range or null, known words,
# and a competing window the board keeps (each row brings its windows, so that it is refused
# naming its own field on any board).
_ONE_WINDOW: dict[str, Any] = {"windows": ["daily"], "cron": ""}
COMPETITIONS: tuple[BadSettings, ...] = (
    BadSettings("no entrant allowed", {"max_entrants": 0}, "max_entrants"),
    BadSettings("a negative entrant cap", {"max_entrants": -1}, "max_entrants"),
    BadSettings("entrants past 10^8", {"max_entrants": 100_000_001}, "max_entrants"),
    BadSettings("entrants as text", {"max_entrants": "50"}, "max_entrants"),
    BadSettings("entrants as a whole float", {"max_entrants": 50.0}, "max_entrants"),
    BadSettings("entrants as true", {"max_entrants": True}, "max_entrants"),
    BadSettings("an entry window of 0 s", {"entry_window_secs": 0}, "entry_window_secs"),
    BadSettings("an entry window past 2^31-1 s", {"entry_window_secs": 2**31}, "entry_window_secs"),
    BadSettings("an entry window as text", {"entry_window_secs": "3600"}, "entry_window_secs"),
    BadSettings("no attempt allowed", {"max_attempts": 0}, "max_attempts"),
    BadSettings("attempts past 10^6", {"max_attempts": 1_000_001}, "max_attempts"),
    BadSettings("attempts as a fraction", {"max_attempts": 2.5}, "max_attempts"),
    BadSettings("an unknown entry", {"entry": "closed"}, "entry"),
    BadSettings("an entry as a number", {"entry": 1}, "entry"),
    BadSettings("an unknown competing window", {"competition_window": "hourly"}, "competition_window"),
    BadSettings("a competing window as a list", {"competition_window": ["daily"]}, "competition_window"),
    BadSettings(
        "a competing window the board does not keep",
        {**_ONE_WINDOW, "competition_window": "weekly"},
        "competition_window",
    ),
    BadSettings(
        "all-time competing without a season",
        {"windows": ["all-time"], "cron": "", "starts_at": None, "ends_at": None, "competition_window": "all-time"},
        "competition_window",
    ),
    BadSettings(
        "a competition on a board of two windows that names none",
        {"windows": ["daily", "weekly"], "cron": "", "competition_window": "", "entry": "join"},
        "competition_window",
    ),
)

BOARD_SETTINGS: tuple[BadSettings, ...] = SEASONS + CRONS + SETTINGS + COMPETITIONS


@dataclass(frozen=True)
class BadSlug:
    """A board slug in a PUT's path, as sent (percent-encoded)."""

    name: str
    path: str
    refusal: Refusal = INVALID


# Slugs: 1-50 lowercase letters, digits and inner hyphens (refused naming 'slug').
SLUGS: tuple[BadSlug, ...] = (
    BadSlug("empty", "", NO_ROUTE),
    BadSlug("a space", "%20"),
    BadSlug("spaces", "%20%20%20"),
    BadSlug("a hyphen", "-"),
    BadSlug("a trailing hyphen", "a-"),
    BadSlug("upper case", "UPPER"),
    BadSlug("51 characters", "s" * 51),
    BadSlug("1,000 characters", "s" * 1000),
    BadSlug("a NUL", "a%00"),
    BadSlug("invalid UTF-8", "a%FF"),
    BadSlug("an emoji", "%F0%9F%8E%AE"),
)


@dataclass(frozen=True)
class BadQuery:
    """A query parameter's value (as sent, before encoding): refused naming the parameter."""

    name: str
    value: str


# Query parameters, each refused naming itself. Every limit, offset and radius of the API: zero,
# negative, past its maximum, no integer.
LIMITS: tuple[BadQuery, ...] = (
    BadQuery("zero", "0"),
    BadQuery("negative", "-1"),
    BadQuery("30 digits", "9" * 30),
    BadQuery("5,000 digits", "9" * 5000),
    BadQuery("an exponent", "1e3"),
    BadQuery("a fraction", "1.5"),
    BadQuery("empty", ""),
    BadQuery("a space", " "),
    BadQuery("a NUL", "\x00"),
)
OFFSETS: tuple[BadQuery, ...] = (
    BadQuery("negative", "-1"),
    BadQuery("past 10^9", "1000000001"),
    BadQuery("30 digits", "9" * 30),
    BadQuery("text", "first"),
)
RADII: tuple[BadQuery, ...] = (
    BadQuery("negative", "-1"),
    BadQuery("past 50", "51"),
    BadQuery("30 digits", "9" * 30),
)
# A search for players by name: 1-64 characters of one line.
SEARCHES: tuple[BadQuery, ...] = (
    BadQuery("empty", ""),
    BadQuery("65 characters", "q" * 65),
    BadQuery("a NUL", "a\x00"),
    BadQuery("a line break", "two\nlines"),
)
# A friends view's player ids: 1-100 valid ids, comma-separated.
IDS: tuple[BadQuery, ...] = (
    BadQuery("empty", ""),
    BadQuery("only commas", ",,,"),
    BadQuery("a space", "ada, bob"),
    BadQuery("65 characters", "p" * 65),
    BadQuery("101 ids", ",".join(f"p{i}" for i in range(101))),
)
QUERIES: dict[str, tuple[BadQuery, ...]] = {
    "limit": LIMITS,
    "offset": OFFSETS,
    "radius": RADII,
    "q": SEARCHES,
    "ids": IDS,
}

# ----------------------------------------------------------------------------- splicing

# A string no generated body holds: json.dumps writes it as the text replaced below.
_HOLE = "\x00hole\x00"
_HOLE_TEXT = json.dumps(_HOLE).encode()
# The key a value takes when it is added to an object rather than put in place of one.
NEW_KEY = "x-added"


def field_name(path: Path) -> str:
    """A path as the API names a field: ``scores[3].metadata.run``; '' for the body itself."""
    name = ""
    for step in path:
        name = f"{name}[{step}]" if isinstance(step, int) else (f"{name}.{step}" if name else step)
    return name


def spliced(body: Any, path: Path, bad: Bad) -> tuple[bytes, str | None]:
    """``body`` as JSON text with ``bad`` standing at ``path`` (a value there, or a new key of the
    object there), and the field its refusal names."""
    holed = _with_hole(body, path, key=bad.key)
    text = json.dumps(holed).encode().replace(_HOLE_TEXT, bad.raw, 1)
    if bad.below is None:
        return text, None
    return text, field_name(path if bad.key else (*path, *bad.below)) or None


def _with_hole(body: Any, path: Path, *, key: bool) -> Any:
    if not path:
        return {**body, _HOLE: 1} if key else _HOLE
    step, rest = path[0], path[1:]
    if isinstance(body, list):
        assert isinstance(step, int)
        return [_with_hole(v, rest, key=key) if i == step else v for i, v in enumerate(body)]
    assert isinstance(body, dict)
    return {**body, step: _with_hole(body.get(step), rest, key=key)}


def places(body: Any, path: Path = ()) -> Iterator[Path]:
    """Every place a value can stand in ``body``: each value (containers too, the body itself)
    and a new key of each object."""
    yield path
    if isinstance(body, dict):
        yield (*path, NEW_KEY)
        for name, value in body.items():
            yield from places(value, (*path, name))
    elif isinstance(body, list):
        for i, value in enumerate(body):
            yield from places(value, (*path, i))


def objects(body: Any, path: Path = ()) -> Iterator[Path]:
    """Every object of ``body``, where a key can be added."""
    if isinstance(body, dict):
        yield path
        for name, value in body.items():
            yield from objects(value, (*path, name))
    elif isinstance(body, list):
        for i, value in enumerate(body):
            yield from objects(value, (*path, i))


def error_of(body: Any) -> tuple[str, str | None] | None:
    """(code, field) of an answer in the house's error envelope, ``{"error": {"code", "message",
    "field"}}``; None for any other answer."""
    error = body.get("error") if isinstance(body, dict) and set(body) == {"error"} else None
    if not isinstance(error, dict) or set(error) != {"code", "message", "field"}:
        return None
    if not isinstance(error["code"], str) or not error["message"] or not isinstance(error["field"], str | None):
        return None
    return error["code"], error["field"]


def shadowed(body: dict[str, Any], key: str, first: bytes) -> bytes:
    """``body`` as JSON text with ``key`` written twice: first as ``first``, then as in ``body``.
    The API reads the last copy (as Python's json does), so it must answer as for ``body``."""
    assert key in body, (key, body)
    rest = json.dumps(body).encode()
    return b"{" + json.dumps(key).encode() + b": " + first + b", " + rest[1:]
