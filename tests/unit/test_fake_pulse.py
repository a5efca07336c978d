"""The fakes' wake-up never loses a beat: a held long poll answers the message that lands while another
waiter is waiting too (a shared, cleared Event slept through it and a Telegram reply never came)."""

from __future__ import annotations

import asyncio

from tests.fakes.pulse import Pulse


async def test_a_beat_between_taking_and_waiting_still_wakes_the_held_poll() -> None:
    pulse, queued, answered = Pulse(), list[str](), list[str]()

    async def held_poll() -> None:
        coming = pulse.coming()
        if not queued:
            await asyncio.wait_for(coming.wait(), 5)  # on 3.11 the wait itself starts a loop step later
        answered.extend(queued)
        pulse.beat()  # as the fakes do after every call they answer

    poll = asyncio.create_task(held_poll())
    await asyncio.sleep(0)  # one loop step: the poll has taken its beat and handed the wait to wait_for
    queued.append("你好")
    pulse.beat()
    async with asyncio.timeout(5):  # the test waits at once, before the poll's wait has started
        await pulse.until(lambda: bool(answered))
    assert answered == ["你好"]
    await poll


async def test_until_returns_once_the_condition_holds_after_a_beat() -> None:
    pulse, sent = Pulse(), list[str]()
    waiter = asyncio.create_task(pulse.until(lambda: len(sent) == 2))
    for text in ("a", "b"):
        await asyncio.sleep(0)
        sent.append(text)
        pulse.beat()
    await asyncio.wait_for(waiter, 5)
    assert sent == ["a", "b"]
