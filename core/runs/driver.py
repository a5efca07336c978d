"""The lifecycle every background run goes through, task run or rule run alike.

A run goes `queued -> running <-> settling -> ended`. It is stored `queued` until it holds a background
slot; its runner then opens the session and calls `begin`, and the run is `running`: from here the driver
watches its session on the runtime's event stream. Each time the session goes quiet (a turn ended, it went
idle, a job ended) the driver looks whether the run is finished, one look at a time and under the run's
`deciding` lock, so an input handed over meanwhile is either in before the decision or finds the run gone:

- the session still owns running jobs: the run is `settling`. It keeps its slot and waits for the jobs;
  after the settle limit (30 minutes by default) the session is told so in a note and its jobs are killed,
  which wakes it for one more turn, and the run is `running` again;
- something arrived for it meanwhile (a task's follow-up or answer): it goes on with that;
- its Report claims what the host checks first (a goal task's done, docs/goals.md#rounds) and the check
  failed: it goes on with the next round;
- its Report (or what happened to it, like an approval nobody gave) gives the outcome: it ends with that;
- its last turn ended in an error: it fails with the error;
- it never reported: it is nudged once to report, and when the next quiet comes still without a Report
  it fails.

Every model response is priced as it arrives and added to the run's spend; once the spend reaches the
budget the policy counts it against, the turn is cancelled, the jobs are killed and the run ends. Running
time is capped the same way (4 hours for a task run, 15 minutes for a rule run), counting neither the time
spent waiting on a person nor settling (core.runs.running_time). Ending, whatever the cause, saves the run's
steps, tokens and spend, lets go of its session, and leaves what the end means (what is written, what is
pushed) to the kind's RunPolicy. Only the differences live in the policies: a fix to settling or to cost
lands here, once.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Generic, TypeVar

from sqlalchemy.orm import Session

from core.agent import events as ev
from core.clock import Clock
from core.cost.meter import CostMeter, RunCost
from core.runs.live_run import LiveRun
from core.runs.policy import Ending, RunPolicy
from core.runs.running_time import RunningTime, reach_cap
from core.store import run_inputs as input_rows
from core.store import runs as run_rows
from core.store.database import Database
from core.translations import text

if TYPE_CHECKING:
    from core.agent.runtime import AgentRuntime
    from core.agent.session import AgentSession

log = logging.getLogger(__name__)

W = TypeVar("W")

NO_RESULT = text("zh", "run.no_result")
# Any usage is priced when the model has a price at all: this one only asks whether it has.
PROBE_USAGE = ev.Usage(input_tokens=1000, output_tokens=1000)
# Inputs kept in `run_inputs` have ids like this; the others (a rule's start, its nudge) exist only in the
# session, so there is no row to mark taken.
STORED_INPUT_PREFIX = "i_"


class RunDriver(Generic[W]):
    def __init__(
        self,
        db: Database,
        clock: Clock,
        policy: RunPolicy[W],
        *,
        meter: CostMeter | None = None,
        on_cost: Callable[[str, float], None] = lambda _bot, _usd: None,
    ) -> None:
        self._db = db
        self._clock = clock
        self._policy = policy
        self._meter = meter or CostMeter(clock)
        self._on_cost = on_cost  # told each USD amount a bot's runs spend, as it is spent
        self._runtime: AgentRuntime | None = None
        self._live: dict[str, LiveRun[W]] = {}  # by run id
        self._by_session: dict[str, str] = {}  # session id -> run id
        self._background: set[asyncio.Task[None]] = set()
        self._unsubscribe: Callable[[], None] | None = None

    # ---- being there --------------------------------------------------------------------------------

    def attach(self, runtime: AgentRuntime) -> None:
        self._runtime = runtime
        self._unsubscribe = runtime.subscribe(self._on_event)

    def detach(self) -> None:
        """Stop watching sessions."""
        if self._unsubscribe:
            self._unsubscribe()
            self._unsubscribe = None

    async def close(self) -> None:
        """Stop watching and cancel the runs' timers and background work. Live runs stay as they are stored;
        their runners recover them at the next start."""
        self.detach()
        for run in self._live.values():
            cancel_timers(run.settle_timer, run.cap_timer)
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)

    def spawn(self, coro: Awaitable[None]) -> None:
        """Run `coro` in the background, logging (not raising) its failure; `close` cancels it."""

        async def run() -> None:
            try:
                await coro
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("background work of a run failed")

        task = asyncio.get_running_loop().create_task(run())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # ---- the runs working now -----------------------------------------------------------------------

    def live(self, run_id: str) -> LiveRun[W] | None:
        return self._live.get(run_id)

    def of_session(self, session_id: str) -> LiveRun[W] | None:
        run_id = self._by_session.get(session_id)
        return self._live.get(run_id) if run_id else None

    def runs(self) -> list[LiveRun[W]]:
        return list(self._live.values())

    async def begin(
        self, run_id: str, bot_id: str, session: AgentSession, work: W, *, nudged: bool = False
    ) -> LiveRun[W]:
        """The run holds its slot and its session is open: it is `running` from now, and its time counts.
        The caller gives the session its first input."""
        now = self._clock.time()
        run = LiveRun(
            run_id,
            bot_id,
            session,
            work,
            RunningTime(self._clock.monotonic()),
            base_url=session.spec.model.base_url,
            nudged=nudged,
        )
        self._live[run_id] = run
        self._by_session[session.session_id] = run_id
        self._meter.load_soon()
        await self._db.write(lambda s: run_rows.set_run_state(s, run_id, "running", now=now))
        run.cap_timer = asyncio.get_running_loop().create_task(self._time_cap(run_id))
        self._policy.changed(run)
        return run

    def settle_soon(self, run_id: str) -> None:
        """Look whether the run is finished without waiting for its session to say something."""
        self.spawn(self._check_settled(run_id))

    def hold(self, run_id: str, waiting: bool) -> None:
        """The run waits on a person (or stopped waiting): its running time pauses meanwhile."""
        run = self._live.get(run_id)
        if run is not None:
            run.running.hold(self._clock.monotonic(), waiting)

    # ---- watching sessions --------------------------------------------------------------------------

    def _on_event(self, event: ev.AgentEvent) -> None:
        run = self.of_session(event.session_id)
        if run is None:
            return
        if isinstance(event, ev.InputTaken) and event.input_id.startswith(STORED_INPUT_PREFIX):
            self.spawn(self._mark_taken(event.input_id))
        if isinstance(event, ev.ModelRequestStarted):
            run.model_wait_since = self._clock.time()
            # Not a step, but the run's line changes: it says it waits on the model from now.
            self._policy.step_added(run)
        elif isinstance(event, ev.AssistantMessage | ev.TurnEnded):
            run.model_wait_since = None
        if isinstance(event, ev.AssistantMessage):
            self.count_usage(run, event.model, event.usage)
        if run.activity.feed(event):
            self._policy.step_added(run)
        if isinstance(event, ev.TurnEnded):
            if event.outcome == "error":
                run.error = event.error
                run.error_words = dict(event.error_words)
            if self._policy.saves_every_turn:
                self.spawn(self.save_activity(run))
            self.spawn(self._check_settled(run.run_id))
        elif (isinstance(event, ev.StatusChanged) and event.status == "idle") or isinstance(
            event, ev.JobEnded
        ):
            self.spawn(self._check_settled(run.run_id))

    async def _mark_taken(self, input_id: str) -> None:
        now = self._clock.time()

        def mark(s: Session) -> None:
            input_rows.mark_taken(s, input_id, now=now)

        await self._db.write(mark)

    def count_usage(self, run: LiveRun[W], model: str, usage: ev.Usage) -> None:
        """Add a response's tokens and estimated cost, the session's or one the host asked for the run (a
        goal's judge); at the budget the run is stopped (docs/cost.md). A response that was in flight when
        the run stopped still counts."""
        run.tokens_in += usage.input_tokens
        run.tokens_out += usage.output_tokens
        cost = self._meter.price(model, run.base_url, usage, configured=run.session.spec.model.model)
        run.cost.add(cost)
        if cost is not None and cost.currency == "USD":
            self._on_cost(run.bot_id, float(cost.amount))
        if run.over_budget or run.stopping:
            return
        ending = self._policy.past_budget(run)
        if ending is not None:
            run.over_budget = True
            self.spawn(self._stop_at(run.run_id, ending))

    def model_priced(self, run: LiveRun[W]) -> bool:
        """Whether the run's model has a known price (the user's own or the catalogue's), so its spend can
        be said from the first call on: a model without one is 「未定价」 from the start."""
        model = run.session.spec.model.model
        return self._meter.price(model, run.base_url, PROBE_USAGE, configured=model) is not None

    def _jobs_running(self, session_id: str) -> bool:
        return self._runtime is not None and bool(self._runtime.jobs.running(session_id))

    # ---- deciding -----------------------------------------------------------------------------------

    async def _check_settled(self, run_id: str) -> None:
        run = self._live.get(run_id)
        if run is None or run.checking or run.stopping or run.session.status != "idle":
            return
        run.checking = True
        try:
            async with run.deciding:
                await self._decide(run)
        finally:
            run.checking = False

    async def _decide(self, run: LiveRun[W]) -> None:
        """Settling, going on with an input that arrived, or ending with the outcome it reported."""
        run_id = run.run_id
        if run.session.status != "idle":
            return  # an input handed over just before this started a turn: its end looks again
        if self._jobs_running(run.session.session_id):
            await self._db.write(
                lambda s: run_rows.set_run_state(s, run_id, "settling", now=self._clock.time())
            )
            if run.settle_timer is None:
                run.settle_timer = asyncio.get_running_loop().create_task(self._settle_limit(run_id))
            self._policy.changed(run)
            return
        if await self._policy.take_inputs(run):
            return
        if await self._policy.review(run):
            return
        verdict = self._policy.verdict(run)
        if verdict is not None:
            await self.end(run_id, verdict)
        elif run.error:
            await self.end(run_id, Ending("failed", run.error))
        elif not run.nudged:
            run.nudged = True
            await self._policy.nudge(run)
        else:
            await self.end(run_id, Ending("failed", NO_RESULT))

    async def _settle_limit(self, run_id: str) -> None:
        limit = self._policy.limits.settle
        await self._clock.sleep(limit.seconds)
        run = self._live.get(run_id)
        if run is None or self._runtime is None:
            return
        session_id = run.session.session_id
        commands = [job.command for job in self._runtime.jobs.running(session_id)]
        # The session is told at its next turn (docs/runs.md#settling-and-the-settle-limit): the note goes in
        # first, so that turn starts with it; the jobs' own "killed" notices follow.
        note = limit.note.format(jobs=", ".join(commands) or "none")
        input_id = await self._policy.record_note(run, note)
        run.settle_timer = None
        run.session.steer(note, input_id)
        await self._runtime.jobs.kill_session(session_id)

    # ---- stopping and ending ------------------------------------------------------------------------

    async def _time_cap(self, run_id: str) -> None:
        """Fail the run once it has run for the cap (core.runs.running_time says what counts)."""
        cap = self._policy.limits.time_cap
        current = functools.partial(self._live.get, run_id)
        if await reach_cap(self._clock, cap.seconds, current, self._jobs_running):
            await self._stop_at(run_id, Ending("failed", cap.error))

    async def _stop_at(self, run_id: str, ending: Ending) -> None:
        """Stop a run at a limit (budget or time), unless it is stopping already."""
        run = self._live.get(run_id)
        if run is None or run.stopping:
            return
        run.stopping = True
        await self._halt(run.session)
        await self.end(run_id, ending)

    async def stop(self, run_id: str, ending: Ending, *, notify: bool = True) -> None:
        """End a run from outside its session (a person, an approval that timed out, the reserve): its turn
        is cancelled and its jobs killed first when it is working. Recorded even when it is not."""
        run = self._live.get(run_id)
        if run is not None:
            run.stopping = True
            await self._halt(run.session)
        await self.end(run_id, ending, notify=notify)

    async def _halt(self, session: AgentSession) -> None:
        """Cancel the turn (and what is queued behind it) and kill the jobs. The session stays usable, so a
        task can be continued later."""
        await session.cancel(drop_queued=True)
        if self._runtime is not None:
            await self._runtime.jobs.kill_session(session.session_id)

    async def end(self, run_id: str, ending: Ending, *, notify: bool = True) -> None:
        """End the run: save what it did, let go of its session, and record the end as its policy says.
        `notify` False ends it quietly (a person stopped it, or it waits for the reserve)."""
        run = self._live.pop(run_id, None)
        if run is not None:
            self._by_session.pop(run.session.session_id, None)
            cancel_timers(run.settle_timer, run.cap_timer)
            await self.save_activity(run)
            await self._let_session_go(run)
        await self._policy.record_end(run_id, run, ending, notify=notify)

    async def save_activity(self, run: LiveRun[W]) -> None:
        """The run's steps, tokens and cost so far, and (by the policy) whatever else counts its spend."""
        steps = run.activity.to_json()
        tokens = (run.tokens_in, run.tokens_out)
        cost = RunCost(run.cost.usd, dict(run.cost.other), run.cost.unpriced_calls)
        now = self._clock.time()

        def save(s: Session) -> None:
            before = run_rows.get_run(s, run.run_id)
            run_rows.update_run(
                s,
                run.run_id,
                activity=steps,
                tokens_in=tokens[0],
                tokens_out=tokens[1],
                cost_usd=cost.usd,
                cost_other=cost.other,
                unpriced_calls=cost.unpriced_calls,
            )
            if before is not None:
                self._policy.count_spend(s, run, cost, before, now)

        await self._db.write(save)

    async def _let_session_go(self, run: LiveRun[W]) -> None:
        """A finished run's session leaves memory (its history stays on disk), so memory does not grow with
        every run ever made."""
        runtime = self._runtime
        if runtime is None:
            return
        session_id = run.session.session_id
        if self._policy.session_outlives_run:
            # A newer run may have the session already; a busy one finishes first (a follow-up reopens it).
            session = runtime.get(session_id)
            if session_id in self._by_session or session is None:
                return
            if session.status != "idle" or runtime.jobs.running(session_id):
                return
        await runtime.close_session(session_id)


def cancel_timers(*timers: asyncio.Task[None] | None) -> None:
    """Cancel a run's timers as it ends, except the one ending it: a timer that stops its own run must not
    cancel itself halfway through the ending."""
    current = asyncio.current_task()
    for timer in timers:
        if timer is not None and timer is not current:
            timer.cancel()
