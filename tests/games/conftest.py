"""Fixtures of the boards tests."""

from __future__ import annotations

from tests.live_server import asgi_live_server  # noqa: F401 - fixture
