"""Planned tasks (docs/plans.md): one goal, a planner turn's plan of subtasks, the subtasks run as tasks of
their own in dependency order, and one merged result.

A planned task has one run of its own that spans the whole plan: it is `running` from the start, holds no
background slot and has no session (the planner and the aggregator are single model turns with no tools).
Its subtasks are tasks with `parent_id` set, each with its own session, folder (`parts/<id>/` in the
planned task's folder) and runs on the background lane, so they take the bot's slots like any task, and
a restart recovers them like any task. At most three run at once. Their spend counts against the planned
task's budget; their ends are told here, never pushed. The planned task's run ends once, done with the
merged report or failed or at its budget, and that end owes the conversation its one push.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy.orm import Session

from core.agent.events import Usage
from core.agent.messages import ModelRequest, UserText
from core.agent.model_client import ModelCallError
from core.agent.session_spec import SessionSpec
from core.bots.service import BotService
from core.bus import EventBus
from core.changes import TaskChanged
from core.clock import Clock
from core.cost.meter import CostMeter, RunCost, reached_budget
from core.goals.review import CheckPlace
from core.goals.rounds import GoalState, RoundLimits, StopReason, restarted
from core.goals.words import round_feedback
from core.ids import new_id
from core.plans.merge import Merged, MergeError, parse_merge, plain_merge
from core.plans.plan import Plan, PlanError, Subtask, parse_plan
from core.plans.prompts import (
    RETRY_NOTE,
    PartResult,
    merger_instructions,
    merger_prompt,
    planner_instructions,
    planner_prompt,
    subtask_brief,
)
from core.plans.state import PlanState
from core.store import run_inputs as input_rows
from core.store import runs as run_rows
from core.store import tasks as task_rows
from core.store.amounts import add_amounts
from core.store.database import Database
from core.store.runs import RunCause, RunOutcome, RunRecord
from core.store.tasks import TaskRecord
from core.tasks.folders import subtask_folder
from core.tasks.goal_rounds import criteria_of, judge_round
from core.tasks.language import language_of
from core.tasks.report import Report
from core.tasks.runner import TASK_RETRY, TaskRunner, task_session_id

if TYPE_CHECKING:
    from core.agent.runtime import AgentRuntime
    from core.tasks.result_push import ResultPush

log = logging.getLogger(__name__)

MAX_PARALLEL = 3
PLAN_ATTEMPTS = 2
RESTARTED = "Errand restarted"

# A subtask's last run's outcome, by which the plan goes on: done lets its dependents start.
FINISHED: frozenset[str] = frozenset({"done"})


@dataclass(frozen=True, slots=True)
class Part:
    """One subtask as it stands: its task and its runs."""

    subtask: Subtask
    task: TaskRecord | None
    runs: tuple[RunRecord, ...]

    @property
    def live(self) -> bool:
        return any(r.state != "ended" for r in self.runs)

    @property
    def outcome(self) -> str:
        """'' before its first run ended or while one works; else its last run's outcome."""
        if not self.runs or self.live:
            return ""
        return self.runs[-1].outcome

    @property
    def finished(self) -> bool:
        return self.outcome in FINISHED


