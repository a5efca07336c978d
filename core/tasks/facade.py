"""The reads and commands the desktop UI uses for background tasks. `TaskService` implements it; UI tests
fake it. The signatures mirror `core.tasks.service.TaskService` exactly."""

from __future__ import annotations

from typing import Protocol

from core.audit.views import AuditLine
from core.tasks.views import TaskDetail, TaskView
from core.translations import Language


class TaskFacade(Protocol):
    async def list_tasks(
        self, *, bot_id: str | None = None, groups: list[str] | None = None, lang: Language = "zh"
    ) -> list[TaskView]:
        """Tasks of one bot or all bots (archived ones never), optionally only these groups."""
        ...

    async def detail(self, task_id: str, lang: Language = "zh") -> TaskDetail:
        """One task with the user's words, its folder and its runs. Raises NotFoundError when it is gone."""
        ...

    async def stop_task(self, task_id: str) -> TaskView:
        """A person stops the task: its turn is cancelled and its jobs killed; returns the stopped task."""
        ...

    async def delete_task(self, task_id: str) -> None:
        """Stop the task, then remove its rows, folder and session history. Raises NotFoundError."""
        ...

    async def run_activity(self, task_id: str, run_id: str) -> list[dict[str, object]]:
        """One run's 处理过程 as stored (`ActivityStep.to_json` rows, newest 120; a first note row counts
        the dropped ones). Raises NotFoundError for an unknown task or run."""
        ...

    async def set_budget(
        self, task_id: str, *, add_usd: float | None = None, budget_usd: float | None = None
    ) -> TaskView:
        """Raise the budget by `add_usd` or set it to `budget_usd` (exactly one). A task stopped at its
        budget goes on. Raises InvalidInputError (zero, negative, over $1,000, below what is spent)."""
        ...

    async def keep(self, task_id: str) -> TaskDetail:
        """保留: the task counts as used now, so its folder's deletion date is cleared
        (docs/retention.md#keep)."""
        ...

    async def export_markdown(self, task_id: str, lang: Language = "zh") -> str:
        """The task as a Markdown document, secrets redacted. Raises NotFoundError."""
        ...

    async def audit(self, task_id: str, group: str = "all") -> list[AuditLine]:
        """What the task did outside its folder (docs/audit.md), newest first (at most 200), in one group of
        `core.audit.views.AUDIT_GROUPS`. Raises NotFoundError, or InvalidInputError for another group."""
        ...
