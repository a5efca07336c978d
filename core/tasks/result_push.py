"""What a task's run owes its conversation (docs/task-stages.md push rules): the result, the failure or the
budget question, staged in the very transaction that ends the run so a crash never loses or repeats one; and
the note to the chat session once a result reached the person."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from sqlalchemy.orm import Session

from core import translations
from core.bus import EventBus
from core.changes import TaskChanged
from core.delivery.outbox import Outbox
from core.goals.rounds import GoalState
from core.goals.words import verdict_summary
from core.store import tasks as task_rows
from core.store.database import Database
from core.store.deliveries import DeliveryPurpose, DeliveryRecord
from core.store.runs import RunRecord
from core.store.tasks import TaskRecord
from core.tasks.goal_rounds import criteria_of
from core.tasks.language import Language, language_of, pushed
from core.tasks.report import Report

if TYPE_CHECKING:
    from core.agent.runtime import AgentRuntime


def goal_summary(lang: Language, task: TaskRecord, outcome: str) -> str:
    """A goal task's criteria with their last verdicts, for its one pushed result or failure
    (docs/goals.md#what-is-said); '' for a task without a goal or before its first check."""
    if not task.acceptance:
        return ""
    state = GoalState.loads(task.goal)
    if state.round == 0:
        return ""
    criteria = criteria_of(task)
    heading = (
        translations.text(lang, "goal.met", count=str(len(criteria)))
        if outcome == "done" and state.met
        else translations.text(lang, "goal.last_checked", round=str(state.round))
    )
    return f"{heading} {verdict_summary(lang, criteria, state.verdicts)}"


class ResultPush:
    def __init__(
        self, db: Database, bus: EventBus, outbox: Outbox, *, sessions: Callable[[], AgentRuntime | None]
    ) -> None:
        self._db = db
        self._bus = bus
        self._outbox = outbox
        self._sessions = sessions
        outbox.on_delivered(self.tell_chat)
        # A planned task's subtask ends quietly: its planned task is told instead (core.tasks.planned).
        self.on_subtask_end: Callable[[TaskRecord], Awaitable[None]] | None = None

    @property
    def _runtime(self) -> AgentRuntime | None:
        return self._sessions()

    def stage_pushes(self, s: Session, run: RunRecord, task: TaskRecord, report: Report | None) -> None:
        """What a run's end owes the task's conversation, queued in the transaction that ends it. A
        subtask's end owes nothing: its planned task pushes once for all (docs/plans.md)."""
        if task.parent_id:
            return
        lang = language_of(task.brief)
        goal = goal_summary(lang, task, run.outcome)
        if run.outcome == "done" and report is not None and (report.message or goal):
            self._stage(s, task, run, "result", "\n".join(p for p in (report.message, goal) if p))
        elif run.outcome == "failed":
            reason = run.error or (report.message if report else "") or "unknown error"
            stopped = bool(task.acceptance) and bool(GoalState.loads(task.goal).stopped)
            line = pushed(lang, "goal_failure" if stopped else "failure", title=task.title, reason=reason)
            self._stage(s, task, run, "failure", f"{line}\n{goal}" if goal else line)
        elif run.outcome == "budget":
            # The budget question (docs/cost.md#the-budget-question): pushed like any question; answered in
            # needs-you or here.
            line = pushed(lang, "budget", title=task.title, spent=f"{task.spent_usd:.2f}")
            self._stage(s, task, run, "question", f"{line}\n{pushed(lang, 'budget_options')}")

    async def run_finished(self, run: RunRecord, task: TaskRecord, report: Report | None) -> None:
        if task.parent_id and self.on_subtask_end is not None:
            await self.on_subtask_end(task)
        # The run's end withdrew its questions, so a question held behind them may go now too.
        await self._outbox.flush()
        self._bus.publish(TaskChanged(task.id))

    def _stage(
        self, s: Session, task: TaskRecord, run: RunRecord, purpose: DeliveryPurpose, text: str
    ) -> None:
        self._outbox.stage(
            s,
            delivery_id=f"{run.id}:{purpose}",
            bot_id=task.bot_id,
            conversation_id=task.conversation_id,
            purpose=purpose,
            text=text,
            task_id=task.id,
            run_id=run.id,
        )

    async def tell_chat(self, delivery: DeliveryRecord) -> None:
        """The chat session learns that a result reached the user (docs/chat.md#a-chat-turn), without a new
        turn."""
        if delivery.purpose != "result" or not delivery.task_id or self._runtime is None:
            return
        session = self._runtime.get(f"chat-{delivery.conversation_id}")
        if session is None:
            return
        task = await self._db.read(lambda s: task_rows.get_task(s, delivery.task_id))
        title = task.title if task else delivery.task_id
        await session.inject(
            pushed(language_of(task.brief if task else ""), "chat_note", title=title, text=delivery.text)
        )