class PlannedTasks:
    def __init__(
        self,
        db: Database,
        bus: EventBus,
        clock: Clock,
        bots: BotService,
        meter: CostMeter,
        runner: TaskRunner,
        push: ResultPush,
        *,
        sessions: Callable[[], AgentRuntime | None],
        max_parallel: int = MAX_PARALLEL,
    ) -> None:
        self._db = db
        self._bus = bus
        self._clock = clock
        self._bots = bots
        self._meter = meter
        self._runner = runner
        self._push = push
        self._sessions = sessions
        self._max_parallel = max_parallel
        self._locks: dict[str, asyncio.Lock] = {}
        self._work: set[asyncio.Task[None]] = set()

    # ---- lifecycle ----------------------------------------------------------------------------------

    async def recover(self) -> None:
        """After a restart (before runs start): each planned task whose run a crash left working gets a new
        run and goes on from its phase. Its subtasks' own runs are recovered like any task's."""
        now = self._clock.time()

        def restart(s: Session) -> list[str]:
            again = []
            for run in run_rows.live_runs(s):
                task = task_rows.get_task(s, run.task_id) if run.task_id else None
                if task is None or not task.plan:
                    continue
                run_rows.end_run(s, run.id, outcome="interrupted", now=now, error=RESTARTED)
                if not task.ended_at:
                    _open_run(s, task, "recover", now)
                    again.append(task.id)
            return again

        for task_id in await self._db.write(restart):
            self._spawn(task_id)

    async def shutdown(self) -> None:
        for work in list(self._work):
            work.cancel()
        for work in list(self._work):
            with contextlib.suppress(asyncio.CancelledError):
                await work

    def launched(self, task_id: str) -> None:
        """A planned task was made (its run is open): plan it."""
        self._spawn(task_id)

    def _spawn(self, task_id: str) -> None:
        work = asyncio.get_running_loop().create_task(self.advance(task_id), name=f"plan-{task_id}")
        self._work.add(work)
        work.add_done_callback(self._work.discard)

    # ---- what the rest of the task service tells it ---------------------------------------------------

    async def subtask_ended(self, subtask: TaskRecord) -> None:
        """A subtask's run ended (its end is never pushed): the plan goes on."""
        if subtask.parent_id:
            # Spawned: the merge is a model turn, which the ending subtask's run must not wait for.
            self._spawn(subtask.parent_id)

    async def follow_up(self, task: TaskRecord, text: str, cause: RunCause) -> str:
        """A person's words for a planned task: steered into its working subtasks, or the plan goes on
        with them (unfinished subtasks resume with them; a finished plan is planned further)."""
        state = PlanState.loads(task.plan)
        parts = await self._parts(task, state)
        working = [p for p in parts if p.live and p.task is not None]
        if working:
            for part in working:
                assert part.task is not None
                await self._give(part.task, text)
            self._runner.poke()
            return "steered"
        now = self._clock.time()
        # Only those that ran take the words now; the others get them with their brief, in order.
        unfinished = [p for p in parts if p.task is not None and p.runs and not p.finished]

        def reopen(s: Session) -> None:
            current = task_rows.get_task(s, task.id)
            if current is None:
                return
            if not any(r.state != "ended" for r in run_rows.runs_of_task(s, task.id)):
                _open_run(s, current, cause, now)
            task_rows.update_task(s, task.id, now=now, ended_at=0, end_reason="", last_used_at=now)
            if current.acceptance and cause == "followup":
                # A person going on gives the goal its rounds afresh (docs/goals.md#rounds).
                goal = restarted(GoalState.loads(current.goal), now)
                task_rows.update_task(s, task.id, now=now, goal=goal.dumps())
            if unfinished:
                # The plan is kept: what did not finish goes on with the person's words.
                task_rows.update_task(s, task.id, now=now, plan=state.with_(phase="running").dumps())
                for part in unfinished:
                    assert part.task is not None
                    _add_input(s, part.task.id, text, now, kind="followup")
            else:
                task_rows.update_task(
                    s, task.id, now=now, plan=state.with_(phase="planning", note=text).dumps()
                )

        await self._db.write(reopen)
        self._bus.publish(TaskChanged(task.id))
        self._spawn(task.id)
        return "resumed"

    async def stop(self, task: TaskRecord) -> list[str]:
        """The subtasks of a planned task a person stopped: the caller stops each."""
        children = await self._db.read(lambda s: task_rows.subtasks_of(s, task.id))
        return [c.id for c in children if not c.ended_at]

    # ---- the plan going on ----------------------------------------------------------------------------

    async def advance(self, task_id: str) -> None:
        """One look at the planned task, under its lock: plan, start what may start, merge, or end."""
        lock = self._locks.setdefault(task_id, asyncio.Lock())
        async with lock:
            try:
                await self._advance(task_id)
            except Exception:
                log.exception("planned task %s could not go on", task_id)
                await self._end(task_id, "failed", error="the plan could not go on (see the log)")

    async def _advance(self, task_id: str) -> None:
        task = await self._db.read(lambda s: task_rows.get_task(s, task_id))
        if task is None or task.ended_at or not task.plan or await self._own_run(task) is None:
            return
        state = PlanState.loads(task.plan)
        if state.phase == "planning" or state.plan is None:
            plan = await self._make_plan(task, state)
            if plan is None:
                return
            adopted = await self._adopt(task, state, plan)
            if adopted is None:
                return
            state = adopted
        if state.phase == "ended":
            return
        parts = await self._parts(task, state)
        # A subtask stopped at the budget leaves the planned task's spend at it too (they share it).
        if self._over_budget(task):
            await self._at_budget(task, parts)
            return
        if state.phase == "running" and not all(p.finished for p in parts):
            await self._start_ready(task, state, parts)
            return
        await self._merge(task, state, parts)

    async def _own_run(self, task: TaskRecord) -> RunRecord | None:
        runs = await self._db.read(lambda s: run_rows.runs_of_task(s, task.id))
        return next((r for r in runs if r.state != "ended"), None)

    def _over_budget(self, task: TaskRecord) -> bool:
        return reached_budget(task.spent_usd, task.budget_usd)

    async def _make_plan(self, task: TaskRecord, state: PlanState) -> Plan | None:
        brief = await self._db.read(lambda s: input_rows.inputs_of_task(s, task.id))
        words = next((i.text for i in brief if i.kind == "brief"), task.brief)
        earlier = [_result(p) for p in await self._parts(task, state) if p.task is not None]
        prompt = planner_prompt(words, "", earlier, state.note)
        error = ""
        for attempt in range(PLAN_ATTEMPTS):
            try:
                answer = await self._ask(
                    task,
                    planner_instructions(task.title),
                    prompt + (RETRY_NOTE.format(error=error) if attempt else ""),
                )
            except ModelCallError as exc:
                await self._end(task.id, "failed", error=f"the planner could not be asked: {exc.message}")
                return None
            try:
                return parse_plan(answer)
            except PlanError as exc:
                error = str(exc)
                log.info("task %s: plan attempt %d refused: %s", task.id, attempt + 1, error)
        await self._end(task.id, "failed", error=f"the planner gave no usable plan twice: {error}")
        return None

    async def _adopt(self, task: TaskRecord, state: PlanState, plan: Plan) -> PlanState | None:
        """Keep the plan and make its subtasks' tasks, in one transaction: a restart finds both or
        neither. None when the task was stopped meanwhile."""
        now = self._clock.time()
        taken = set(state.children)
        renamed = {s.id: _free_id(s.id, taken) for s in plan.subtasks}
        subtasks = tuple(
            Subtask(renamed[s.id], s.title, s.brief, tuple(renamed[d] for d in s.depends_on), s.deliverables)
            for s in plan.subtasks
        )
        earlier = state.plan.subtasks if state.plan is not None and state.children else ()
        merged = Plan((*earlier, *subtasks))
        children = dict(state.children)
        for sub in subtasks:
            children[sub.id] = new_id("t")
        adopted = PlanState("running", merged, children)

        def make(s: Session) -> bool:
            current = task_rows.get_task(s, task.id)
            if current is None or current.ended_at:
                return False  # stopped while the planner thought: nothing is made
            for sub in subtasks:
                child = children[sub.id]
                folder = subtask_folder(Path(task.folder), sub.title, child)
                folder.joinpath(".task").mkdir(parents=True, exist_ok=True)
                task_rows.insert_task(
                    s,
                    id=child,
                    bot_id=task.bot_id,
                    conversation_id=task.conversation_id,
                    title=sub.title[:80],
                    brief=sub.brief[:1500],
                    session_id=task_session_id(child),
                    folder=str(folder),
                    permission=task.permission,
                    budget_usd=task.budget_usd,
                    now=now,
                    parent_id=task.id,
                )
            task_rows.update_task(s, task.id, now=now, plan=adopted.dumps())
            return True

        if not await self._db.write(make):
            return None
        self._bus.publish(TaskChanged(task.id))
        return adopted

    async def _parts(self, task: TaskRecord, state: PlanState) -> list[Part]:
        if state.plan is None:
            return []
        plan = state.plan

        def read(s: Session) -> list[Part]:
            parts = []
            for sub in plan.subtasks:
                child_id = state.children.get(sub.id, "")
                child = task_rows.get_task(s, child_id) if child_id else None
                runs = tuple(run_rows.runs_of_task(s, child_id)) if child_id else ()
                parts.append(Part(sub, child, runs))
            return parts

        return await self._db.read(read)

    async def _start_ready(self, task: TaskRecord, state: PlanState, parts: list[Part]) -> None:
        assert state.plan is not None
        by_id = {p.subtask.id: p for p in parts}
        finished = {p.subtask.id for p in parts if p.finished}
        working = sum(1 for p in parts if p.live)
        # A subtask whose last run ended without finishing (failed, or asked and waits) holds its
        # dependents back; with nothing working and nothing startable, the plan cannot finish.
        waiting = [p for p in parts if p.runs and not p.live and not p.finished]
        startable = [
            p for p in parts if not p.runs and set(p.subtask.depends_on) <= finished and p.task is not None
        ]
        # Resumed ones (a follow-up, a raised budget) have untaken inputs and no live run.
        resumable = await self._resumable(waiting)
        room = max(0, self._max_parallel - working)
        chosen = [*resumable, *startable][:room]
        if not chosen:
            if working == 0 and not any(p.outcome == "needs_you" for p in waiting):
                failed = [p for p in waiting if p.outcome != "needs_you"]
                await self._fail(task, state, parts, failed)
            return
        now = self._clock.time()
        words = await self._words(task)

        def start(s: Session) -> None:
            for part in chosen:
                assert part.task is not None
                if not part.runs:
                    before = [_result(by_id[d]) for d in part.subtask.depends_on]
                    _add_input(s, part.task.id, subtask_brief(task.title, words, part.subtask, before), now)
                run_rows.insert_run(
                    s,
                    id=new_id("r"),
                    bot_id=part.task.bot_id,
                    session_id=part.task.session_id,
                    cause="launch" if not part.runs else "continue",
                    now=now,
                    task_id=part.task.id,
                )
                task_rows.update_task(s, part.task.id, now=now, ended_at=0, end_reason="")

        await self._db.write(start)
        self._runner.poke()
        self._bus.publish(TaskChanged(task.id))

    async def _resumable(self, waiting: list[Part]) -> list[Part]:
        ids = [p.task.id for p in waiting if p.task is not None]
        pending = await self._db.read(lambda s: {t: input_rows.untaken_inputs(s, t) for t in ids})
        return [p for p in waiting if p.task is not None and pending.get(p.task.id)]

    async def _words(self, task: TaskRecord) -> str:
        inputs = await self._db.read(lambda s: input_rows.inputs_of_task(s, task.id))
        return next((i.text for i in inputs if i.kind == "brief"), task.brief)

    async def _fail(self, task: TaskRecord, state: PlanState, parts: list[Part], failed: list[Part]) -> None:
        names = ", ".join(f"「{p.subtask.title}」" for p in failed) or "some subtasks"
        reason = next((p.runs[-1].error for p in failed if p.runs and p.runs[-1].error), "")
        error = f"subtask {names} did not finish" + (f": {reason}" if reason else "")
        merged = plain_merge([_result(p) for p in parts])
        await self._end(task.id, "failed", error=error, report=Report("failed", merged.summary, error[:300]))

    async def _at_budget(self, task: TaskRecord, parts: list[Part]) -> None:
        """At the budget no subtask starts, the working ones stop, and what finished is merged without a
        model turn; the budget question is asked as for any task (docs/cost.md#task-budget)."""
        for part in parts:
            if part.live and part.task is not None:
                run_id = self._runner.active_run(part.task.id)
                if run_id is not None:
                    await self._runner.stop_at_budget(run_id)
        now = self._clock.time()

        def end_queued(s: Session) -> None:
            for part in parts:
                for run in run_rows.runs_of_task(s, part.task.id if part.task else ""):
                    if run.state == "queued":
                        run_rows.end_run(s, run.id, outcome="budget", now=now)

        await self._db.write(end_queued)
        merged = plain_merge([_result(p) for p in await self._parts(task, PlanState.loads(task.plan))])
        await self._end(task.id, "budget", report=Report("progress", merged.summary, merged.message))

    async def _merge(self, task: TaskRecord, state: PlanState, parts: list[Part]) -> None:
        now = self._clock.time()
        await self._db.write(
            lambda s: task_rows.update_task(s, task.id, now=now, plan=state.with_(phase="merging").dumps())
        )
        results = [_result(p) for p in parts]
        words = await self._words(task)
        merged: Merged | None = None
        error = ""
        for attempt in range(PLAN_ATTEMPTS):
            try:
                answer = await self._ask(
                    task,
                    merger_instructions(task.title),
                    merger_prompt(words, results) + (RETRY_NOTE.format(error=error) if attempt else ""),
                )
            except ModelCallError as exc:
                log.info("task %s: the merge could not be asked (%s); the parts' own words go", task.id, exc)
                break
            try:
                merged = parse_merge(answer)
                break
            except MergeError as exc:
                error = str(exc)
        if merged is None:
            merged = plain_merge(results)
        files = tuple(f for r in results for f in (str(Path(r.folder) / name) for name in r.files))
        report = Report("done", merged.summary, merged.message, files=files[:20])
        if task.acceptance and not await self._goal_met(task, state, report):
            return
        await self._end(task.id, "done", report=report)

    async def _goal_met(self, task: TaskRecord, state: PlanState, report: Report) -> bool:
        """A planned goal task's merged result is a claim too (docs/goals.md#planned-goals): every criterion
        is checked in the planned task's folder. Not met, the next planning round is told what failed; at
        a limit, the task fails with the reason. True only when the goal is met."""
        criteria = criteria_of(task)
        place = await self._check_place(task)

        async def ask(instructions: str, prompt: str) -> str:
            return await self._ask(task, instructions, prompt)

        try:
            result = await judge_round(
                task, criteria, report, place, self._clock, ask=ask, limits=RoundLimits()
            )
        except ModelCallError as exc:
            why = StopReason("judge", {"error": exc.message})
            await self._save_goal(task, replace(GoalState.loads(task.goal), stopped=why.words("en")))
            await self._end(
                task.id, "failed", error=why.words("en"), words=why.in_each_language(), report=report
            )
            return False
        await self._save_goal(task, result.state)
        if result.decision == "met":
            return True
        if result.stop is not None:
            why = result.stop
            await self._end(
                task.id, "failed", error=why.words("en"), words=why.in_each_language(), report=report
            )
            return False
        note = round_feedback(result.state.round, RoundLimits().max_rounds, criteria, result.verdicts)
        now = self._clock.time()
        planning = state.with_(phase="planning", note=note)
        await self._db.write(lambda s: task_rows.update_task(s, task.id, now=now, plan=planning.dumps()))
        self._bus.publish(TaskChanged(task.id))
        self._spawn(task.id)
        return False

    async def _save_goal(self, task: TaskRecord, goal: GoalState) -> None:
        now = self._clock.time()
        await self._db.write(lambda s: task_rows.update_task(s, task.id, now=now, goal=goal.dumps()))

    async def _check_place(self, task: TaskRecord) -> CheckPlace:
        """Where the host's checks of a planned task run: its folder, under the shell sandbox and guard its
        subtasks have."""
        runtime = self._sessions()
        assert runtime is not None
        permission = await self._bots.permission(task.bot_id, preset=task.permission)
        model = await self._bots.model_config(task.bot_id)
        spec = SessionSpec(task.session_id, "task", task.bot_id, Path(task.folder), model, permission)
        sandbox = runtime.shell_sandbox(spec)
        return CheckPlace(Path(task.folder), sandbox, runtime.guard, runtime.path_guard(permission))

    # ---- model turns and the end ---------------------------------------------------------------------

    async def _ask(self, task: TaskRecord, instructions: str, prompt: str) -> str:
        """One model turn with no tools on the task's bot; its price counts against the task."""
        runtime = self._sessions()
        if runtime is None:
            raise ModelCallError("the agent runtime is not running", transient=True)
        config = await self._bots.model_config(task.bot_id)
        request = ModelRequest(parts=(UserText(prompt),), instructions=instructions)
        answer = await runtime.model_client(config).request(
            [request], [], on_text=lambda _: None, clock=self._clock, retry=TASK_RETRY
        )
        used = answer.usage
        usage = Usage(used.input_tokens, used.output_tokens, used.cache_read_tokens)
        cost = RunCost()
        cost.add(
            self._meter.price(
                answer.model_name or config.model, config.base_url, usage, configured=config.model
            )
        )
        now = self._clock.time()

        def count(s: Session) -> None:
            current = task_rows.get_task(s, task.id)
            run = next((r for r in run_rows.runs_of_task(s, task.id) if r.state != "ended"), None)
            if current is None:
                return
            task_rows.update_task(
                s,
                task.id,
                now=now,
                spent_usd=current.spent_usd + cost.usd,
                spent_other=add_amounts(current.spent_other, cost.other),
                unpriced_calls=current.unpriced_calls + cost.unpriced_calls,
            )
            if run is not None:
                run_rows.update_run(
                    s,
                    run.id,
                    cost_usd=run.cost_usd + cost.usd,
                    cost_other=add_amounts(run.cost_other, cost.other),
                    unpriced_calls=run.unpriced_calls + cost.unpriced_calls,
                    tokens_in=run.tokens_in + usage.input_tokens,
                    tokens_out=run.tokens_out + usage.output_tokens,
                )

        await self._db.write(count)
        return answer.text or ""

    async def _end(
        self,
        task_id: str,
        outcome: RunOutcome,
        *,
        error: str = "",
        report: Report | None = None,
        words: dict[str, str] | None = None,
    ) -> None:
        """End the planned task's own run: the one end that owes the conversation a push."""
        now = self._clock.time()
        report_json = json.dumps(report.to_json(), ensure_ascii=False) if report else None

        def end(s: Session) -> TaskRecord | None:
            task = task_rows.get_task(s, task_id)
            run = next((r for r in run_rows.runs_of_task(s, task_id) if r.state != "ended"), None)
            if task is None or run is None:
                return None
            ended = run_rows.end_run(
                s, run.id, outcome=outcome, now=now, error=error, report=report_json, error_words=words
            )
            state = PlanState.loads(task.plan).with_(phase="ended")
            task_rows.update_task(s, task_id, now=now, plan=state.dumps(), last_used_at=now)
            if report_json is not None:
                task_rows.update_task(s, task_id, now=now, report=report_json)
            if outcome == "done":
                task_rows.update_task(s, task_id, now=now, ended_at=now, end_reason="done")
            current = task_rows.get_task(s, task_id)
            assert current is not None
            said = ended.error_in(language_of(current.brief))
            self._push.stage_pushes(s, dataclasses.replace(ended, error=said), current, report)
            return current

        task = await self._db.write(end)
        if task is None:
            return
        run = await self._db.read(lambda s: run_rows.latest_run(s, task_id))
        if run is not None:
            await self._push.run_finished(run, task, report)
        self._bus.publish(TaskChanged(task_id))

    async def _give(self, child: TaskRecord, text: str) -> None:
        """A person's words for a working subtask: in its inputs, handed over at its next step."""
        now = self._clock.time()
        active = self._runner.active_run(child.id)

        def add(s: Session) -> None:
            input_id = _add_input(s, child.id, text, now, kind="followup")
            if active is not None:
                input_rows.mark_delivered(s, input_id, run_id=active, now=now)

        await self._db.write(add)
        if active is not None:
            await self._runner.hand_over(active)


