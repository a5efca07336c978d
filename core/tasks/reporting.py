"""A task session's `task_report` (docs/runs.md#the-report-tool): the run's report is recorded on the task,
and a needs_you report with a question asks it at once. What the tool answers tells the model what to do
next."""

from __future__ import annotations

import json
from typing import Any

from core.agent.tool_api import ToolError
from core.bus import EventBus
from core.changes import TaskChanged
from core.clock import Clock
from core.store import tasks as task_rows
from core.store.database import Database
from core.tasks.questions import TaskQuestions
from core.tasks.reads import TaskReads
from core.tasks.report import validate_report
from core.tasks.runner import TASK_PREFIX, TaskRunner


class TaskReporting:
    def __init__(
        self,
        db: Database,
        bus: EventBus,
        clock: Clock,
        runner: TaskRunner,
        reads: TaskReads,
        questions: TaskQuestions,
    ) -> None:
        self._db = db
        self._bus = bus
        self._clock = clock
        self._runner = runner
        self._reads = reads
        self._questions = questions

    async def report_from_task(self, session_id: str, args: dict[str, Any]) -> str:
        report = validate_report(args)  # ReportError (a ValueError) goes back to the model as a tool error
        task_id = session_id.removeprefix(TASK_PREFIX)
        task = await self._reads.task(task_id)
        if task.end_reason in ("stopped", "archived") or not self._runner.record_report(session_id, report):
            raise ToolError("This task is not running (it was stopped or has ended); nothing was recorded.")
        now = self._clock.time()
        await self._db.write(
            lambda s: task_rows.update_task(s, task_id, now=now, report=json.dumps(report.to_json()))
        )
        if report.state == "needs_you" and report.question is not None:
            await self._questions.ask(task, report)
        self._bus.publish(TaskChanged(task_id))
        if (
            report.state == "needs_you"
            and report.question is not None
            and report.question.default is not None
        ):
            return (
                f"Asked. Keep working on what does not depend on the answer. If you finish first, go with "
                f"{report.question.default!r}, say so in your result and report done."
            )
        return {
            "progress": "Noted (not shown to the user). Carry on.",
            "done": "Recorded. The user gets your message when you finish; end your turn now.",
            "failed": "Recorded. The user will be told; end your turn now.",
            "needs_you": "Asked. Do the work that does not depend on the answer, then end your turn; "
            "the answer comes back to you as your next input.",
        }[report.state]
