"""Background tasks (docs/domain.md#tasks): created by a person's request, run on background slots in their
own session and folder, and report back into the conversation that asked. Durable across restarts.

TaskService is the one object callers hold (the host, the API, the UI facade). It composes the parts, each
in its own module and each a public attribute for callers that want only that part: the commands
(`commands`), the reads (`reads`), the questions (`questions`), the run's report (`reporting`), what a
run's end pushes (`result_push`), and the chat agent's task tools (`chat_commands`). TaskRunner drives
runs; restart recovery is `startup_recovery`; the Outbox delivers.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from core.audit.views import AuditLine
from core.bots.service import BotService
from core.bus import EventBus
from core.chat.ports import LiveTurns
from core.chat.views import TaskChip
from core.clock import Clock
from core.cost.meter import CostMeter
from core.delivery.outbox import Outbox
from core.runs.spending import RunSpending
from core.store.approvals import ApprovalRecord
from core.store.database import Database
from core.store.run_inputs import InputKind
from core.store.runs import RunCause
from core.tasks.chat_commands import TaskChatCommands
from core.tasks.commands import ChatReserve, TaskCommands
from core.tasks.planned import PlannedTasks
from core.tasks.questions import TaskQuestions
from core.tasks.reads import TaskAuditSource, TaskReads
from core.tasks.reporting import TaskReporting
from core.tasks.result_push import ResultPush
from core.tasks.runner import TASK_LIMITS, TASK_RETRY, TaskRunner
from core.tasks.slots import SlotPolicy, Slots
from core.tasks.tools import task_report_tool
from core.tasks.views import TaskDetail, TaskView
from core.translations import Language

if TYPE_CHECKING:
    from core.agent.model_config import RetryPolicy
    from core.agent.runtime import AgentRuntime


class SpendReserve(ChatReserve, Protocol):
    """The chat reserve (the ReserveWatcher): told what each run spent, and whether a bot's is low."""

    def record_spend(self, bot_id: str, usd: float) -> None: ...


