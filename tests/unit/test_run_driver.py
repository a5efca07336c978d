"""The lifecycle task runs and rule runs share (core.runs.driver), driven by a scripted session: the nudge,
settling and its limit, the budget, the time cap, inputs that keep a run going, and what its end saves."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from sqlalchemy.orm import Session

from core.agent import events as ev
from core.agent.model_config import RetryPolicy
from core.clock import FakeClock
from core.cost.meter import CostMeter, RunCost
from core.cost.prices import Cost
from core.ids import new_id
from core.runs.driver import NO_RESULT, RunDriver
from core.runs.live_run import LiveRun
from core.runs.policy import Ending, RunLimits, SettleLimit, TimeCap
from core.store import bots, conversations, runs, tasks
from core.store.database import Database
from core.store.runs import RunRecord
from core.tasks.report import Report
from tests.waiting import yield_until

SETTLE_LIMIT_S = 30 * 60.0
CAP_S = 15 * 60.0
NOTE = "Your background jobs were stopped: {jobs}."


# -- a scripted session and runtime ------------------------------------------------------------------


@dataclass
class _Job:
    command: str


class _Jobs:
    def __init__(self) -> None:
        self.by_session: dict[str, list[_Job]] = {}
        self.killed: list[str] = []

    def running(self, session_id: str) -> list[_Job]:
        return self.by_session.get(session_id, [])

    async def kill_session(self, session_id: str) -> None:
        self.killed.append(session_id)
        self.by_session.pop(session_id, None)


class _Session:
    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.status = "running"
        self.spec = SimpleNamespace(model=SimpleNamespace(base_url="http://model", model="m1"))
        self.told: list[tuple[str, str | None]] = []
        self.cancelled = 0

    def steer(self, text: str, input_id: str | None = None) -> str:
        """On a quiet session this starts a turn, as the real one does."""
        self.told.append((text, input_id))
        self.status = "running"
        return input_id or "in_x"

    async def cancel(self, *, drop_queued: bool = False) -> None:
        self.cancelled += 1
        self.status = "idle"


class _Runtime:
    def __init__(self) -> None:
        self.jobs = _Jobs()
        self.sessions: dict[str, _Session] = {}
        self.closed: list[str] = []
        self._listeners: list[Callable[[ev.AgentEvent], None]] = []

    def subscribe(self, listener: Callable[[ev.AgentEvent], None]) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def get(self, session_id: str) -> _Session | None:
        return self.sessions.get(session_id)

    async def close_session(self, session_id: str) -> None:
        self.closed.append(session_id)
        self.sessions.pop(session_id, None)

    def emit(self, event: ev.AgentEvent) -> None:
        for listener in list(self._listeners):
            listener(event)

    def turn_ends(self, session: _Session, outcome: ev.TurnOutcome = "done", error: str = "") -> None:
        """The session's turn ended and it went quiet."""
        session.status = "idle"
        self.emit(ev.TurnEnded(session.session_id, "turn", outcome, error))
        self.emit(ev.StatusChanged(session.session_id, "idle"))

    def answers(self, session: _Session, tokens: int = 100) -> None:
        self.emit(
            ev.AssistantMessage(
                session.session_id, "turn", 1, "thinking", "m1", ev.Usage(tokens, tokens), 0.1, 0
            )
        )


class _FixedPrice(CostMeter):
    """Every response costs the same."""

    def __init__(self, clock: FakeClock, usd: str) -> None:
        super().__init__(clock)
        self._usd = Decimal(usd)

    def price(self, model: str, base_url: str, usage: ev.Usage, configured: str = "") -> Cost | None:
        return Cost(self._usd, "USD")


# -- a policy that says what it was asked --------------------------------------------------------------


@dataclass
class _Policy:
    limits: RunLimits = field(
        default_factory=lambda: RunLimits(
            RetryPolicy(), TimeCap(CAP_S, "ran too long"), SettleLimit(SETTLE_LIMIT_S, NOTE)
        )
    )
    saves_every_turn: bool = False
    session_outlives_run: bool = False
    budget_usd: float = 0.0  # 0: no budget
    waiting_inputs: int = 0
    ends: list[tuple[str, Ending, bool]] = field(default_factory=list)
    nudges: int = 0
    notes: list[str] = field(default_factory=list)
    changes: int = 0
    steps: int = 0

    def changed(self, run: LiveRun[str]) -> None:
        self.changes += 1

    def step_added(self, run: LiveRun[str]) -> None:
        self.steps += 1

    def past_budget(self, run: LiveRun[str]) -> Ending | None:
        if self.budget_usd and run.cost.usd >= self.budget_usd:
            return Ending("budget", "over budget")
        return None

    def count_spend(
        self, s: Session, run: LiveRun[str], cost: RunCost, before: RunRecord, now: float
    ) -> None:
        pass

    async def take_inputs(self, run: LiveRun[str]) -> bool:
        if not self.waiting_inputs:
            return False
        self.waiting_inputs -= 1
        run.session.steer("a follow-up", "i_follow")
        return True

    async def review(self, run: LiveRun[str]) -> bool:
        return False

    def verdict(self, run: LiveRun[str]) -> Ending | None:
        return Ending("done") if run.report is not None else None

    async def nudge(self, run: LiveRun[str]) -> None:
        self.nudges += 1
        run.session.steer("report now", f"nudge:{run.run_id}")

    async def record_note(self, run: LiveRun[str], text: str) -> str | None:
        self.notes.append(text)
        return "i_note"

    async def record_end(
        self, run_id: str, run: LiveRun[str] | None, ending: Ending, *, notify: bool
    ) -> None:
        self.ends.append((run_id, ending, notify))


