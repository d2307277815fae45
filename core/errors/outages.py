"""What counts as an outage (Redis or the database unreachable): answered 503 with
Retry-After, skipped or retried later; never a 500."""

from __future__ import annotations

import logging

from django.db import InterfaceError, OperationalError
from redis.exceptions import (
    ClusterError,
    MaxConnectionsError,
    ReadOnlyError,
    RedisClusterException,
    RedisError,
    TryAgainError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from .. import metrics

logger = logging.getLogger("core.errors")


# What Redis being unreachable raises: a refused, reset or timed-out connection, no
# free connection in the pool, a Redis still loading its data or read-only; on a Redis
# Cluster also a failover under way (CLUSTERDOWN, redirects past their limit, TRYAGAIN)
# and no node reachable to learn the layout from. Not ResponseError: a script that fails
# is a bug (500), not an outage.
REDIS_ERRORS: tuple[type[BaseException], ...] = (
    RedisConnectionError,
    RedisTimeoutError,
    ReadOnlyError,
    OSError,
    ClusterError,
    TryAgainError,
    RedisClusterException,
)
# Anything the Redis client raises, replies included (best-effort work that must not
# fail its caller: a config-change notice, a lock release).
REDIS_FAILURES: tuple[type[BaseException], ...] = (RedisError, OSError, RedisClusterException)
# ...and the database: refused or lost connections, a locked SQLite file.
DATABASE_ERRORS: tuple[type[BaseException], ...] = (OperationalError, InterfaceError)
UNAVAILABLE_ERRORS = REDIS_ERRORS + DATABASE_ERRORS
# Admin shows this instead of a 500 when Redis is down.
REDIS_DOWN_MESSAGE = "Redis is unavailable, so nothing was changed. Try again in a moment."


def is_unavailable(error: BaseException) -> bool:
    """Whether an error means Redis or the database is unreachable (503), not a bug (500)."""
    return isinstance(error, UNAVAILABLE_ERRORS)


def report_unavailable(error: BaseException, *, during: str) -> None:
    """Log an outage met ``during`` some work (one warning line) and count it by backend
    (leaderboard_backend_errors_total): what every place that answers 503, skips a round or
    retries later calls, so that the count and the log agree.

    No free pooled Redis connection in time (core.redis.PoolExhaustedError; a cluster
    client's MaxConnectionsError) is answered the same way but is no outage: the process
    had more Redis work in flight than REDIS_POOL_SIZE while Redis answered. It is logged
    as pool saturation and counted in leaderboard_redis_pool_exhausted_total instead, so
    that "Redis down" alerts fire only when Redis is down."""
    if isinstance(error, MaxConnectionsError):
        if type(error) is MaxConnectionsError:  # a cluster client's cap (core.redis counts its own pool's)
            metrics.REDIS_POOL_EXHAUSTED.inc()
        logger.warning(
            "redis pool saturated during %s (%s: %s): Redis answers; this process has more Redis work in flight "
            "than REDIS_POOL_SIZE",
            during,
            type(error).__name__,
            error,
        )
        return
    backend = "database" if isinstance(error, DATABASE_ERRORS) else "redis"
    metrics.BACKEND_ERRORS.labels(backend=backend).inc()
    logger.warning("%s unavailable during %s (%s: %s)", backend, during, type(error).__name__, error)
