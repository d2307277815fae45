"""leaderboard_client.webhooks.verify against the two signers that count: the product's own
(webhooks.signing, what the product sends) and the Standard Webhooks specification's library
(standardwebhooks). What either signs, the client verifies; and on every request below the
client and the library agree on whether it is to be trusted.

No server and no pinned clock is read: ``now`` is given, or both sides read the wall clock."""

from __future__ import annotations

import base64
import datetime as dt
import hmac
import json
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from leaderboard_client import LeaderboardError, WebhookVerificationError, webhooks
from leaderboard_client.webhooks import verify
from standardwebhooks import Webhook

from webhooks.signing import secret_new, signature, signature_header

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"  # the specification's example secret
OLD_SECRET = "whsec_QhYaBIe9Q4D4pVYPm4a0Xw2yv3Dx0PSjyvRkJ7O6kFg="
MSG_ID = "evt_019cd2a8a1e000c0ffee00000001"
EVENT: dict[str, Any] = {
    "id": MSG_ID,
    "type": "reward.granted",
    "version": 1,
    "created_at": "2026-11-30T00:02:00.000Z",
    "data": {
        "game": "tetris",
        "leaderboard": "weekly-cup",
        "window": "weekly",
        "period_id": "2026-W48",
        "player_id": "zoë",
        "grant_id": "grant_h7Kq2XbN0vLw9RtYc3ZpEg",
        "cohort": "",
        "tier": "",
        "rank": 1,
        "reward": {"coins": 500, "badge": "cup-winner"},
        "granted_at": "2026-11-30T00:02:00.000Z",
        "expires_at": "2026-12-30T00:02:00.000Z",
    },
}
# As the product serializes an envelope (webhooks/services/enqueue.py): compact, UTF-8.
BODY = json.dumps(EVENT, separators=(",", ":"), ensure_ascii=False).encode()
TS = 1795694700
# The TypeScript client's tests verify this very request, its signatures written out in them.
TS_VECTOR = Path(__file__).resolve().parents[2] / "typescript" / "test-webhooks" / "webhooks.test.ts"


def product_headers(*secrets: str, body: bytes = BODY, msg_id: str = MSG_ID, timestamp: int = TS) -> dict[str, str]:
    """The headers the product sends (webhooks/services/sending.py), signed by its own code."""
    return {
        "content-type": "application/json",
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signature_header(list(secrets), msg_id=msg_id, timestamp=timestamp, body=body),
    }


def library_signature(secret: str, *, body: bytes = BODY, msg_id: str = MSG_ID, timestamp: int = TS) -> str:
    return Webhook(secret).sign(msg_id, dt.datetime.fromtimestamp(timestamp, dt.UTC), body.decode())


def refused(secrets: str | list[str], body: bytes, headers: dict[str, str], **kwargs: Any) -> WebhookVerificationError:
    with pytest.raises(WebhookVerificationError) as raised:
        verify(secrets, body, headers, **kwargs)
    return raised.value


# ------------------------------------------------------------------ the product's signer


def test_it_verifies_what_the_product_signs_and_returns_the_event() -> None:
    event = verify(SECRET, BODY, product_headers(SECRET), now=TS)

    assert event == EVENT
    assert event["data"]["player_id"] == "zoë"


def test_it_verifies_a_fresh_secret_of_the_products_on_the_wall_clock() -> None:
    secret = secret_new()
    now = int(time.time())

    assert verify(secret, BODY, product_headers(secret, timestamp=now))["id"] == MSG_ID


def test_a_receiver_mid_rotation_verifies_with_either_secret_and_refuses_a_third() -> None:
    headers = product_headers(SECRET, OLD_SECRET)  # the product signs with both while rotating

    assert verify(OLD_SECRET, BODY, headers, now=TS) == EVENT
    assert verify(SECRET, BODY, headers, now=TS) == EVENT
    assert verify([OLD_SECRET, SECRET], BODY, product_headers(SECRET), now=TS) == EVENT
    assert verify((s for s in [SECRET, OLD_SECRET]), BODY, product_headers(OLD_SECRET), now=TS) == EVENT
    assert refused([secret_new(), secret_new()], BODY, headers, now=TS).code == "no_matching_signature"


def test_it_refuses_a_tampered_body_with_401() -> None:
    headers = product_headers(SECRET)
    tampered = BODY.replace(b'"coins":500', b'"coins":900')

    error = refused(SECRET, tampered, headers, now=TS)

    assert (error.status, error.code) == (401, "no_matching_signature")
    assert isinstance(error, LeaderboardError)
    assert str(error) == "401 no_matching_signature: no v1 signature made with the secret(s)"


def test_it_refuses_a_tampered_id_or_timestamp() -> None:
    headers = product_headers(SECRET)

    assert refused(SECRET, BODY, {**headers, "webhook-id": "evt_other"}, now=TS).code == "no_matching_signature"
    assert refused(SECRET, BODY, {**headers, "webhook-timestamp": str(TS + 1)}, now=TS).code == "no_matching_signature"


