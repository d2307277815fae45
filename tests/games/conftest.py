"""Fixtures of the boards tests."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from core import apikeys, services
from core.models import ApiKey
from tests.live_server import asgi_live_server  # noqa: F401 - fixture


@pytest.fixture
async def rally() -> tuple[str, str]:
    """A game 'rally' with no board yet, and a (manage, submit) key pair."""
    game = await sync_to_async(services.game_create)(slug="rally", name="Rally", max_submissions_per_minute=0)
    _, manage = await sync_to_async(apikeys.api_key_create)(game=game, name="ops", scope=ApiKey.Scope.MANAGE)
    _, submit = await sync_to_async(apikeys.api_key_create)(game=game, name="server")
    return manage, submit
