"""Which text the product accepts: no control characters, anywhere a person or a game
server can type or send some.

Refused: C0 and C1 controls (NUL, escape, DEL...: PostgreSQL refuses NUL outright,
which once stopped a game's ledger for good), lone surrogates (JSON can carry
"\\ud800", which no UTF-8 encoder can write), and the bidirectional overrides and
isolates (U+202A-U+202E, U+2066-U+2069) that make a name on a board read as
something it is not. Multi-line fields (a game's description) may hold line
breaks and tabs.
"""

from __future__ import annotations

import re
import unicodedata

from django.core.exceptions import ValidationError

_BIDI_CONTROLS = re.compile("[\u202a-\u202e\u2066-\u2069]")
_LINE_BREAKS = frozenset("\n\r\t")
CONTROL_MESSAGE = "Control characters are not allowed here."


def _refused(character: str, *, multiline: bool) -> bool:
    if multiline and character in _LINE_BREAKS:
        return False
    return unicodedata.category(character) in ("Cc", "Cs") or _BIDI_CONTROLS.match(character) is not None


def has_control_characters(value: str, *, multiline: bool = False) -> bool:
    return any(_refused(character, multiline=multiline) for character in value)


def single_line(value: str) -> str:
    """A pydantic AfterValidator: the value, or ValueError naming what is wrong."""
    if has_control_characters(value):
        raise ValueError(CONTROL_MESSAGE)
    return value


def validate_single_line(value: str) -> None:
    """A Django field validator (models and forms)."""
    if has_control_characters(value):
        raise ValidationError(CONTROL_MESSAGE, code="control_characters")


def validate_multiline(value: str) -> None:
    if has_control_characters(value, multiline=True):
        raise ValidationError(CONTROL_MESSAGE, code="control_characters")


def printable(value: str) -> str:
    """``value`` with every refused character written as its escape (for logs and dead letters)."""
    return "".join(
        character.encode("unicode_escape", "backslashreplace").decode("ascii")
        if _refused(character, multiline=False)
        else character
        for character in value
    )


def search_key(name: str) -> str:
    """How a name is found: without case, accents or control characters, so that "ada",
    "ADA" and "Ádá" all find "Ada" (a prefix of this key is what a search matches)."""
    decomposed = unicodedata.normalize("NFKD", name)
    kept = "".join(c for c in decomposed if not unicodedata.combining(c) and not _refused(c, multiline=False))
    return unicodedata.normalize("NFKC", kept.casefold()).strip()