def test_it_refuses_a_wrong_secret() -> None:
    assert refused(secret_new(), BODY, product_headers(SECRET), now=TS).code == "no_matching_signature"


def test_it_refuses_a_timestamp_outside_the_tolerance_either_way_before_any_signature() -> None:
    headers = product_headers(SECRET)

    assert verify(SECRET, BODY, headers, now=TS + 300) == EVENT
    assert verify(SECRET, BODY, headers, now=TS - 300) == EVENT
    stale = refused(SECRET, BODY, headers, now=TS + 301)
    early = refused(SECRET, BODY, headers, now=TS - 301)
    assert (stale.status, stale.code) == (401, "timestamp_out_of_tolerance")
    assert (early.status, early.code) == (401, "timestamp_out_of_tolerance")
    # A replay an hour later is refused by its timestamp even when its signature is good.
    assert refused(SECRET, BODY, headers, now=TS + 3600).code == "timestamp_out_of_tolerance"
    assert verify(SECRET, BODY, headers, now=TS + 3600, tolerance_secs=7200) == EVENT
    assert verify(SECRET, BODY, headers, now=dt.datetime.fromtimestamp(TS + 60, dt.UTC)) == EVENT
    with pytest.raises(ValueError, match="aware"):
        verify(SECRET, BODY, headers, now=dt.datetime(2026, 11, 30))


def test_it_refuses_missing_or_malformed_headers_with_400() -> None:
    headers = product_headers(SECRET)
    for name in ("webhook-id", "webhook-timestamp", "webhook-signature"):
        without = {k: v for k, v in headers.items() if k != name}
        error = refused(SECRET, BODY, without, now=TS)
        assert (error.status, error.code, error.message) == (400, "missing_headers", f"missing {name}")
        assert refused(SECRET, BODY, {**headers, name: " "}, now=TS).code == "missing_headers"
    assert refused(SECRET, BODY, {}, now=TS).message == "missing webhook-id, webhook-timestamp, webhook-signature"
    for stamp in ("1795694700.0", "-1795694700", "1.7e9", "soon", "9" * 30):
        error = refused(SECRET, BODY, {**headers, "webhook-timestamp": stamp}, now=TS)
        assert (error.status, error.code) == (400, "invalid_timestamp"), stamp


def test_header_names_are_read_in_any_case() -> None:
    headers = {name.title(): value for name, value in product_headers(SECRET).items()}
    assert "Webhook-Signature" in headers

    assert verify(SECRET, BODY, headers, now=TS) == EVENT


def test_it_skips_signatures_of_versions_it_does_not_know_and_garbage() -> None:
    good = signature(SECRET, msg_id=MSG_ID, timestamp=TS, body=BODY)
    mac = good.removeprefix("v1,")
    base = product_headers(SECRET)

    # Only an unknown version (v1a: the specification's asymmetric signatures), garbage, or v1
    # of something else: no match.
    for header in (f"v1a,{mac}", f"v2,{mac}", f"V1,{mac}", mac, "v1,", "v1,%%%", "garbage", f"v1,{mac[:-4]}"):
        error = refused(SECRET, BODY, {**base, "webhook-signature": header}, now=TS)
        assert error.code == "no_matching_signature", header
    # Beside them, the v1 one verifies, wherever it stands.
    mixed = f"v1a,{mac} garbage v1,%%% {good}  v2,{mac}"
    assert verify(SECRET, BODY, {**base, "webhook-signature": mixed}, now=TS) == EVENT


def test_it_compares_every_signature_in_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    compared: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(webhooks.hmac, "compare_digest", spy)
    headers = product_headers(SECRET, OLD_SECRET)

    assert verify([secret_new(), OLD_SECRET], BODY, headers, now=TS) == EVENT
    # Two secrets by two signatures: every pair, none skipped after the match.
    assert len(compared) == 4


def test_a_signed_body_that_is_not_an_event_is_refused_with_400() -> None:
    for body in (b"not json", b"[1, 2]", b'{"type": "x"}', b"\xff\xfe"):
        error = refused(SECRET, body, product_headers(SECRET, body=body), now=TS)
        assert (error.status, error.code) == (400, "invalid_body"), body


def test_it_refuses_to_guess_a_secret_or_a_body() -> None:
    headers = product_headers(SECRET)
    for secret in ("whsec_not base64!", "whsec_", ""):
        with pytest.raises(ValueError, match="not a webhook secret"):
            verify(secret, BODY, headers, now=TS)
    with pytest.raises(ValueError, match="no webhook secret"):
        verify([], BODY, headers, now=TS)
    with pytest.raises(TypeError, match="raw request body"):
        verify(SECRET, BODY.decode(), headers, now=TS)  # type: ignore[arg-type]
    # A secret without its prefix, or unpadded, is the same key (as the library takes it).
    assert verify(SECRET.removeprefix("whsec_"), BODY, headers, now=TS) == EVENT
    assert verify(OLD_SECRET.rstrip("="), BODY, product_headers(OLD_SECRET), now=TS) == EVENT
    assert verify(SECRET, bytearray(BODY), headers, now=TS) == EVENT


# ------------------------------------------------------------------ the specification's library


