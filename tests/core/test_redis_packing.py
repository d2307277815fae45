"""core/redis.py's connections pack commands with hiredis: the same bytes redis-py's own
packer writes, and what that packer refuses is still refused."""

from __future__ import annotations

from typing import Any

import pytest
from django.conf import settings
from hypothesis import given
from hypothesis import strategies as st
from redis.asyncio.connection import Connection
from redis.exceptions import DataError

from core.redis import CheckedConnection, new_client

# Command arguments the product sends: names, keys and members (any text, any bytes), integers
# across the range scores and times take, and beyond.
ARGS = st.lists(
    st.one_of(
        st.text(),
        st.binary(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=False),
        st.booleans(),
    ),
    max_size=8,
)


def _packed(connection: Connection, *args: Any) -> bytes:
    return b"".join(connection.pack_command(*args))


@given(name=st.sampled_from(["EVALSHA", "SCRIPT LOAD", "CLIENT\tLIST", b"CLIENT SETNAME", b"GET", "zadd"]), args=ARGS)
def test_it_packs_every_command_as_redis_py_does(name: str | bytes, args: list[object]) -> None:
    ours, theirs = CheckedConnection(), Connection()
    try:
        expected: bytes | type[Exception] = _packed(theirs, name, *args)
    except DataError:
        expected = DataError
    if expected is DataError:
        with pytest.raises(DataError):
            _packed(ours, name, *args)
    else:
        assert _packed(ours, name, *args) == expected


def test_it_refuses_a_string_utf_8_cannot_write() -> None:
    with pytest.raises(UnicodeEncodeError):
        _packed(CheckedConnection(), "SET", "k", "\udc80")


@pytest.mark.skipif(settings.REDIS_CLUSTER, reason="the cluster client's connections are redis-py's own")
async def test_it_round_trips_commands_packed_by_hiredis() -> None:
    client = new_client(standalone=True)
    try:
        key = "test:{packing}:zset"
        await client.delete(key)
        await client.zadd(key, {"ann": 2**53 - 1, "bob": -(2**53 - 1), "zoë 🏁": 7})
        assert await client.zrange(key, 0, -1, withscores=True) == [
            ("bob", -(2**53 - 1)),
            ("zoë 🏁", 7),
            ("ann", 2**53 - 1),
        ]
        assert await client.execute_command("SCRIPT EXISTS", "0" * 40) == [0]
    finally:
        await client.delete(key)
        await client.aclose()
