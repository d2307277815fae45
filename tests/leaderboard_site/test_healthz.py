from __future__ import annotations

import pytest
from django.conf import settings

from core import redis as site_redis

pytestmark = pytest.mark.django_db(transaction=True)


async def test_it_answers_200_when_redis_and_the_database_answer(aclient):
    response = await aclient.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "redis": "ok", "database": "ok"}


async def test_it_answers_503_when_redis_is_down(aclient, monkeypatch):
    # A Redis that is not there: a closed loopback port, and no cached client for this loop.
    monkeypatch.setattr(settings, "REDIS_URL", "redis://127.0.0.1:1/0")
    await site_redis.close_redis()
    try:
        response = await aclient.get("/healthz")
    finally:
        await site_redis.close_redis()
    assert (response.status_code, response.headers["Retry-After"]) == (503, "5")
    assert response.json() == {"status": "unavailable", "redis": "unavailable", "database": "ok"}
