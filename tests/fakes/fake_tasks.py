"""An in-memory TaskFacade for UI tests and renders: tests add and change tasks by hand, each change is
announced with TaskChanged on the bus, and stage labels come from the real stage table in either language.

Given a FakeChatFacade, it shares its bus and feeds its chips, so a reply's chip follows its task the way
ChatService reads chips fresh from TaskService on every message read.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from core.activity import dropped_note
from core.bus import EventBus
from core.chat.views import ActivityStep, TaskChip
from core.errors import NotFoundError
from core.events import TaskChanged
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
        )


def run(
    cause: str = "launch",
    state: str = "ended",
    outcome: str = "done",
    steps: int = 0,
    started_at: float = 0.0,
    ended_at: float = 0.0,
    error: str = "",
) -> RunView:
    return RunView(
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
    )


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
            session_bytes=0,
            report=None,
            runs=task.runs,
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

    # -- driving it from a test ---------------------------------------------------------------------

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
