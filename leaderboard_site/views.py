from __future__ import annotations

from asgiref.sync import sync_to_async
from django.db import connection
from django.http import HttpRequest, JsonResponse

from core.redis import get_redis


def _database_ok() -> bool:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return True
    except Exception:
        return False


async def healthz(request: HttpRequest) -> JsonResponse:
    """200 when Redis and the database both answer, 503 otherwise."""
    try:
        redis_ok = bool(await get_redis().ping())
    except Exception:
        redis_ok = False
    database_ok = await sync_to_async(_database_ok)()
    ok = redis_ok and database_ok
    return JsonResponse(
        {
            "status": "ok" if ok else "unavailable",
            "redis": "ok" if redis_ok else "unavailable",
            "database": "ok" if database_ok else "unavailable",
        },
        status=200 if ok else 503,
    )
