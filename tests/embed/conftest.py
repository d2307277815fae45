"""Fixtures of the embed tests: the live tests' sockets, servers and browser."""

from __future__ import annotations

from tests.live.conftest import sockets  # noqa: F401 - a fixture
from tests.live_server import asgi_live_server, browser, live_broadcaster  # noqa: F401 - fixtures