# -- fixtures ------------------------------------------------------------------------------------------


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def db(tmp_path: Path, clock: FakeClock) -> AsyncIterator[Database]:
    database = Database.for_data_dir(tmp_path / "data", clock=clock)
    await database.open()
    yield database
    await database.close()


@dataclass
class _World:
    db: Database
    clock: FakeClock
    runtime: _Runtime
    policy: _Policy
    driver: RunDriver[str]
    spent: list[float]

    async def begin(self) -> tuple[str, _Session]:
        """A queued run that got its slot: its session is working on its first input."""
        now = self.clock.time()

        def make(s: Session) -> str:
            bot = bots.insert_bot(s, id=new_id("b"), name="Bot", workspace="/ws", now=now)
            conv = conversations.insert_conversation(s, id=new_id("c"), bot_id=bot.id, title="Chat", now=now)
            task_id = new_id("t")
            tasks.insert_task(
                s,
                id=task_id,
                bot_id=bot.id,
                conversation_id=conv.id,
                title="Research",
                brief="Compare prices",
                session_id=f"task-{task_id}",
                folder="/ws/tasks/research",
                permission="workspace-write",
                budget_usd=2.0,
                now=now,
            )
            run = runs.insert_run(
                s,
                id=new_id("r"),
                bot_id=bot.id,
                session_id=f"task-{task_id}",
                cause="launch",
                now=now,
                task_id=task_id,
            )
            return run.id

        run_id = await self.db.write(make)
        session = _Session(f"session-{run_id}")
        self.runtime.sessions[session.session_id] = session
        await self.driver.begin(run_id, "b1", cast(Any, session), "the work")
        return run_id, session

    async def stored(self, run_id: str) -> RunRecord:
        record = await self.db.read(lambda s: runs.get_run(s, run_id))
        assert record is not None
        return record

    async def ended(self) -> tuple[str, Ending, bool]:
        await yield_until(lambda: bool(self.policy.ends), "the run ended")
        return self.policy.ends[-1]


@pytest.fixture
async def world(db: Database, clock: FakeClock) -> AsyncIterator[_World]:
    runtime = _Runtime()
    policy = _Policy()
    spent: list[float] = []
    driver: RunDriver[str] = RunDriver(
        db,
        clock,
        policy,
        meter=_FixedPrice(clock, "0.60"),
        on_cost=lambda _bot, usd: spent.append(usd),
    )
    driver.attach(cast(Any, runtime))
    yield _World(db, clock, runtime, policy, driver, spent)
    await driver.close()


# -- the tests -----------------------------------------------------------------------------------------


async def test_a_run_that_never_reports_is_nudged_once_then_fails(world: _World) -> None:
    run_id, session = await world.begin()
    assert (await world.stored(run_id)).state == "running"

    world.runtime.turn_ends(session)
    await yield_until(lambda: world.policy.nudges == 1, "the nudge")
    assert session.told == [("report now", f"nudge:{run_id}")]
    assert world.policy.ends == []

    world.runtime.turn_ends(session)  # the nudge's turn
    assert await world.ended() == (run_id, Ending("failed", NO_RESULT), True)
    assert world.policy.nudges == 1


async def test_a_run_ends_with_what_it_reported(world: _World) -> None:
    run_id, session = await world.begin()
    world.runtime.answers(session, tokens=120)
    run = world.driver.live(run_id)
    assert run is not None
    run.report = Report(state="done", summary="found it")
    world.runtime.turn_ends(session)

    assert await world.ended() == (run_id, Ending("done"), True)
    stored = await world.stored(run_id)
    assert (stored.tokens_in, stored.tokens_out) == (120, 120)
    assert stored.cost_usd == pytest.approx(0.60)
    assert [step["kind"] for step in stored.activity] == ["model"]
    assert world.driver.live(run_id) is None
    assert world.runtime.closed == [session.session_id]  # its own session goes with it


