"""A goal task's rounds as its runs live them (docs/goals.md#rounds): the agent's done is a claim the host
checks before the run ends on it.

When a task with acceptance criteria reports done, every criterion is checked (core.goals.review) and the
round is decided (core.goals.rounds): all passed, the run ends done; some failed and no limit is reached,
the same run goes on with what failed as its next input, with no push between rounds; a limit is reached,
the run fails with the reason. The state is written to the task before the run goes on or ends, so a
restart counts the rounds it had.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy.orm import Session

from core.agent.events import Usage
from core.agent.messages import ModelRequest, UserText
from core.agent.model_client import ModelCallError
from core.bus import EventBus
from core.changes import TaskChanged
from core.clock import Clock
from core.goals.acceptance import Criterion, parse_acceptance
from core.goals.progress import folder_fingerprint
from core.goals.review import AskJudge, CheckPlace, review_round
from core.goals.rounds import GoalState, RoundLimits, RoundResult, StopReason, next_round
from core.goals.words import round_feedback
from core.ids import new_id
from core.store import run_inputs as input_rows
from core.store import tasks as task_rows
from core.store.database import Database
from core.store.tasks import TaskRecord
from core.tasks.report import Report

if TYPE_CHECKING:
    from core.agent.runtime import AgentRuntime
    from core.tasks.runner import TaskRun

    CountUsage = Callable[[TaskRun, str, Usage], None]  # the run, the model, what it used

log = logging.getLogger(__name__)


def criteria_of(task: TaskRecord) -> tuple[Criterion, ...]:
    """The task's stored criteria; none for a task without a goal."""
    return parse_acceptance(json.loads(task.acceptance)) if task.acceptance else ()


def goal_detail(task: TaskRecord, limits: RoundLimits | None = None) -> dict[str, Any] | None:
    """What GET /api/tasks/{id} shows of a goal task: the round count and each criterion with its last
    verdict and where it came from; None for a task without a goal."""
    criteria = criteria_of(task)
    if not criteria:
        return None
    state = GoalState.loads(task.goal)
    verdicts = state.verdicts
    return {
        "round": state.round,
        "maxRounds": (limits or RoundLimits()).max_rounds,
        "met": state.met,
        "stopped": state.stopped,
        "criteria": [
            {
                **c.to_json(),
                "verdict": None
                if i >= len(verdicts) or (v := verdicts[i]) is None
                else {"passed": v.passed, "source": v.source, "detail": v.detail},
            }
            for i, c in enumerate(criteria)
        ],
    }


async def judge_round(
    task: TaskRecord,
    criteria: tuple[Criterion, ...],
    report: Report,
    place: CheckPlace,
    clock: Clock,
    *,
    ask: AskJudge,
    limits: RoundLimits,
) -> RoundResult:
    """Check every criterion against the task's folder and `report`, and decide the round (nothing saved).
    ModelCallError when the judge cannot be asked."""
    verdicts = await review_round(criteria, report, place, clock, title=task.title, ask=ask)
    fingerprint = await asyncio.to_thread(folder_fingerprint, Path(task.folder))
    return next_round(
        GoalState.loads(task.goal),
        verdicts,
        fingerprint,
        now=clock.time(),
        created_at=task.created_at,
        machine_checks=any(c.check is not None for c in criteria),
        limits=limits,
    )


@dataclass
class GoalRounds:
    db: Database
    bus: EventBus
    clock: Clock
    runtime: Callable[[], AgentRuntime | None]
    count_usage: CountUsage
    limits: RoundLimits = field(default_factory=RoundLimits)

    async def review(self, run: TaskRun) -> bool:
        """True when the run goes on with another round; False when it ends (met, or `work.goal_stop` says
        why not), or when there is nothing to check."""
        report = run.report
        runtime = self.runtime()
        if report is None or report.state != "done" or run.stopping or runtime is None:
            return False
        task = await self.db.read(lambda s: task_rows.get_task(s, run.work.task_id))
        if task is None or not task.acceptance:
            return False
        criteria = criteria_of(task)
        spec = run.session.spec
        folder = Path(task.folder)
        place = CheckPlace(
            folder, runtime.shell_sandbox(spec), runtime.guard, runtime.path_guard(spec.permission)
        )

        async def ask(instructions: str, prompt: str) -> str:
            client = runtime.model_client(spec.model)
            request = ModelRequest(parts=(UserText(prompt),), instructions=instructions)
            answer = await client.request(
                [request], [], on_text=lambda _: None, clock=self.clock, retry=spec.retry
            )
            used = answer.usage
            usage = Usage(used.input_tokens, used.output_tokens, used.cache_read_tokens)
            self.count_usage(run, answer.model_name or spec.model.model, usage)
            return answer.text or ""

        before = GoalState.loads(task.goal)
        try:
            result = await judge_round(task, criteria, report, place, self.clock, ask=ask, limits=self.limits)
        except ModelCallError as exc:
            why = StopReason("judge", {"error": exc.message})
            stopped = replace(before, stopped=why.words("en"))
            await self.db.write(lambda s: self._save(s, task.id, stopped))
            self._stop(run, why)
            return False
        log.info("task %s goal round %d: %s", task.id, result.state.round, result.decision)
        if result.decision == "again":
            await self._next_round(run, task, criteria, result)
            return True
        await self.db.write(lambda s: self._save(s, task.id, result.state))
        self.bus.publish(TaskChanged(task.id))
        if result.stop is not None:
            self._stop(run, result.stop)
        return False

    def _stop(self, run: TaskRun, why: StopReason) -> None:
        run.work.goal_stop = why.words("en")
        run.work.goal_stop_words = why.in_each_language()

    def _save(self, s: Session, task_id: str, state: GoalState) -> None:
        task_rows.update_task(s, task_id, now=self.clock.time(), goal=state.dumps())

    async def _next_round(
        self, run: TaskRun, task: TaskRecord, criteria: tuple[Criterion, ...], result: RoundResult
    ) -> None:
        text = round_feedback(result.state.round, self.limits.max_rounds, criteria, result.verdicts)
        input_id = new_id("i")
        now = self.clock.time()

        def add(s: Session) -> None:
            # The round's state and the input that starts the next one commit together: a restart neither
            # repeats the round's count nor loses what failed.
            self._save(s, task.id, result.state)
            input_rows.insert_input(s, id=input_id, kind="note", text=text, now=now, task_id=task.id)
            input_rows.mark_delivered(s, input_id, run_id=run.run_id, now=now)

        await self.db.write(add)
        run.report = None
        run.nudged = False
        run.session.steer(text, input_id)
        self.bus.publish(TaskChanged(task.id))