def _open_run(s: Session, task: TaskRecord, cause: RunCause, now: float) -> None:
    run = run_rows.insert_run(
        s,
        id=new_id("r"),
        bot_id=task.bot_id,
        session_id=task.session_id,
        cause=cause,
        now=now,
        task_id=task.id,
    )
    run_rows.set_run_state(s, run.id, "running", now=now)


def _add_input(s: Session, task_id: str, text: str, now: float, *, kind: str = "brief") -> str:
    input_id = new_id("i")
    input_rows.insert_input(
        s, id=input_id, kind="brief" if kind == "brief" else "followup", text=text, now=now, task_id=task_id
    )
    return input_id


def _free_id(wanted: str, taken: set[str]) -> str:
    ident, n = wanted, 2
    while ident in taken:
        ident, n = f"{wanted[:36]}-{n}", n + 1
    taken.add(ident)
    return ident


def _result(part: Part) -> PartResult:
    task = part.task
    report = Report.from_json(json.loads(task.report)) if task is not None and task.report else None
    outcome = part.outcome or ("working" if part.live else "not run")
    return PartResult(
        title=part.subtask.title,
        outcome=outcome,
        message=report.message if report else "",
        summary=report.summary if report else "",
        folder=task.folder if task is not None else "",
        files=report.files if report else (),
    )
