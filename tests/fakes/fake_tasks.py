"""An in-memory TaskFacade for UI tests and renders: tests add and change tasks by hand, each change is
announced with TaskChanged on the bus, and stage labels come from the real stage table in either language.

Given a FakeChatFacade, it shares its bus and feeds its chips, so a reply's chip follows its task the way
ChatService reads chips fresh from TaskService on every message read.

Costs and retention (issue 7): `set_budget` refuses what the real service refuses (zero, negative, over
$1,000, below what is spent) with InvalidInputError, `keep` clears the cleanup date, `export_markdown`
gives a small document (or `markdown` when a test sets it). Each records its calls; a test can script an
error (`budget_error`, `keep_error`, `export_error`) or hold a call on a gate (`budget_gate`).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from core.activity_steps import ActivityStep, dropped_note
from core.audit.views import AuditLine, audit_lines, parse_group
from core.bus import EventBus
from core.changes import TaskChanged
from core.chat.views import TaskChip
from core.errors import InvalidInputError, NotFoundError
from core.tasks.stage import ALL_STAGES, Stage
from core.tasks.views import RunView, TaskDetail, TaskView
from tests.fakes.fake_chat import FakeChatFacade


def stage_of(key: str) -> Stage:
    for stage in ALL_STAGES:
        if stage.key == key:
            return stage
    raise ValueError(f"unknown stage {key!r}")


@dataclass(frozen=True, slots=True)
class FakeTask:
    id: str
    bot_id: str
    conversation_id: str
    title: str
    stage: str
    latest_line: str
    words: str
    folder: str
    created_at: float
    updated_at: float
    spent_usd: float
    budget_usd: float
    runs: tuple[RunView, ...]
    stage_label: str = ""  # overrides the stage table's label when set
    folder_bytes: int = 0
    spent_other: tuple[tuple[str, float], ...] = ()
    unpriced_calls: int = 0
    session_bytes: int = 0
    cleanup_at: float = 0.0
    idle_since: float = 0.0
    model_priced: bool | None = None  # whether its working run's model has a price (None: not known)
    report: dict[str, Any] | None = None  # the task's latest Report, as the detail reads it

    def view(self, lang: str) -> TaskView:
        stage = stage_of(self.stage)
        return TaskView(
            id=self.id,
            bot_id=self.bot_id,
            conversation_id=self.conversation_id,
            title=self.title,
            stage=stage.key,
            stage_label=self.stage_label or stage.label(lang),
            group=stage.group,
            latest_line=self.latest_line,
            created_at=self.created_at,
            updated_at=self.updated_at,
            tokens_in=0,
            tokens_out=0,
            spent_usd=self.spent_usd,
            budget_usd=self.budget_usd,
            spent_other=dict(self.spent_other),
            unpriced_calls=self.unpriced_calls,
            model_priced=self.model_priced,
        )


def run(
    cause: str = "launch",
    state: str = "ended",
    outcome: str = "done",
    steps: int = 0,
    started_at: float = 0.0,
    ended_at: float = 0.0,
    error: str = "",
    cost_usd: float = 0.0,
    cost_other: dict[str, float] | None = None,
    unpriced_calls: int = 0,
    model_wait_since: float | None = None,
) -> RunView:
    return RunView(
        model_wait_since=model_wait_since,
        id=f"r_{cause}_{started_at:.0f}",
        cause=cause,
        state=state,
        outcome=outcome if state == "ended" else "",
        error=error,
        steps=steps,
        tokens_in=0,
        tokens_out=0,
        queued_at=started_at,
        started_at=started_at,
        ended_at=ended_at,
        cost_usd=cost_usd,
        cost_other=dict(cost_other or {}),
        unpriced_calls=unpriced_calls,
    )


# The real service's highest task budget (core.tasks.service.MAX_BUDGET_USD).
MAX_BUDGET_USD = 1000.0


class FakeTaskFacade:
    def __init__(self, chat: FakeChatFacade | None = None, bus: EventBus | None = None) -> None:
        self.bus = bus or (chat.bus if chat is not None else EventBus())
        # ChatService reads chips in Chinese (its default language); so does this fake unless told otherwise.
        self.chip_lang = "zh"
        self.stopped: list[str] = []
        self.deleted: list[str] = []
        self.activity_reads: list[str] = []  # the run id of each run_activity read
        # A run's stored steps (ActivityStep.to_json rows), by run id; see `set_run_steps`.
        self.run_steps: dict[str, list[dict[str, object]]] = {}
        self.delete_error: Exception | None = None
        self.list_reads: list[str] = []  # the language of each list read
        self.detail_reads: list[str] = []  # the task id of each detail read
        # Set to hold `stop_task` until the event is set (the UI must not wait on it).
        self.stop_gate: asyncio.Event | None = None
        # Set to make the calls raise (the UI must say why, not break).
        self.list_error: Exception | None = None
        self.stop_error: Exception | None = None
        # Costs, retention and export: what was asked, what to raise, and a gate to hold set_budget on.
        self.budget_calls: list[tuple[str, float | None, float | None]] = []  # (task, add_usd, budget_usd)
        self.budget_error: Exception | None = None
        self.budget_gate: asyncio.Event | None = None
        self.kept: list[str] = []
        self.keep_error: Exception | None = None
        self.exports: list[tuple[str, str]] = []  # (task id, lang)
        self.export_error: Exception | None = None
        self.markdown: str | None = None  # what export_markdown gives when set
        # A task's audit events as the trail holds them (oldest first), by task id; see `set_audit`.
        self.audit_events: dict[str, list[dict[str, Any]]] = {}
        self.audit_reads: list[tuple[str, str]] = []  # (task id, group)
        self.audit_error: Exception | None = None
        self._tasks: dict[str, FakeTask] = {}
        self._ids = itertools.count(1)
        if chat is not None:
            chat.chips_from = self.chip

    # -- TaskFacade ---------------------------------------------------------------------------------

    async def list_tasks(
        self, *, bot_id: str | None = None, groups: list[str] | None = None, lang: str = "zh"
    ) -> list[TaskView]:
        self.list_reads.append(lang)
        if self.list_error is not None:
            raise self.list_error
        views = [task.view(lang) for task in self._tasks.values() if not bot_id or task.bot_id == bot_id]
        return [v for v in views if not groups or v.group in groups]

    async def detail(self, task_id: str, lang: str = "zh") -> TaskDetail:
        self.detail_reads.append(task_id)
        task = self._get(task_id)
        return TaskDetail(
            task=task.view(lang),
            words=task.words,
            brief=task.words,
            folder=task.folder,
            folder_bytes=task.folder_bytes,
            session_bytes=task.session_bytes,
            report=task.report,
            runs=task.runs,
            cleanup_at=task.cleanup_at,
            idle_since=task.idle_since,
        )

    async def stop_task(self, task_id: str) -> TaskView:
        self.stopped.append(task_id)
        if self.stop_gate is not None:
            await self.stop_gate.wait()
        if self.stop_error is not None:
            raise self.stop_error
        self._get(task_id)
        return self.update_task(task_id, stage="stopped").view("zh")

    async def delete_task(self, task_id: str) -> None:
        self.deleted.append(task_id)
        await asyncio.sleep(0)
        if self.delete_error is not None:
            raise self.delete_error
        self._get(task_id)
        self.remove_task(task_id)

    async def run_activity(self, task_id: str, run_id: str) -> list[dict[str, object]]:
        self.activity_reads.append(run_id)
        task = self._get(task_id)
        if not any(r.id == run_id for r in task.runs):
            raise NotFoundError("run", run_id)
        return list(self.run_steps.get(run_id, []))

    async def set_budget(
        self, task_id: str, *, add_usd: float | None = None, budget_usd: float | None = None
    ) -> TaskView:
        self.budget_calls.append((task_id, add_usd, budget_usd))
        if self.budget_gate is not None:
            await self.budget_gate.wait()
        if self.budget_error is not None:
            raise self.budget_error
        task = self._get(task_id)
        if (add_usd is None) == (budget_usd is None):
            raise InvalidInputError("budgetUsd", "give exactly one of addUsd and budgetUsd")
        if add_usd is not None and not 0 < add_usd <= MAX_BUDGET_USD:
            raise InvalidInputError("addUsd", f"must be more than 0 and at most {MAX_BUDGET_USD:g}")
        budget = task.budget_usd + add_usd if add_usd is not None else float(budget_usd or 0.0)
        if not 0 < budget <= MAX_BUDGET_USD:
            raise InvalidInputError("budgetUsd", f"must be more than 0 and at most {MAX_BUDGET_USD:g}")
        if budget < task.spent_usd:
            raise InvalidInputError("budgetUsd", f"must not be below what is spent ({task.spent_usd:.2f})")
        changes: dict[str, Any] = {"budget_usd": budget}
        if task.stage == "needs-you/budget":
            changes["stage"] = "working"  # a task stopped at its budget goes on
        return self.update_task(task_id, **changes).view("zh")

    async def keep(self, task_id: str) -> TaskDetail:
        self.kept.append(task_id)
        await asyncio.sleep(0)
        if self.keep_error is not None:
            raise self.keep_error
        self._get(task_id)
        self.update_task(task_id, cleanup_at=0.0, idle_since=time.time())
        return await self.detail(task_id)

    async def export_markdown(self, task_id: str, lang: str = "zh") -> str:
        self.exports.append((task_id, lang))
        await asyncio.sleep(0)
        if self.export_error is not None:
            raise self.export_error
        task = self._get(task_id)
        if self.markdown is not None:
            return self.markdown
        return (
            f"# {task.title}\n\n> {task.words}\n\n- spent: ${task.spent_usd:.2f} / ${task.budget_usd:.2f}\n"
        )

    async def audit(self, task_id: str, group: str = "all") -> list[AuditLine]:
        self.audit_reads.append((task_id, group))
        await asyncio.sleep(0)
        if self.audit_error is not None:
            raise self.audit_error
        chosen = parse_group(group)
        self._get(task_id)
        return audit_lines(self.audit_events.get(task_id, []), chosen)

    # -- driving it from a test ---------------------------------------------------------------------

    def set_audit(self, task_id: str, events: list[dict[str, Any]]) -> None:
        """The task's trail, oldest first, as `core.audit.recorder` writes events (at, kind, ...)."""
        self.audit_events[task_id] = events
        self.bus.publish(TaskChanged(task_id))

    def add_task(
        self,
        title: str,
        *,
        stage: str = "working",
        stage_label: str = "",
        latest_line: str = "",
        words: str = "",
        folder: str = "",
        conversation_id: str = "c1",
        bot_id: str = "bot-1",
        created_at: float | None = None,
        updated_at: float | None = None,
        spent_usd: float = 0.0,
        budget_usd: float = 1.0,
        runs: Iterable[RunView] = (),
        folder_bytes: int = 0,
        spent_other: dict[str, float] | None = None,
        unpriced_calls: int = 0,
        session_bytes: int = 0,
        cleanup_at: float = 0.0,
        idle_since: float = 0.0,
        model_priced: bool | None = None,
        report: dict[str, Any] | None = None,
    ) -> TaskView:
        stage_of(stage)  # fail early on a typo
        now = time.time()
        task = FakeTask(
            id=f"t_{next(self._ids):012x}",
            bot_id=bot_id,
            conversation_id=conversation_id,
            title=title,
            stage=stage,
            stage_label=stage_label,
            latest_line=latest_line,
            words=words or title,
            folder=folder,
            created_at=created_at if created_at is not None else now,
            updated_at=updated_at if updated_at is not None else now,
            spent_usd=spent_usd,
            budget_usd=budget_usd,
            runs=tuple(runs),
            folder_bytes=folder_bytes,
            spent_other=tuple(sorted((spent_other or {}).items())),
            unpriced_calls=unpriced_calls,
            session_bytes=session_bytes,
            cleanup_at=cleanup_at,
            idle_since=idle_since,
            model_priced=model_priced,
            report=report,
        )
        self._tasks[task.id] = task
        self.bus.publish(TaskChanged(task.id))
        return task.view("zh")

    def update_task(self, task_id: str, **changes: Any) -> FakeTask:
        """Change fields of a task (stage, latest_line, runs, ...) and announce it."""
        if "stage" in changes:
            stage_of(str(changes["stage"]))
            changes.setdefault("stage_label", "")
        if "runs" in changes:
            changes["runs"] = tuple(changes["runs"])
        if isinstance(changes.get("spent_other"), dict):
            changes["spent_other"] = tuple(sorted(changes["spent_other"].items()))
        changes.setdefault("updated_at", time.time())
        task = replace(self._get(task_id), **changes)
        self._tasks[task_id] = task
        self.bus.publish(TaskChanged(task_id))
        return task

    def set_run_steps(
        self, task_id: str, run_id: str, steps: Iterable[ActivityStep], dropped: int = 0
    ) -> None:
        """Store a run's steps as the runner does (`ActivityLog.to_json`, with its dropped-steps note) and
        announce the task, as a step saved mid-run does."""
        rows = [step.to_json() for step in steps]
        if dropped:
            rows.insert(0, dropped_note(dropped).to_json())
        self.run_steps[run_id] = rows
        self.bus.publish(TaskChanged(task_id))

    def remove_task(self, task_id: str) -> None:
        self._tasks.pop(task_id, None)
        self.bus.publish(TaskChanged(task_id))

    def chip(self, task_id: str) -> TaskChip | None:
        task = self._tasks.get(task_id)
        if task is None:
            return None
        view = task.view(self.chip_lang)
        return TaskChip(task.id, task.title, view.stage_label, view.group)

    def _get(self, task_id: str) -> FakeTask:
        task = self._tasks.get(task_id)
        if task is None:
            raise NotFoundError("task", task_id)
        return task
