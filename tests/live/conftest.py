"""Fixtures of the games tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.live.live_helpers import Sockets
from tests.live_server import asgi_live_server, browser, dialogs, live_broadcaster, page  # noqa: F401 - fixtures


@pytest.fixture
async def sockets() -> AsyncIterator[Sockets]:
    opened = Sockets()
    yield opened
    await opened.close_all()
