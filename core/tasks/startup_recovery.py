"""Restart recovery (docs/runs.md): the runs a crash or a quit left running are ended `interrupted` (or
`needs_you` when they had asked without a default), and each task that should go on gets a recovery note
and a new run, oldest task first. Approvals that waited before the restart are expired once recovery has
seen them (the calls that waited are gone with their turns)."""

from __future__ import annotations

import logging
from typing import Protocol

from sqlalchemy.orm import Session

from core.clock import Clock
from core.ids import new_id
from core.store import approvals as approval_rows
from core.store import run_inputs as input_rows
from core.store import runs as run_rows
from core.store import tasks as task_rows
from core.store.database import Database
from core.tasks.recovery import LiveRun, PendingInput, TaskFacts, plan_recovery
from core.tasks.runner import task_session_id
from core.tasks.stage_facts import load_state

log = logging.getLogger(__name__)


class StaleApprovals(Protocol):
    """Expires approvals a restart left open (the ApprovalCenter)."""

    async def expire_all_open(self) -> object: ...


class StartupRecovery:
    def __init__(self, db: Database, clock: Clock, approvals: StaleApprovals) -> None:
        self._db = db
        self._clock = clock
        self._approvals = approvals

    async def recover(self) -> None:
        now = self._clock.time()

        def gather(
            s: Session,
        ) -> tuple[list[LiveRun], list[TaskFacts], list[PendingInput], dict[str, list[str]]]:
            live = [r for r in run_rows.live_runs(s) if r.task_id and r.state in ("running", "settling")]
            runs, facts, inputs, jobs = [], [], [], {}
            for run in live:
                task = task_rows.get_task(s, run.task_id)
                if task is None or task.plan:
                    continue  # a planned task's own run is recovered by core.tasks.planned
                state = load_state(s, task, active=True)
                report = state.report
                runs.append(
                    LiveRun(
                        run.id,
                        task.id,
                        task.bot_id,
                        run.state,
                        run.queued_at,
                        task.created_at,
                        asked_question_without_default=bool(
                            report
                            and report.state == "needs_you"
                            and report.question
                            and report.question.default is None
                        ),
                    )
                )
                blocked = any(a.kind == "approval" for a in approval_rows.open_approvals(s, task_id=task.id))
                facts.append(
                    TaskFacts(
                        task.id, task.created_at, state.stage.key, blocked, task.end_reason == "stopped"
                    )
                )
                inputs += [
                    PendingInput(i.id, task.id, i.kind, bool(i.taken_at), i.created_at)
                    for i in input_rows.inputs_of_task(s, task.id)
                ]
                jobs[task.id] = _unfinished_jobs(run.activity)
            return runs, facts, inputs, jobs

        runs, facts, inputs, jobs = await self._db.read(gather)
        await self._approvals.expire_all_open()
        if not runs:
            return
        plan = plan_recovery(runs, facts, inputs, jobs)
        by_task = {r.task_id: r for r in runs}

        def apply(s: Session) -> None:
            for run_id in plan.interrupted:
                run_rows.end_run(s, run_id, outcome="interrupted", now=now, error="Errand restarted")
            for run_id in plan.needs_you:
                run_rows.end_run(s, run_id, outcome="needs_you", now=now)
            for task_id, note in plan.notes.items():
                if task_id not in plan.recover:
                    # A run that had asked and ends needs_you keeps its note; it goes in with the answer.
                    input_rows.insert_input(
                        s, id=new_id("i"), kind="recovery", text=note, now=now, task_id=task_id
                    )
            for order, task_id in enumerate(plan.recover):
                at = now + order * 1e-6  # oldest task first, kept by queued_at
                input_rows.insert_input(
                    s, id=new_id("i"), kind="recovery", text=plan.notes[task_id], now=at, task_id=task_id
                )
                run_rows.insert_run(
                    s,
                    id=new_id("r"),
                    bot_id=by_task[task_id].bot_id,
                    session_id=task_session_id(task_id),
                    cause="recover",
                    now=at,
                    task_id=task_id,
                )

        await self._db.write(apply)
        log.info("recovery: %d interrupted, %d recovered", len(plan.interrupted), len(plan.recover))


def _unfinished_jobs(activity: list[dict[str, object]]) -> list[str]:
    """Commands of jobs the run started and never saw end, from its stored steps."""
    started: dict[str, str] = {}
    for step in activity:
        title = str(step.get("title", ""))
        if step.get("kind") != "job" or not title.startswith("job "):
            continue
        job_id, _, rest = title[4:].partition(" ")
        job_id = job_id.rstrip(":")
        if rest.startswith(("completed", "failed", "killed")):
            started.pop(job_id, None)
        else:
            started[job_id] = rest
    return list(started.values())
