"""Fixtures of the games tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.games.live_helpers import Sockets
from tests.live_server import dialogs, page  # noqa: F401 - fixtures of the browser tests


@pytest.fixture
async def sockets() -> AsyncIterator[Sockets]:
    opened = Sockets()
    yield opened
    await opened.close_all()
