"""What a person, the UI and the API read of tasks (docs/retention.md#markdown-export): views, the grouped
list, a task's detail, the chips under the chat reply that started it, a run's steps and the Markdown
export."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from core.audit.views import AuditLine, audit_lines, parse_group
from core.bots.service import BotService
from core.chat.views import TaskChip
from core.clock import Clock
from core.errors import InvalidInputError, NotFoundError
from core.plans.state import PlanState
from core.store import messages as msg_rows
from core.store import runs as run_rows
from core.store import tasks as task_rows
from core.store.database import Database
from core.store.tasks import TaskRecord
from core.tasks.folders import folder_size
from core.tasks.goal_rounds import goal_detail
from core.tasks.runner import TaskRunner
from core.tasks.stage_facts import TaskState, load_state, load_states
from core.tasks.views import RunView, TaskDetail, TaskView
from core.translations import Language

if TYPE_CHECKING:
    from core.agent.runtime import AgentRuntime

GROUPS = ("working", "needs", "ended")


class TaskAuditSource(Protocol):
    """Where a task's audit events come from for its export (core.audit.recorder.AuditRecorder)."""

    async def task_events(self, task_id: str) -> list[dict[str, Any]]: ...


class TaskReads:
    def __init__(
        self,
        db: Database,
        clock: Clock,
        bots: BotService,
        runner: TaskRunner,
        *,
        sessions: Callable[[], AgentRuntime | None],
        audit: TaskAuditSource | None = None,
    ) -> None:
        self._audit = audit
        self._db = db
        self._clock = clock
        self._bots = bots
        self._runner = runner
        self._sessions = sessions

    @property
    def _runtime(self) -> AgentRuntime | None:
        return self._sessions()

    async def task(self, task_id: str) -> TaskRecord:
        task = await self._db.read(lambda s: task_rows.get_task(s, task_id))
        if task is None:
            raise NotFoundError("task", task_id)
        return task

    async def state(self, task: TaskRecord) -> TaskState:
        return await self._db.read(
            lambda s: load_state(s, task, active=self._runner.active_run(task.id) is not None)
        )

    def _view(self, state: TaskState, lang: Language) -> TaskView:
        """The task as the UI and the API read it, with what only the working run knows."""
        runner = self._runner
        priced = runner.model_priced(state.task.id)
        return state.view(lang, model_priced=priced)

    async def view(self, task_id: str, lang: Language = "zh") -> TaskView:
        return self._view(await self.state(await self.task(task_id)), lang)

    async def list_tasks(
        self, *, bot_id: str | None = None, groups: list[str] | None = None, lang: Language = "zh"
    ) -> list[TaskView]:
        for group in groups or []:
            if group not in GROUPS:
                raise InvalidInputError("group", f"unknown group {group!r}; use {', '.join(GROUPS)}")
        if bot_id:
            await self._bots.get(bot_id)
        tasks = await self._db.read(lambda s: task_rows.list_tasks(s, bot_id=bot_id))
        shown = [t for t in tasks if not t.archived_at and t.end_reason != "archived"]
        active = {t.id for t in shown if self._runner.active_run(t.id) is not None}
        # One trip to the database thread for every task's state: the list is re-read on each change.
        states = await self._db.read(lambda s: load_states(s, shown, active=active))
        views = [self._view(state, lang) for state in states]
        return [v for v in views if not groups or v.group in groups]

    async def detail(self, task_id: str, lang: Language = "zh") -> TaskDetail:
        task = await self.task(task_id)
        state = await self.state(task)
        words = await self._db.read(
            lambda s: m.text if (m := msg_rows.get_message(s, task.origin_message_id)) else task.brief
        )
        folder_bytes = await asyncio.to_thread(folder_size, Path(task.folder))
        session_bytes = await self._runtime.history_size(task.session_id) if self._runtime else 0
        runs = tuple(
            RunView(
                id=r.id,
                cause=r.cause,
                state=r.state,
                outcome=r.outcome,
                error=r.error_in(lang),
                steps=len(live) if (live := self._runner.live_steps(r.id)) is not None else len(r.activity),
                tokens_in=r.tokens_in,
                tokens_out=r.tokens_out,
                queued_at=r.queued_at,
                started_at=r.started_at,
                ended_at=r.ended_at,
                cost_usd=r.cost_usd,
                cost_other=r.cost_other,
                unpriced_calls=r.unpriced_calls,
                report=_decoded_report(r.report),
                model_wait_since=self._runner.model_wait_since(r.id),
            )
            for r in state.runs
        )
        return TaskDetail(
            task=self._view(state, lang),
            words=words,
            brief=task.brief,
            folder=task.folder,
            folder_bytes=folder_bytes,
            session_bytes=session_bytes,
            report=json.loads(task.report) if task.report else None,
            runs=runs,
            cleanup_at=task.cleanup_at,
            idle_since=task.idle_since,
            goal=goal_detail(task),
            plan=await self._plan_detail(task, lang) if task.plan else None,
        )

    async def _plan_detail(self, task: TaskRecord, lang: Language) -> dict[str, Any]:
        """A planned task's plan as GET /api/tasks/{id} and the task detail show it: each subtask with its
        stage, spend and steps (docs/plans.md#what-the-task-shows)."""
        state = PlanState.loads(task.plan)
        children = await self._db.read(lambda s: task_rows.subtasks_of(s, task.id))
        active = {c.id for c in children if self._runner.active_run(c.id) is not None}
        states = await self._db.read(lambda s: load_states(s, children, active=active))
        by_id = {st.task.id: st for st in states}
        shown = []
        for sub in state.plan.subtasks if state.plan is not None else ():
            child = by_id.get(state.children.get(sub.id, ""))
            view = self._view(child, lang) if child is not None else None
            steps = 0
            for run in child.runs if child is not None else ():
                live = self._runner.live_steps(run.id)
                steps += len(live) if live is not None else len(run.activity)
            shown.append(
                {
                    "id": sub.id,
                    "title": sub.title,
                    "dependsOn": list(sub.depends_on),
                    "deliverables": list(sub.deliverables),
                    "taskId": child.task.id if child is not None else "",
                    "stage": view.stage if view is not None else "",
                    "stageLabel": view.stage_label if view is not None else "",
                    "group": view.group if view is not None else "",
                    "latestLine": view.latest_line if view is not None else "",
                    "costUsd": child.task.spent_usd if child is not None else 0.0,
                    "steps": steps,
                    "runs": len(child.runs) if child is not None else 0,
                    "folder": child.task.folder if child is not None else "",
                }
            )
        return {"phase": state.phase, "subtasks": shown}

    async def chips(self, conversation_id: str, lang: Language = "zh") -> dict[str, list[TaskChip]]:
        """Tasks started from this conversation, by the chat turn that started them (for the reply's chip)."""
        tasks = await self._db.read(lambda s: task_rows.tasks_of_conversation(s, conversation_id))
        chips: dict[str, list[TaskChip]] = {}
        for task in tasks:
            if not task.origin_ref.startswith("turn:"):
                continue
            view = self._view(await self.state(task), lang)
            chip = TaskChip(task.id, task.title, view.stage_label, view.group, view.stage)
            chips.setdefault(task.origin_ref.removeprefix("turn:"), []).append(chip)
        return chips

    async def run_activity(self, task_id: str, run_id: str) -> list[dict[str, object]]:
        await self.task(task_id)
        run = await self._db.read(lambda s: run_rows.get_run(s, run_id))
        if run is None or run.task_id != task_id:
            raise NotFoundError("run", run_id)
        live = self._runner.live_steps(run_id)
        return live if live is not None else list(run.activity)

    async def audit(self, task_id: str, group: str = "all") -> list[AuditLine]:
        """What the task did outside its folder (docs/audit.md), newest first, in one of AUDIT_GROUPS."""
        chosen = parse_group(group)
        await self.task(task_id)
        events = await self._audit.task_events(task_id) if self._audit is not None else []
        return audit_lines(events, chosen)

    async def export_markdown(self, task_id: str, lang: Language = "zh") -> str:
        """The task with every run, its steps and Reports as Markdown (docs/retention.md#markdown-export),
        secrets redacted. Rendered off the loop: a task with thousands of steps takes a few hundred
        milliseconds."""
        from core.export.task_markdown import task_markdown

        detail = await self.detail(task_id, lang)
        stored = await self._db.read(lambda s: run_rows.runs_of_task(s, task_id))
        steps = {
            r.id: live if (live := self._runner.live_steps(r.id)) is not None else list(r.activity)
            for r in stored
        }
        now = self._clock.time()
        audit = await self._audit.task_events(task_id) if self._audit is not None else []
        return await asyncio.to_thread(task_markdown, detail, steps, lang=lang, exported_at=now, audit=audit)


def _decoded_report(encoded: str) -> dict[str, Any] | None:
    if not encoded:
        return None
    try:
        decoded = json.loads(encoded)
    except ValueError:
        return None
    return decoded if isinstance(decoded, dict) else None
