"""A game's face on its pages and on other sites: a short name, an accent colour, a logo, and
the origins (other websites) allowed to show its boards live (the embeddable widget and the
iframe, docs/embed.md).

Each value is checked here, for admin's form and for the model alike, with a message that
says what to write instead.
"""

from __future__ import annotations

import hashlib
import re
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError

SHORT_NAME_MAX_CHARS = 24  # a phone header's width at 320 px, and the widget's title
# "#1f6feb": six hex digits, as a colour picker gives them (three-digit and named colours
# would each need another parser in the widget and the pages).
ACCENT_RE = re.compile(r"^#[0-9a-fA-F]{6}$")
# A logo is shown at 32 px high: 100 KB is plenty for that, and keeps a game's row small.
LOGO_MAX_BYTES = 100_000
# Raster types only, sniffed from the bytes: an SVG can carry script, and a type taken from
# the file's name or the browser's word would be the uploader's claim, not a fact.
_LOGO_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)
# A studio's own site, its staging site and a partner or two; each origin is checked on every
# cross-origin socket and read, so the list stays short.
EMBED_ORIGINS_MAX = 20
_DEFAULT_PORTS = {"http": 80, "https": 443}


def accent_check(value: str) -> None:
    if value and not ACCENT_RE.match(value):
        raise ValidationError("An accent colour is # and six hex digits, such as #1f6feb.")


def logo_type(data: bytes) -> str:
    """The logo's media type, from its first bytes; refuses anything but PNG, JPEG, GIF and WebP."""
    if len(data) > LOGO_MAX_BYTES:
        raise ValidationError(f"A logo is at most {LOGO_MAX_BYTES // 1000} KB; this one is {len(data) // 1000} KB.")
    for magic, media_type in _LOGO_MAGIC:
        if data.startswith(magic):
            return media_type
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    raise ValidationError("A logo is a PNG, JPEG, GIF or WebP image.")


def logo_version(data: bytes) -> str:
    """A short digest of the logo: its URL changes with it, so it may be cached for good."""
    return hashlib.sha256(data).hexdigest()[:16]


def origin_normal(value: str) -> str:
    """``value`` as browsers send it in an ``Origin`` header (``https://example.com``,
    ``http://localhost:9000``): scheme and host in lower case, no default port, no path."""
    raw = value.strip()
    try:
        parts = urlsplit(raw)
        port = parts.port
    except ValueError as error:
        raise ValidationError(f"“{raw[:80]}” is not an origin: {error}.") from error
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
        raise ValidationError(f"“{raw[:80]}” is not an origin: write https://example.com (http or https, a host).")
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username or parts.password:
        raise ValidationError(f"“{raw[:80]}” has more than an origin: write its scheme, host and port only.")
    if "*" in parts.hostname:
        raise ValidationError("Write each origin out in full: a wildcard would let any subdomain show the board.")
    try:
        host = parts.hostname.encode("idna").decode("ascii")
    except UnicodeError as error:
        raise ValidationError(f"“{raw[:80]}” has a host name no browser would send.") from error
    if ":" in host:
        host = f"[{host}]"  # an IPv6 address
    shown_port = "" if port is None or port == _DEFAULT_PORTS[parts.scheme] else f":{port}"
    return f"{parts.scheme}://{host}{shown_port}"


def origins_check(values: object) -> list[str]:
    """A game's embed origins, each in its normal form, in the order given, without repeats."""
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ValidationError("Embed origins are a list of origins such as https://example.com.")
    found = list(dict.fromkeys(origin_normal(v) for v in values if v.strip()))
    if len(found) > EMBED_ORIGINS_MAX:
        raise ValidationError(f"At most {EMBED_ORIGINS_MAX} embed origins; there are {len(found)}.")
    return found


def validate_origins(values: object) -> None:
    """The model field's validator: the list must already be in its normal form."""
    if origins_check(values) != values:
        raise ValidationError("Write each origin once, as https://example.com (scheme, host and port only).")


def logo_path(slug: str, version: str) -> str:
    """Where a game's logo is served (embed/urls.py), versioned so that it may be cached for good."""
    return f"/games/{slug}/logo?v={version}"
