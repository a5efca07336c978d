"""A task's state as stored, and the facts the stage function needs, read in one database call."""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from sqlalchemy.orm import Session

from core.store import approvals as approval_rows
from core.store import deliveries as delivery_rows
from core.store import run_inputs as input_rows
from core.store import runs as run_rows
from core.store.approvals import ApprovalRecord
from core.store.deliveries import DeliveryRecord
from core.store.run_inputs import RunInputRecord
from core.store.runs import RunRecord
from core.store.tasks import TaskRecord
from core.tasks.report import Report
from core.tasks.stage import Stage, StageFacts, task_stage
from core.tasks.views import TaskView

DELIVERY_ATTEMPTS = 3
# Held because only the person can open the way (docs/task-stages.md#the-stage-table, row 2). Quiet hours,
# caps and a question waiting its turn resolve by themselves, so they do not make a task "not delivered".
NEEDS_PERSON_HOLDS = frozenset({"window_closed", "quota", "channel_down"})


@dataclass(frozen=True, slots=True)
class TaskState:
    task: TaskRecord
    runs: list[RunRecord]
    inputs: list[RunInputRecord]
    deliveries: list[DeliveryRecord]
    report: Report | None
    stage: Stage

    def latest_line(self, lang: str = "en") -> str:
        """The first line of what the task last said (docs/task-stages.md#latest-progress); a failure's
        reason in `lang` when its words are known."""
        ended = [r for r in self.runs if r.state == "ended"]
        if ended and ended[-1].outcome == "failed" and ended[-1].error:
            text = ended[-1].error_in(lang)
        elif self.report is not None:
            text = self.report.message or self.report.summary
        else:
            text = ""
        return (text.strip().splitlines() or [""])[0][:200]

    def view(self, lang: str, *, model_priced: bool | None = None) -> TaskView:
        """`model_priced`: whether the model of its working run has a price (None: not known)."""
        return TaskView(
            id=self.task.id,
            bot_id=self.task.bot_id,
            conversation_id=self.task.conversation_id,
            title=self.task.title,
            stage=self.stage.key,
            stage_label=self.stage.label(lang),
            group=self.stage.group,
            latest_line=self.latest_line(lang),
            created_at=self.task.created_at,
            updated_at=self.task.updated_at,
            tokens_in=sum(r.tokens_in for r in self.runs),
            tokens_out=sum(r.tokens_out for r in self.runs),
            spent_usd=self.task.spent_usd,
            budget_usd=self.task.budget_usd,
            spent_other=self.task.spent_other,
            unpriced_calls=self.task.unpriced_calls,
            model_priced=model_priced,
        )


def load_state(s: Session, task: TaskRecord, *, active: bool) -> TaskState:
    return state_of(
        task,
        run_rows.runs_of_task(s, task.id),
        input_rows.inputs_of_task(s, task.id),
        delivery_rows.deliveries_of_task(s, task.id),
        approval_rows.open_approvals(s, task_id=task.id),
        active=active,
    )


def load_states(s: Session, tasks: Sequence[TaskRecord], *, active: Collection[str]) -> list[TaskState]:
    """`load_state` for many tasks in a few queries; `active` holds the ids of tasks with a live run."""
    ids = [task.id for task in tasks]
    runs = run_rows.runs_of_tasks(s, ids)
    inputs = input_rows.inputs_of_tasks(s, ids)
    deliveries = delivery_rows.deliveries_of_tasks(s, ids)
    waiting: dict[str, list[ApprovalRecord]] = {}
    for item in approval_rows.open_approvals(s):
        waiting.setdefault(item.task_id, []).append(item)
    return [
        state_of(
            task,
            runs.get(task.id, []),
            inputs.get(task.id, []),
            deliveries.get(task.id, []),
            waiting.get(task.id, []),
            active=task.id in active,
        )
        for task in tasks
    ]


def state_of(
    task: TaskRecord,
    runs: list[RunRecord],
    inputs: list[RunInputRecord],
    deliveries: list[DeliveryRecord],
    waiting: list[ApprovalRecord],
    *,
    active: bool,
) -> TaskState:
    """The task's state from its rows (pure: the stage function decides)."""
    latest_said = Report.from_json(json.loads(task.report)) if task.report else None
    ended = [r for r in runs if r.state == "ended"]
    last = ended[-1] if ended else None
    # The stage follows the Report of the latest *ended* run: a run that reported done is not ready
    # until it has finished (its result is delivered as it ends). The latest line shows it at once.
    with_report = [r for r in ended if r.report]
    report = Report.from_json(json.loads(with_report[-1].report)) if with_report else None
    since = last.ended_at if last else 0.0
    person_since = any(i.from_person and i.created_at > since for i in inputs) if last else False
    latest_delivery = max(deliveries, key=lambda d: d.created_at, default=None)
    questions = [a for a in waiting if a.kind == "question"]
    approvals = [a for a in waiting if a.kind == "approval"]
    blocking = [q for q in questions if q.default is None]
    run_active = active or any(r.state in ("running", "settling") for r in runs)
    facts = StageFacts(
        stopped=task.end_reason == "stopped",
        undelivered=latest_delivery is not None
        and (
            (latest_delivery.status == "held" and latest_delivery.held_reason in NEEDS_PERSON_HOLDS)
            or (latest_delivery.status == "pending" and latest_delivery.attempts >= DELIVERY_ATTEMPTS)
        ),
        # An open question without a default blocks even while the run finishes independent work (row 3).
        awaiting_answer=bool(blocking or approvals),
        awaiting_approval=bool(approvals) and not blocking,
        budget_stopped=last is not None and last.outcome == "budget" and not person_since,
        latest_report_state=report.state if report else None,
        launch_failed=last is not None
        and last.outcome == "failed"
        and (report is None or report.state != "failed"),
        person_input_since_report=person_since,
        run_active=run_active,
        inputs_waiting=any(r.state == "queued" for r in runs) or any(not i.taken_at for i in inputs),
        question_with_default_open=run_active and any(q.default is not None for q in questions),
    )
    return TaskState(task, runs, inputs, deliveries, latest_said, task_stage(facts))