class TaskService:
    def __init__(
        self,
        db: Database,
        bus: EventBus,
        clock: Clock,
        bots: BotService,
        outbox: Outbox,
        *,
        meter: CostMeter,
        reserve: SpendReserve,
        policy: SlotPolicy | None = None,
        retry: RetryPolicy = TASK_RETRY,
        audit: TaskAuditSource | None = None,
    ) -> None:
        self._db = db
        self._outbox = outbox
        self._runtime: AgentRuntime | None = None
        self.slots = Slots(policy or SlotPolicy())
        self._push = ResultPush(db, bus, outbox, sessions=self._sessions)
        self.runner = TaskRunner(
            db,
            bus,
            clock,
            bots,
            self.slots,
            tools=lambda: [task_report_tool(self)],
            on_finished=self._push.run_finished,
            owed_pushes=self._push.stage_pushes,
            spending=RunSpending(meter, reserve.record_spend, reserve.is_low),
            limits=replace(TASK_LIMITS, retry=retry),
        )
        self.reads = TaskReads(db, clock, bots, self.runner, sessions=self._sessions, audit=audit)
        self.planned = PlannedTasks(
            db, bus, clock, bots, meter, self.runner, self._push, sessions=self._sessions
        )
        self._push.on_subtask_end = self.planned.subtask_ended
        self.commands = TaskCommands(
            db,
            bus,
            clock,
            bots,
            self.runner,
            self.reads,
            reserve=reserve,
            sessions=self._sessions,
            planned=self.planned,
        )
        self.questions = TaskQuestions(db, clock, outbox, self.runner, self.commands)
        self.reporting = TaskReporting(db, bus, clock, self.runner, self.reads, self.questions)

    def _sessions(self) -> AgentRuntime | None:
        return self._runtime

    def chat_commands(self, live: LiveTurns) -> TaskChatCommands:
        """The chat agent's task tools for a chat session, with the chat's live turns."""
        return TaskChatCommands(self._db, self.commands, self.reads, live)

    # ---- lifecycle ----------------------------------------------------------------------------------

    async def start(self, runtime: AgentRuntime) -> None:
        """After restart recovery (core.tasks.startup_recovery): runs start, owed pushes go."""
        self._runtime = runtime
        await self.planned.recover()
        await self.runner.start(runtime)
        await self._outbox.flush()

    async def shutdown(self) -> None:
        await self.planned.shutdown()
        await self.runner.stop()

    # ---- commands (core.tasks.commands) --------------------------------------------------------------

    async def create(
        self,
        *,
        bot_id: str | None,
        words: str,
        conversation_id: str | None = None,
        title: str = "",
        brief: str = "",
        budget_usd: float | None = None,
        origin_message_id: int = 0,
        origin_ref: str = "",
        record_request: bool = False,
        in_new_conversation: bool = False,
        acceptance: object = None,
        plan: bool = False,
    ) -> TaskView:
        return await self.commands.create(
            bot_id=bot_id,
            words=words,
            conversation_id=conversation_id,
            title=title,
            brief=brief,
            budget_usd=budget_usd,
            origin_message_id=origin_message_id,
            origin_ref=origin_ref,
            record_request=record_request,
            in_new_conversation=in_new_conversation,
            acceptance=acceptance,
            plan=plan,
        )

    async def follow_up(
        self, task_id: str, text: str, *, cause: RunCause = "followup", kind: InputKind = "followup"
    ) -> str:
        return await self.commands.follow_up(task_id, text, cause=cause, kind=kind)

    async def stop_task(self, task_id: str) -> TaskView:
        return await self.commands.stop_task(task_id)

    async def delete_task(self, task_id: str) -> None:
        await self.commands.delete_task(task_id)

    async def set_budget(
        self, task_id: str, *, add_usd: float | None = None, budget_usd: float | None = None
    ) -> TaskView:
        return await self.commands.set_budget(task_id, add_usd=add_usd, budget_usd=budget_usd)

    async def answer_budget(self, task_id: str, answer: str) -> str:
        return await self.commands.answer_budget(task_id, answer)

    async def keep(self, task_id: str) -> TaskDetail:
        return await self.commands.keep(task_id)

    # ---- reads (core.tasks.reads) ---------------------------------------------------------------------

    async def view(self, task_id: str, lang: Language = "zh") -> TaskView:
        return await self.reads.view(task_id, lang)

    async def list_tasks(
        self, *, bot_id: str | None = None, groups: list[str] | None = None, lang: Language = "zh"
    ) -> list[TaskView]:
        return await self.reads.list_tasks(bot_id=bot_id, groups=groups, lang=lang)

    async def detail(self, task_id: str, lang: Language = "zh") -> TaskDetail:
        return await self.reads.detail(task_id, lang)

    async def chips(self, conversation_id: str, lang: Language = "zh") -> dict[str, list[TaskChip]]:
        return await self.reads.chips(conversation_id, lang)

    async def run_activity(self, task_id: str, run_id: str) -> list[dict[str, object]]:
        return await self.reads.run_activity(task_id, run_id)

    async def export_markdown(self, task_id: str, lang: Language = "zh") -> str:
        return await self.reads.export_markdown(task_id, lang)

    async def audit(self, task_id: str, group: str = "all") -> list[AuditLine]:
        return await self.reads.audit(task_id, group)

    # ---- questions (core.tasks.questions) --------------------------------------------------------------

    async def open_approvals(self) -> list[ApprovalRecord]:
        return await self.questions.open_approvals()

    async def open_questions(self) -> list[ApprovalRecord]:
        return await self.questions.open_questions()

    async def answer(self, question_id: str, answer: str) -> str:
        return await self.questions.answer(question_id, answer)

    # ---- the task session's task_report (core.tasks.reporting) ----------------------------------------

    async def report_from_task(self, session_id: str, args: dict[str, Any]) -> str:
        return await self.reporting.report_from_task(session_id, args)