async def test_a_turn_that_ended_in_an_error_fails_the_run_with_it(world: _World) -> None:
    run_id, session = await world.begin()
    world.runtime.turn_ends(session, "error", "model unreachable")
    assert await world.ended() == (run_id, Ending("failed", "model unreachable"), True)
    assert world.policy.nudges == 0


async def test_an_input_that_arrived_keeps_the_run_going(world: _World) -> None:
    world.policy.waiting_inputs = 1
    run_id, session = await world.begin()
    world.runtime.turn_ends(session)
    await yield_until(lambda: ("a follow-up", "i_follow") in session.told, "the follow-up handed over")
    assert world.policy.ends == [] and world.policy.nudges == 0

    run = world.driver.live(run_id)
    assert run is not None
    run.report = Report(state="done", summary="both done")
    world.runtime.turn_ends(session)
    assert await world.ended() == (run_id, Ending("done"), True)


async def test_a_run_whose_jobs_still_run_settles_and_is_told_at_the_settle_limit(world: _World) -> None:
    run_id, session = await world.begin()
    world.runtime.jobs.by_session[session.session_id] = [_Job("npm run build")]
    changes = world.policy.changes
    world.runtime.turn_ends(session)

    await yield_until(lambda: world.policy.changes > changes, "the settling shown")
    assert (await world.stored(run_id)).state == "settling"
    assert world.policy.ends == [] and world.policy.nudges == 0

    await yield_until(lambda: world.clock.sleeping_for(SETTLE_LIMIT_S), "the settle limit armed")
    world.clock.advance(SETTLE_LIMIT_S)
    await yield_until(lambda: session.session_id in world.runtime.jobs.killed, "the jobs killed")
    note = NOTE.format(jobs="npm run build")
    assert world.policy.notes == [note]
    assert session.told == [(note, "i_note")]
    assert world.policy.ends == []


async def test_a_run_is_stopped_at_its_budget_and_every_response_counts(world: _World) -> None:
    world.policy.budget_usd = 1.0
    run_id, session = await world.begin()
    world.runtime.answers(session)
    await yield_until(lambda: len(world.spent) == 1, "the first response priced")
    assert session.cancelled == 0

    world.runtime.answers(session)  # $1.20 now, past the $1 budget
    assert await world.ended() == (run_id, Ending("budget", "over budget"), True)
    assert session.cancelled == 1
    assert session.session_id in world.runtime.jobs.killed
    assert world.spent == [pytest.approx(0.60), pytest.approx(0.60)]
    assert (await world.stored(run_id)).cost_usd == pytest.approx(1.20)


async def test_the_time_cap_counts_running_time_not_time_waiting_on_a_person(world: _World) -> None:
    run_id, _session = await world.begin()
    await yield_until(lambda: world.clock.sleeping_for(CAP_S), "the time cap armed")
    world.clock.advance(100.0)
    world.driver.hold(run_id, True)  # an approval is asked
    world.clock.advance(2000.0)
    await yield_until(lambda: world.clock.sleeper_count == 1, "the cap looking again later")
    world.driver.hold(run_id, False)  # the person decided
    world.clock.advance(799.0)
    await yield_until(lambda: world.clock.sleeper_count == 1, "the cap looking again later")
    assert world.policy.ends == []  # 899 s of running time in 2899 s

    world.clock.advance(1.0)
    assert await world.ended() == (run_id, Ending("failed", "ran too long"), True)


async def test_stopping_a_run_from_outside_cancels_it_and_nothing_nudges_it_afterwards(world: _World) -> None:
    run_id, session = await world.begin()
    world.runtime.jobs.by_session[session.session_id] = [_Job("sleep 600")]
    await world.driver.stop(run_id, Ending("stopped"), notify=False)

    assert world.policy.ends == [(run_id, Ending("stopped"), False)]
    assert session.cancelled == 1
    assert world.runtime.jobs.killed == [session.session_id]
    world.runtime.turn_ends(session)  # the cancelled turn's end arrives late
    await yield_until(lambda: world.driver.live(run_id) is None, "the run gone")
    assert world.policy.nudges == 0 and len(world.policy.ends) == 1


async def test_a_run_that_is_not_working_is_still_recorded_as_ended(world: _World) -> None:
    await world.driver.stop("r_never_started", Ending("failed", "could not start"))
    assert world.policy.ends == [("r_never_started", Ending("failed", "could not start"), True)]


async def test_a_session_that_outlives_its_run_is_left_open_while_busy(world: _World) -> None:
    world.policy.session_outlives_run = True
    busy_id, busy = await world.begin()
    await world.driver.end(busy_id, Ending("stopped"))  # its turn still runs
    assert world.runtime.closed == []

    quiet_id, quiet = await world.begin()
    quiet.status = "idle"
    await world.driver.end(quiet_id, Ending("done"))
    assert world.runtime.closed == [quiet.session_id]
    assert busy.session_id in world.runtime.sessions
