"""Model-facing task tools (docs/chat.md#chat-tools). Chat sessions get task_start, task_message and
task_list; task sessions get task_report. The handlers call back into the task service through the small
protocols below."""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from core.agent.tool_api import SessionKind, ToolContext, ToolError, ToolSpec


class ChatTaskCommands(Protocol):
    async def start_from_chat(
        self,
        session_id: str,
        title: str,
        brief: str,
        budget_usd: float | None,
        acceptance: list[Any] | None = None,
        plan: bool = False,
    ) -> str: ...

    async def message_from_chat(self, session_id: str, task: str, text: str) -> str: ...

    async def list_for_chat(self, session_id: str) -> str: ...


class TaskReportCommand(Protocol):
    async def report_from_task(self, session_id: str, args: dict[str, Any]) -> str: ...


class TaskStartArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str = Field(min_length=1, max_length=80, description="A short title in the user's language.")
    brief: str = Field(
        min_length=1, description="What to do and what you know that helps (at most 1,500 chars)."
    )
    budget_usd: float | None = Field(default=None, gt=0, le=1000, description="Spending limit; default $1.")
    acceptance: list[Any] | None = Field(
        default=None,
        description=(
            "Only when the user states what must be true for the work to count as done: 1 to 12 criteria, "
            'each a string or {"text", "check"} with a check the host runs in the task folder: '
            '{"type": "command", "command": "pytest -q"} (exit 0), {"type": "file", "path": "out.pdf"} '
            '(exists, not empty) or {"type": "contains", "path": ..., "text": ...}. The task is done only '
            "when every criterion passes."
        ),
    )
    plan: bool = Field(
        default=False,
        description=(
            "True when the goal has two or more parts that can be delivered on their own, or one part must "
            "come before another: a planner splits it into subtasks that run in parallel where they can."
        ),
    )


class TaskMessageArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    task: str = Field(min_length=1, description="The task's id (t_...) or its exact title.")
    text: str = Field(min_length=1, description="The user's follow-up, in their words.")


class TaskListArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TaskReportArgs(BaseModel):
    """Loose on purpose: `validate_report` checks the shape and tells the model exactly what to fix."""

    model_config = ConfigDict(extra="allow")
    state: str = Field(description="progress | needs_you | done | failed")
    summary: str = Field(description="What you did and found (internal, for the task log).")
    message: str | None = Field(default=None, description="For the user: one line, at most 300 characters.")
    question: Any = Field(default=None, description="needs_you: one concrete question.")
    options: list[str] | None = Field(default=None, description="Choices for the question, if any.")
    default: Any = Field(default=None, description="The option you will go with if nobody answers (rare).")
    files: list[str] | None = Field(default=None, description="Files in your folder the user should see.")


def chat_task_tools(commands: ChatTaskCommands) -> list[ToolSpec]:
    async def task_start(ctx: ToolContext, args: TaskStartArgs) -> str:
        return await commands.start_from_chat(
            ctx.session_id, args.title, args.brief, args.budget_usd, args.acceptance, args.plan
        )

    async def task_message(ctx: ToolContext, args: TaskMessageArgs) -> str:
        return await commands.message_from_chat(ctx.session_id, args.task, args.text)

    async def task_list(ctx: ToolContext, args: TaskListArgs) -> str:
        return await commands.list_for_chat(ctx.session_id)

    chat: frozenset[SessionKind] = frozenset({"chat"})
    return [
        ToolSpec(
            "task_start",
            "Start a background task for long work (many steps or minutes): it runs in its own session and "
            "folder while the chat goes on, and its result comes back to this conversation.",
            TaskStartArgs,
            task_start,
            chat,
        ),
        ToolSpec(
            "task_message",
            "Send the user's follow-up to a task: steered into it while it works, or resumes it when done.",
            TaskMessageArgs,
            task_message,
            chat,
        ),
        ToolSpec(
            "task_list",
            "List open background tasks with their stage and latest line.",
            TaskListArgs,
            task_list,
            chat,
        ),
    ]


def task_report_tool(commands: TaskReportCommand) -> ToolSpec:
    async def task_report(ctx: ToolContext, args: TaskReportArgs) -> str:
        raw = args.model_dump(exclude_none=True)
        try:
            return await commands.report_from_task(ctx.session_id, raw)
        except ValueError as exc:
            raise ToolError(str(exc)) from exc

    return ToolSpec(
        "task_report",
        "Report this task's state: done (with a one-line message for the user), failed (what went wrong and "
        "what the user can do), needs_you (one concrete question), or progress (internal notes).",
        TaskReportArgs,
        task_report,
        frozenset[SessionKind]({"task", "rule"}),
    )
