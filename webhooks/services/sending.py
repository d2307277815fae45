"""One webhook request: signed as Standard Webhooks says, sent to the checked address of the
endpoint's host (webhooks/addresses.py), bounded in time, and what came back."""

from __future__ import annotations

import asyncio
import datetime as dt
import email.utils
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpx
from django.conf import settings

from core import clock

from ..addresses import AddressRefused, address_resolve, url_check
from ..models import REASON_MAX_CHARS, RESPONSE_KEEP_CHARS
from ..signing import signature_header

USER_AGENT = "leaderboard-webhooks/1"


@dataclass(frozen=True)
class Answer:
    """What one attempt got: a status (None when no answer came) or an error."""

    status_code: int | None
    body: str = ""
    retry_after_secs: float | None = None
    error: str = ""
    address: str = ""
    duration_ms: int = 0
    headers: dict[str, str] = field(default_factory=dict)


def retry_after_secs(value: str | None, now: dt.datetime) -> float | None:
    """``Retry-After`` as seconds from now: a number of seconds, or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return max(0.0, (when - now).total_seconds())


def request_headers(*, msg_id: str, payload: bytes, signing: list[str], now: dt.datetime) -> dict[str, str]:
    timestamp = int(now.timestamp())
    return {
        "content-type": "application/json",
        "user-agent": USER_AGENT,
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signature_header(signing, msg_id=msg_id, timestamp=timestamp, body=payload),
    }


async def attempt_send(
    http: httpx.AsyncClient, *, url: str, msg_id: str, payload: str, signing: list[str], now: dt.datetime
) -> Answer:
    """POST ``payload`` to ``url`` once, within WEBHOOK_TIMEOUT_SECS from resolving its host to
    the first bytes of the answer's body; never raises for what the network or receiver do."""
    body = payload.encode()
    headers = request_headers(msg_id=msg_id, payload=body, signing=signing, now=now)
    started = clock.monotonic()
    address = ""

    def took() -> int:
        return int((clock.monotonic() - started) * 1000)

    try:
        async with asyncio.timeout(settings.WEBHOOK_TIMEOUT_SECS):
            allow_private = settings.WEBHOOK_ALLOW_PRIVATE
            target = url_check(url, allow_http=settings.WEBHOOK_ALLOW_HTTP, allow_private=allow_private)
            address = await address_resolve(target, allow_private=allow_private)
            # Connect to the address just checked; the name goes in Host, and in TLS's SNI and
            # certificate check, so nothing resolves it a second time.
            sent = httpx.URL(url).copy_with(host=address)
            extensions = {"sni_hostname": target.host} if target.scheme == "https" else {}
            host_header = urlsplit(url).netloc.rpartition("@")[2]
            async with http.stream(
                "POST", sent, content=body, headers={**headers, "host": host_header}, extensions=extensions
            ) as response:
                kept = await _first_bytes(response)
                return Answer(
                    response.status_code,
                    body=kept,
                    retry_after_secs=retry_after_secs(response.headers.get("retry-after"), now),
                    address=address,
                    duration_ms=took(),
                    headers=headers,
                )
    except TimeoutError:
        error = f"No answer within {settings.WEBHOOK_TIMEOUT_SECS:g} s."
    except AddressRefused as refused:
        error = f"Refused: {refused}"
    except (httpx.HTTPError, OSError, ValueError) as failed:
        error = f"{type(failed).__name__}: {failed}" if str(failed) else type(failed).__name__
    return Answer(None, error=error[:REASON_MAX_CHARS], address=address, duration_ms=took(), headers=headers)


async def _first_bytes(response: httpx.Response) -> str:
    kept = bytearray()
    async for chunk in response.aiter_bytes():
        kept.extend(chunk)
        if len(kept) >= RESPONSE_KEEP_CHARS:
            break
    return kept[:RESPONSE_KEEP_CHARS].decode("utf-8", "replace")