def test_it_verifies_what_the_library_signs() -> None:
    headers = {"webhook-id": MSG_ID, "webhook-timestamp": str(TS), "webhook-signature": library_signature(SECRET)}

    assert verify(SECRET, BODY, headers, now=TS) == EVENT
    # The library and the product sign alike, byte for byte.
    assert library_signature(SECRET) == signature(SECRET, msg_id=MSG_ID, timestamp=TS, body=BODY)


def test_the_typescript_clients_fixed_vector_is_what_the_library_and_the_product_sign() -> None:
    text = TS_VECTOR.read_text()
    new, old = library_signature(SECRET), library_signature(OLD_SECRET)

    assert (new, old) == (
        signature(SECRET, msg_id=MSG_ID, timestamp=TS, body=BODY),
        product_headers(OLD_SECRET)["webhook-signature"],
    )
    assert f'const SIGNATURE = "{new}";' in text
    assert f'const OLD_SIGNATURE = "{old}";' in text
    assert f'const SECRET = "{SECRET}";' in text and f'const OLD_SECRET = "{OLD_SECRET}";' in text
    assert f'const MSG_ID = "{MSG_ID}";' in text and f"const TS = {TS};" in text
    assert f"\n  '{BODY.decode()}';" in text


def _library_verdict(secret: str, body: bytes, headers: dict[str, str]) -> bool:
    try:
        Webhook(secret).verify(body, headers)
    except Exception:  # the library raises ValueError for some garbage, not only its own error
        return False
    return True


def _client_verdict(secret: str, body: bytes, headers: dict[str, str]) -> bool:
    try:
        verify(secret, body, headers)
    except WebhookVerificationError:
        return False
    return True


def test_the_client_and_the_library_agree_on_every_request() -> None:
    """Both on the wall clock; the timestamps are far from the tolerance's edges."""
    now = int(time.time())
    fresh = product_headers(SECRET, timestamp=now)
    mac = fresh["webhook-signature"].removeprefix("v1,")
    rotating = product_headers(OLD_SECRET, SECRET, timestamp=now)
    by_library = {**fresh, "webhook-signature": library_signature(SECRET, timestamp=now)}
    cases: dict[str, tuple[str, bytes, dict[str, str], bool]] = {
        "the product's": (SECRET, BODY, fresh, True),
        "the library's": (SECRET, BODY, by_library, True),
        "two signatures, the first": (OLD_SECRET, BODY, rotating, True),
        "two signatures, the second": (SECRET, BODY, rotating, True),
        "two signatures, neither": (secret_new(), BODY, rotating, False),
        "tampered body": (SECRET, BODY + b" ", fresh, False),
        "wrong secret": (OLD_SECRET, BODY, fresh, False),
        "stale": (SECRET, BODY, product_headers(SECRET, timestamp=now - 3600), False),
        "from the future": (SECRET, BODY, product_headers(SECRET, timestamp=now + 3600), False),
        "unknown version only": (SECRET, BODY, {**fresh, "webhook-signature": f"v1a,{mac}"}, False),
        "unknown version beside v1": (SECRET, BODY, {**fresh, "webhook-signature": f"v1a,{mac} v1,{mac}"}, True),
        "no id": (SECRET, BODY, {k: v for k, v in fresh.items() if k != "webhook-id"}, False),
        "no timestamp": (SECRET, BODY, {k: v for k, v in fresh.items() if k != "webhook-timestamp"}, False),
        "no signature": (SECRET, BODY, {k: v for k, v in fresh.items() if k != "webhook-signature"}, False),
        "garbage signature": (SECRET, BODY, {**fresh, "webhook-signature": "garbage"}, False),
        "header names in title case": (SECRET, BODY, {k.title(): v for k, v in fresh.items()}, True),
    }
    for name, (secret, body, headers, trusted) in cases.items():
        assert _library_verdict(secret, body, headers) is trusted, f"the library on {name}"
        assert _client_verdict(secret, body, headers) is trusted, f"the client on {name}"


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(max_size=300),
    msg_id=st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_", min_size=1, max_size=40),
    key=st.binary(min_size=24, max_size=64),
    offset=st.integers(min_value=-290, max_value=290),
    flip=st.integers(min_value=0),
)
def test_any_body_the_library_signs_verifies_and_any_flipped_byte_does_not(
    text: str, msg_id: str, key: bytes, offset: int, flip: int
) -> None:
    secret = "whsec_" + base64.b64encode(key).decode()
    body = json.dumps({"id": msg_id, "type": "webhook.test", "version": 1, "data": {"text": text}}).encode()
    now = int(time.time())
    headers = {
        "webhook-id": msg_id,
        "webhook-timestamp": str(now + offset),
        "webhook-signature": library_signature(secret, body=body, msg_id=msg_id, timestamp=now + offset),
    }

    assert verify(secret, body, headers, now=now)["data"] == {"text": text}
    tampered = bytearray(body)
    tampered[flip % len(tampered)] ^= 0x01
    assert _client_verdict(secret, bytes(tampered), headers) is False
    assert _library_verdict(secret, bytes(tampered), headers) is False
