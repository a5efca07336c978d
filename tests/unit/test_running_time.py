"""A background run's time cap counts running time only: waiting on a person, settling and a machine asleep
don't count."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from core.clock import FakeClock
from core.runs.running_time import RunningTime, reach_cap
from tests.waiting import yield_until

CAP_S = 15 * 60.0


@dataclass
class _Session:
    session_id: str = "rule-r1-1"
    status: str = "running"


@dataclass
class _Run:
    running: RunningTime
    session: _Session = field(default_factory=_Session)


def test_time_spent_waiting_on_a_person_is_not_running_time() -> None:
    time = RunningTime(started_at=100.0)
    time.hold(160.0, True)  # an approval is asked after a minute
    assert time.running_s(3_760.0) == 60.0  # an hour later it has still run one minute
    time.hold(3_760.0, False)
    time.hold(3_760.0, False)  # a second "stopped waiting" changes nothing
    assert time.running_s(3_820.0) == 120.0
    assert not time.waiting


async def test_the_cap_is_reached_after_running_time_not_wall_time() -> None:
    clock = FakeClock()
    run = _Run(RunningTime(clock.monotonic()))
    reached = asyncio.ensure_future(reach_cap(clock, CAP_S, lambda: run, lambda _sid: False))
    await yield_until(lambda: clock.sleeping_for(CAP_S))
    clock.advance(5 * 60.0)
    run.running.hold(clock.monotonic(), True)  # waits on a person for an hour from minute 5
    clock.advance(10 * 60.0)  # the first sleep ends at minute 15, but it has run only 5
    await yield_until(lambda: clock.sleeping_for(60.0))
    assert not reached.done()
    clock.advance(50 * 60.0)
    run.running.hold(clock.monotonic(), False)
    await yield_until(lambda: clock.sleeper_count == 1)
    clock.advance(9 * 60.0)
    await asyncio.sleep(0)
    assert not reached.done()  # 14 minutes of running time
    clock.advance(60.0)
    await yield_until(reached.done)
    assert reached.result() is True


async def test_a_settling_run_is_left_to_its_settle_limit() -> None:
    clock = FakeClock()
    run = _Run(RunningTime(clock.monotonic()))
    jobs: set[str] = {"rule-r1-1"}
    reached = asyncio.ensure_future(reach_cap(clock, CAP_S, lambda: run, lambda sid: sid in jobs))
    await yield_until(lambda: clock.sleeper_count == 1)
    run.session.status = "idle"  # its turn ended; its job still runs
    clock.advance(CAP_S)
    await yield_until(lambda: clock.sleeping_for(60.0))
    assert not reached.done()  # no cap while it settles
    jobs.clear()
    clock.advance(60.0)
    await yield_until(reached.done)
    assert reached.result() is True


async def test_a_job_started_mid_turn_does_not_stop_the_cap() -> None:
    clock = FakeClock()
    run = _Run(RunningTime(clock.monotonic()))  # working in turns, a dev server running beside it
    reached = asyncio.ensure_future(reach_cap(clock, CAP_S, lambda: run, lambda _sid: True))
    await yield_until(lambda: clock.sleeper_count == 1)
    clock.advance(CAP_S)
    await yield_until(reached.done)
    assert reached.result() is True


async def test_a_run_that_ended_first_never_reaches_the_cap() -> None:
    clock = FakeClock()
    current: list[_Run] = [_Run(RunningTime(clock.monotonic()))]
    reached = asyncio.ensure_future(
        reach_cap(clock, CAP_S, lambda: current[0] if current else None, lambda _sid: False)
    )
    await yield_until(lambda: clock.sleeper_count == 1)
    current.clear()
    clock.advance(CAP_S)
    await yield_until(reached.done)
    assert reached.result() is False


async def test_a_night_asleep_or_a_wall_clock_change_is_not_running_time() -> None:
    clock = FakeClock()
    run = _Run(RunningTime(clock.monotonic()))
    reached = asyncio.ensure_future(reach_cap(clock, CAP_S, lambda: run, lambda _sid: False))
    await yield_until(lambda: clock.sleeping_for(CAP_S))
    clock.advance(10 * 60)
    clock.jump_wall(8 * 3600)  # the lid closed for the night: only the wall clock moved
    assert run.running.running_s(clock.monotonic()) == 10 * 60
    clock.advance(4 * 60)
    await asyncio.sleep(0)
    assert not reached.done()
    clock.advance(60)
    await yield_until(reached.done)
    assert reached.result() is True
