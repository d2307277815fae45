"""The admission queue of live/sockets/admission.py on its own: turns first come first
served, a bounded line, and a turn never lost to a cancelled socket."""

from __future__ import annotations

import asyncio

import pytest

from live.sockets.admission import Gate, Opening, Shed


async def settle() -> None:
    for _ in range(3):
        await asyncio.sleep(0)


async def test_it_serves_turns_first_come_first_served_and_refuses_past_its_bound() -> None:
    gate = Gate(slots=2, queue_max=3)
    served: list[int] = []
    await gate.acquire()
    await gate.acquire()

    async def wait(n: int) -> None:
        await gate.acquire()
        served.append(n)

    waiters = [asyncio.create_task(wait(n)) for n in range(3)]
    await settle()
    assert gate.waiting == 3 and served == []
    with pytest.raises(Shed):
        await gate.acquire()  # the line is full

    for expected in ([0], [0, 1], [0, 1, 2]):
        gate.release()
        await settle()
        assert served == expected
    await asyncio.gather(*waiters)
    assert gate.busy == 2 and gate.waiting == 0
    gate.release()
    gate.release()
    assert gate.busy == 0


async def test_it_lets_a_cancelled_waiter_leave_the_line() -> None:
    gate = Gate(slots=1, queue_max=10)
    await gate.acquire()
    leaving = asyncio.create_task(gate.acquire())
    staying = asyncio.create_task(gate.acquire())
    await settle()

    leaving.cancel()
    await settle()
    assert gate.waiting == 1
    gate.release()
    await asyncio.wait_for(staying, 1)
    assert gate.busy == 1


async def test_it_passes_on_a_turn_handed_to_a_socket_cancelled_before_it_took_it() -> None:
    gate = Gate(slots=1, queue_max=10)
    await gate.acquire()
    first = asyncio.create_task(gate.acquire())
    second = asyncio.create_task(gate.acquire())
    await settle()

    gate.release()  # handed to ``first``...
    first.cancel()  # ...which is cancelled before it runs again
    await asyncio.wait_for(second, 1)
    assert gate.busy == 1 and gate.waiting == 0


async def test_it_gives_an_opening_back_once() -> None:
    gate = Gate(slots=1, queue_max=0)
    opening = Opening(gate)
    await opening.take()
    with pytest.raises(Shed):
        await Opening(gate).take()  # no turn free, and no room to wait

    opening.release()
    opening.release()  # the consumer and the guard both give it back: once counts
    assert gate.busy == 0
    await Opening(gate).take()
