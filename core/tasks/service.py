"""Background tasks (P3 §1-§3): created by a person's request, run on background slots in their own session
and folder, and report back into the conversation that asked. Durable across restarts.

TaskService holds the commands and reads; TaskRunner drives runs; the Outbox delivers what is pushed.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import secrets
import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy.orm import Session

from core.agent.tool_api import ToolError, ToolSpec
from core.attention.routing import AnswerError, new_code, validate_answer
from core.bots.service import BotService
from core.bus import EventBus
from core.chat.destination import conversation_for
from core.chat.views import TaskChip
from core.clock import Clock
from core.cost.budget_answer import parse_budget_answer
from core.cost.meter import CostMeter
from core.delivery.outbox import Outbox
from core.errors import ConflictError, InvalidInputError, NotFoundError
from core.events import MessagesChanged, TaskChanged
from core.ids import new_id
from core.store import approvals as approval_rows
from core.store import conversations as conv_rows
from core.store import messages as msg_rows
from core.store import run_inputs as input_rows
from core.store import runs as run_rows
from core.store import tasks as task_rows
from core.store.approvals import ApprovalRecord
from core.store.database import Database
from core.store.deliveries import DeliveryPurpose, DeliveryRecord
from core.store.run_inputs import InputKind
from core.store.runs import RunCause, RunRecord
from core.store.tasks import TaskRecord
from core.tasks.folders import folder_size, remove_folder, task_folder
from core.tasks.language import language_of, pushed
from core.tasks.prompts import task_brief
from core.tasks.recovery import LiveRun, PendingInput, TaskFacts, plan_recovery
from core.tasks.report import Report, validate_report
from core.tasks.runner import SETTLE_LIMIT_S, TASK_PREFIX, TASK_RETRY, TaskRunner, task_session_id
from core.tasks.slots import SlotPolicy, Slots
from core.tasks.stage import BUDGET
from core.tasks.stage_facts import TaskState, load_state, load_states
from core.tasks.tools import chat_task_tools, task_report_tool
from core.tasks.views import RunView, TaskDetail, TaskView

if TYPE_CHECKING:
    from core.agent.model_config import RetryPolicy
    from core.agent.runtime import AgentRuntime

log = logging.getLogger(__name__)

MAX_OPEN_TASKS = 10
MAX_TEXT = 100_000  # a person's words, a brief or a follow-up, as for a chat message
DEFAULT_BUDGET_USD = 1.0
MAX_BUDGET_USD = 1000.0
TITLE_LENGTH = 40
GROUPS = ("working", "needs", "ended")
_RANDOM = secrets.SystemRandom()  # question codes: unpredictable, so a stray number rarely answers


def _title_from(words: str) -> str:
    first = next((line.strip() for line in words.splitlines() if line.strip()), "")
    return first[:TITLE_LENGTH] or "Task"


class TaskService:
    def __init__(
        self,
        db: Database,
        bus: EventBus,
        clock: Clock,
        bots: BotService,
        outbox: Outbox,
        *,
        policy: SlotPolicy | None = None,
        retry: RetryPolicy = TASK_RETRY,
        settle_limit_s: float = SETTLE_LIMIT_S,
        current_turn: Callable[[str], str | None] = lambda _cid: None,
        meter: CostMeter | None = None,
        on_cost: Callable[[str, float], None] = lambda _bot, _usd: None,
        reserve_low: Callable[[str], bool] = lambda _bot: False,
    ) -> None:
        self._db = db
        self._bus = bus
        self._clock = clock
        self._bots = bots
        self._outbox = outbox
        self._current_turn = current_turn
        self._reserve_low = reserve_low
        self._runtime: AgentRuntime | None = None
        self.slots = Slots(policy or SlotPolicy())
        self.runner = TaskRunner(
            db,
            bus,
            clock,
            bots,
            self.slots,
            tools=lambda: [task_report_tool(self)],
            on_finished=self._run_finished,
            owed_pushes=self._stage_pushes,
            retry=retry,
            settle_limit_s=settle_limit_s,
            meter=meter,
            on_cost=on_cost,
            reserve_low=reserve_low,
        )
        outbox.on_delivered(self._tell_chat)
        # Set by the host: approvals that waited before a restart are expired once recovery has seen them.
        self.expire_stale_approvals: Callable[[], Awaitable[object]] | None = None

    def chat_tools(self) -> list[ToolSpec]:
        return chat_task_tools(self)

    # ---- lifecycle ----------------------------------------------------------------------------------

    async def start(self, runtime: AgentRuntime) -> None:
        self._runtime = runtime
        await self._recover()
        await self.runner.start(runtime)
        await self._outbox.flush()

    async def shutdown(self) -> None:
        await self.runner.stop()

    # ---- commands -----------------------------------------------------------------------------------

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
    ) -> TaskView:
        """A person asked for background work (chat's task_start, or POST /api/tasks).

        `record_request` stores the words as the person's message in the conversation (the desktop's
        "new task"), so the result arrives under the request."""
        if not words.strip():
            raise InvalidInputError("text", "must be a non-empty string")
        _check_length("text", words)
        _check_length("brief", brief)
        budget = DEFAULT_BUDGET_USD if budget_usd is None else budget_usd
        if not 0 < budget <= MAX_BUDGET_USD:
            raise InvalidInputError("budgetUsd", f"must be more than 0 and at most {MAX_BUDGET_USD:g}")
        bot = await self._bots.get(bot_id) if bot_id else await self._bots.ensure_default()
        if self._reserve_low(bot.id):
            raise ConflictError(
                f"{bot.name}'s remaining provider balance is below 20 % of its limit; what is left is kept "
                "for chat. Raise the limit or top up, then start the task again."
            )
        conversation_id = await conversation_for(self._db, self._bus, self._clock, bot.id, conversation_id)
        title = (title.strip() or _title_from(words))[:80]
        task_id = new_id("t")
        folder = task_folder(Path(bot.workspace), title, task_id)
        await asyncio.to_thread((folder / ".task").mkdir, parents=True, exist_ok=True)
        now = self._clock.time()

        def insert(s: Session) -> TaskRecord:
            if task_rows.count_open_tasks(s, bot.id) >= MAX_OPEN_TASKS:
                raise ConflictError(
                    f"{bot.name} already has {MAX_OPEN_TASKS} open tasks. "
                    "Stop or finish one before starting another."
                )
            recent = [(m.role, m.text) for m in msg_rows.list_messages(s, conversation_id, limit=7)]
            if origin_message_id and recent and recent[-1][1] == words:
                recent = recent[:-1]  # the request itself is already quoted verbatim
            origin = origin_message_id
            if record_request:
                origin = msg_rows.insert_message(
                    s, conversation_id=conversation_id, role="user", text=words, state="answered", now=now
                ).id
                conv_rows.touch_conversation(s, conversation_id, now)
            record = task_rows.insert_task(
                s,
                id=task_id,
                bot_id=bot.id,
                conversation_id=conversation_id,
                title=title,
                brief=brief.strip()[:1500] or words.strip(),
                session_id=task_session_id(task_id),
                folder=str(folder),
                permission=bot.preset,
                budget_usd=budget,
                now=now,
                origin_message_id=origin,
                origin_ref=origin_ref,
            )
            task_rows.update_task(s, task_id, now=now, last_used_at=now)
            input_rows.insert_input(
                s,
                id=new_id("i"),
                kind="brief",
                text=task_brief(words=words, brief=brief, recent=recent[-6:]),
                now=now,
                task_id=task_id,
                from_person=True,
            )
            run_rows.insert_run(
                s,
                id=new_id("r"),
                bot_id=bot.id,
                session_id=task_session_id(task_id),
                cause="launch",
                now=now,
                task_id=task_id,
            )
            return record

        try:
            await self._db.write(insert)
        except BaseException:
            # Whatever refused the insert, nothing of the task is left behind: no folder without a row.
            await asyncio.to_thread(shutil.rmtree, folder, True)
            raise
        self.runner.poke()
        self._bus.publish(TaskChanged(task_id))
        if record_request:
            self._bus.publish(MessagesChanged(conversation_id))
        return await self.view(task_id)

    async def follow_up(
        self, task_id: str, text: str, *, cause: RunCause = "followup", kind: InputKind = "followup"
    ) -> str:
        """A person's follow-up: steered into a working task, or it resumes a done or failed one.
        Returns 'steered', 'queued' or 'resumed'."""
        if not text.strip():
            raise InvalidInputError("text", "must be a non-empty string")
        _check_length("text", text)
        task = await self._task(task_id)
        _refuse_ended(task)
        input_id = new_id("i")
        now = self._clock.time()
        active = self.runner.active_run(task_id)

        def add(s: Session) -> str:
            # Checked again in the transaction: a retention pass may have archived it since the read.
            current = task_rows.get_task(s, task_id)
            if current is None:
                raise NotFoundError("task", task_id)
            _refuse_ended(current)
            input_rows.insert_input(
                s, id=input_id, kind=kind, text=text, now=now, task_id=task_id, from_person=True
            )
            # Any use restarts the task's 30 idle days and takes back a folder's deletion date (P3 §11).
            task_rows.update_task(s, task_id, now=now, last_used_at=now, cleanup_at=0.0)
            if active is not None:
                input_rows.mark_delivered(s, input_id, run_id=active, now=now)
                return "steered"
            return _queue_run(s, current, cause, now)

        how = await self._db.write(add)
        if how == "steered" and active is not None and not await self.runner.hand_over(active):
            # The run ended between the read and the hand-over: the input is owed a run of its own.
            def requeue(s: Session) -> str:
                current = task_rows.get_task(s, task_id)
                if current is None or current.end_reason in ("stopped", "archived") or current.archived_at:
                    return "steered"  # kept untaken; a stopped task takes nothing more
                return _queue_run(s, current, cause, self._clock.time())

            how = await self._db.write(requeue)
        self.runner.poke()
        self._bus.publish(TaskChanged(task_id))
        return how

    async def stop_task(self, task_id: str) -> TaskView:
        """A person stops the task: its turn is cancelled, its jobs killed; chat and other tasks go on."""
        task = await self._task(task_id)
        if task.end_reason == "stopped":
            return await self.view(task_id)
        now = self._clock.time()
        await self._db.write(
            lambda s: task_rows.update_task(
                s, task_id, now=now, ended_at=now, end_reason="stopped", stopped_by="person"
            )
        )
        active = self.runner.active_run(task_id)
        if active is not None:
            await self.runner.stop_run(active, refuse=True)
        elif self._runtime is not None and (session := self._runtime.get(task.session_id)) is not None:
            session.refuse_tools("This task was stopped by the user. Do nothing more.")

        def end_queued(s: Session) -> None:
            for run in run_rows.runs_of_task(s, task_id):
                if run.state != "ended":
                    run_rows.end_run(s, run.id, outcome="stopped", now=now)

        await self._db.write(end_queued)
        self._bus.publish(TaskChanged(task_id))
        return await self.view(task_id)

    async def delete_task(self, task_id: str) -> None:
        """Stop it, then remove its rows, folder and session history."""
        task = await self._task(task_id)
        await self.stop_task(task_id)
        if self._runtime is not None:
            await self._runtime.close_session(task.session_id)
        workspace = Path((await self._bots.get(task.bot_id)).workspace)
        await asyncio.to_thread(remove_folder, Path(task.folder), workspace)
        if self._runtime is not None:
            await self._runtime.delete_history(task.session_id)
        await self._db.write(lambda s: task_rows.delete_task(s, task_id))
        self._bus.publish(TaskChanged(task_id))

    async def set_budget(
        self, task_id: str, *, add_usd: float | None = None, budget_usd: float | None = None
    ) -> TaskView:
        """Raise the budget by `add_usd` or set it to `budget_usd` (exactly one; P3 §10 `/budget`). A task
        stopped at its budget goes on with a new run. Refused, changing nothing: zero, negative, a total
        over MAX_BUDGET_USD, or a budget at or below what is already spent."""
        if (add_usd is None) == (budget_usd is None):
            raise InvalidInputError("budget", "send exactly one of addUsd or budgetUsd")
        field_name = "addUsd" if add_usd is not None else "budgetUsd"
        amount = add_usd if add_usd is not None else budget_usd
        assert amount is not None
        if not math.isfinite(amount) or amount <= 0:
            raise InvalidInputError(field_name, "must be more than 0")
        now = self._clock.time()

        def raise_budget(s: Session) -> float:
            # Read and written in one transaction: two 继续 at once (a double click, two channels) both
            # count, and the spend it is checked against is the spend of that moment.
            task = task_rows.get_task(s, task_id)
            if task is None:
                raise NotFoundError("task", task_id)
            new_budget = task.budget_usd + amount if add_usd is not None else amount
            if new_budget > MAX_BUDGET_USD:
                raise InvalidInputError(field_name, f"the budget would be ${new_budget:,.2f}; at most $1,000")
            if new_budget <= task.spent_usd:
                raise InvalidInputError(
                    field_name,
                    f"must be more than the ${task.spent_usd:.2f} already spent, or the task stops at once",
                )
            task_rows.update_task(
                s, task_id, now=now, budget_usd=new_budget, last_used_at=now, cleanup_at=0.0
            )
            return new_budget

        new_budget = await self._db.write(raise_budget)
        self.runner.set_budget(task_id, new_budget)
        if (await self.view(task_id)).stage == BUDGET.key:
            note = f"[The user raised this task's budget to ${new_budget:.2f}] Continue where you left off."
            await self.follow_up(task_id, note, cause="continue", kind="followup")
        self._bus.publish(TaskChanged(task_id))
        return await self.view(task_id)

    async def answer_budget(self, task_id: str, answer: str) -> str:
        """The budget question's answer (needs-you or the API): 'added', 'stopped'. See budget_answer."""
        view = await self.view(task_id)
        if view.stage != BUDGET.key:
            raise ConflictError(f"「{view.title}」 is not waiting at its budget.")
        parsed = parse_budget_answer(answer)
        if parsed.action == "stop":
            await self.stop_task(task_id)
            return "stopped"
        if parsed.action == "set":
            await self.set_budget(task_id, budget_usd=parsed.budget_usd)
        else:
            await self.set_budget(task_id, add_usd=parsed.add_usd)
        if parsed.words:
            await self.follow_up(task_id, parsed.words)
        return "added"

    async def keep(self, task_id: str) -> TaskDetail:
        """保留 (P3 §11): the task counts as used now, so its folder's deletion date goes and the 30 idle
        days start again. An archived task stays archived (its follow-ups stay closed); its folder is kept."""
        await self._task(task_id)
        now = self._clock.time()
        await self._db.write(
            lambda s: task_rows.update_task(
                s, task_id, now=now, last_used_at=now, cleanup_at=0.0, archived_at=0.0
            )
        )
        self._bus.publish(TaskChanged(task_id))
        return await self.detail(task_id)

    # ---- reads --------------------------------------------------------------------------------------

    async def _task(self, task_id: str) -> TaskRecord:
        task = await self._db.read(lambda s: task_rows.get_task(s, task_id))
        if task is None:
            raise NotFoundError("task", task_id)
        return task

    async def _state(self, task: TaskRecord) -> TaskState:
        return await self._db.read(
            lambda s: load_state(s, task, active=self.runner.active_run(task.id) is not None)
        )

    async def view(self, task_id: str, lang: str = "zh") -> TaskView:
        return (await self._state(await self._task(task_id))).view(lang)

    async def list_tasks(
        self, *, bot_id: str | None = None, groups: list[str] | None = None, lang: str = "zh"
    ) -> list[TaskView]:
        for group in groups or []:
            if group not in GROUPS:
                raise InvalidInputError("group", f"unknown group {group!r}; use {', '.join(GROUPS)}")
        if bot_id:
            await self._bots.get(bot_id)
        tasks = await self._db.read(lambda s: task_rows.list_tasks(s, bot_id=bot_id))
        shown = [t for t in tasks if not t.archived_at and t.end_reason != "archived"]
        active = {t.id for t in shown if self.runner.active_run(t.id) is not None}
        # One trip to the database thread for every task's state: the list is re-read on each change.
        states = await self._db.read(lambda s: load_states(s, shown, active=active))
        views = [state.view(lang) for state in states]
        return [v for v in views if not groups or v.group in groups]

    async def detail(self, task_id: str, lang: str = "zh") -> TaskDetail:
        task = await self._task(task_id)
        state = await self._state(task)
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
                error=r.error,
                steps=len(live) if (live := self.runner.live_steps(r.id)) is not None else len(r.activity),
                tokens_in=r.tokens_in,
                tokens_out=r.tokens_out,
                queued_at=r.queued_at,
                started_at=r.started_at,
                ended_at=r.ended_at,
                cost_usd=r.cost_usd,
                cost_other=r.cost_other,
                unpriced_calls=r.unpriced_calls,
                report=_decoded_report(r.report),
            )
            for r in state.runs
        )
        return TaskDetail(
            task=state.view(lang),
            words=words,
            brief=task.brief,
            folder=task.folder,
            folder_bytes=folder_bytes,
            session_bytes=session_bytes,
            report=json.loads(task.report) if task.report else None,
            runs=runs,
            cleanup_at=task.cleanup_at,
            idle_since=task.idle_since,
        )

    async def chips(self, conversation_id: str, lang: str = "zh") -> dict[str, list[TaskChip]]:
        """Tasks started from this conversation, by the chat turn that started them (for the reply's chip)."""
        tasks = await self._db.read(lambda s: task_rows.tasks_of_conversation(s, conversation_id))
        chips: dict[str, list[TaskChip]] = {}
        for task in tasks:
            if not task.origin_ref.startswith("turn:"):
                continue
            view = (await self._state(task)).view(lang)
            chip = TaskChip(task.id, task.title, view.stage_label, view.group, view.stage)
            chips.setdefault(task.origin_ref.removeprefix("turn:"), []).append(chip)
        return chips

    async def run_activity(self, task_id: str, run_id: str) -> list[dict[str, object]]:
        await self._task(task_id)
        run = await self._db.read(lambda s: run_rows.get_run(s, run_id))
        if run is None or run.task_id != task_id:
            raise NotFoundError("run", run_id)
        live = self.runner.live_steps(run_id)
        return live if live is not None else list(run.activity)

    async def export_markdown(self, task_id: str, lang: str = "zh") -> str:
        """The task with every run, its steps and Reports as Markdown (P3 §6, §10), secrets redacted.
        Rendered off the loop: a task with thousands of steps takes a few hundred milliseconds."""
        from core.export.task_markdown import task_markdown

        detail = await self.detail(task_id, lang)
        stored = await self._db.read(lambda s: run_rows.runs_of_task(s, task_id))
        steps = {
            r.id: live if (live := self.runner.live_steps(r.id)) is not None else list(r.activity)
            for r in stored
        }
        now = self._clock.time()
        return await asyncio.to_thread(task_markdown, detail, steps, lang=lang, exported_at=now)

    # ---- model-facing tools (TaskCommands) ----------------------------------------------------------

    async def _chat_conversation(self, session_id: str) -> tuple[str, str]:
        conversation_id = session_id.removeprefix("chat-")
        record = await self._db.read(lambda s: conv_rows.get_conversation(s, conversation_id))
        if record is None:
            raise ToolError("task tools work only in a conversation")
        return record.id, record.bot_id

    async def start_from_chat(self, session_id: str, title: str, brief: str, budget_usd: float | None) -> str:
        conversation_id, bot_id = await self._chat_conversation(session_id)
        request = await self._db.read(lambda s: msg_rows.last_user_message(s, conversation_id))
        words = request.text if request else brief
        turn = self._current_turn(conversation_id)
        try:
            view = await self.create(
                bot_id=bot_id,
                conversation_id=conversation_id,
                words=words,
                title=title,
                brief=brief,
                budget_usd=budget_usd,
                origin_message_id=request.id if request else 0,
                origin_ref=f"turn:{turn}" if turn else "",
            )
        except (ConflictError, InvalidInputError) as exc:
            raise ToolError(f"The task was not started: {exc.message} Tell the user.") from exc
        return (
            f"Started background task {view.id} 「{view.title}」. "
            "Tell the user in one sentence that you will do it "
            "in the background and report back; do not do the work here."
        )

    async def _resolve(self, bot_id: str, ref: str) -> TaskRecord:
        tasks = await self._db.read(lambda s: task_rows.list_tasks(s, bot_id=bot_id))
        exact = [t for t in tasks if ref in (t.id, t.title)]
        if not exact:
            exact = [t for t in tasks if ref.lower() in t.title.lower()]
        if len(exact) != 1:
            names = "; ".join(f"{t.id} 「{t.title}」" for t in tasks[:10]) or "none"
            reason = "no task matches" if not exact else "several tasks match"
            raise ToolError(f"{reason} {ref!r}. Open tasks: {names}. Use the task's id.")
        return exact[0]

    async def message_from_chat(self, session_id: str, task: str, text: str) -> str:
        _, bot_id = await self._chat_conversation(session_id)
        record = await self._resolve(bot_id, task)
        try:
            how = await self.follow_up(record.id, text)
        except ConflictError as exc:
            raise ToolError(exc.message) from exc
        return {
            "steered": f"Passed to 「{record.title}」 while it works.",
            "queued": f"Queued for 「{record.title}」; it will read it when it starts.",
            "resumed": f"「{record.title}」 resumes with this.",
        }[how]

    async def list_for_chat(self, session_id: str) -> str:
        _, bot_id = await self._chat_conversation(session_id)
        views = await self.list_tasks(bot_id=bot_id, groups=["working", "needs"], lang="en")
        if not views:
            return "No open background tasks."
        return "\n".join(f"{v.id} 「{v.title}」: {v.stage_label}. {v.latest_line}".strip() for v in views)

    async def report_from_task(self, session_id: str, args: dict[str, Any]) -> str:
        report = validate_report(args)  # ReportError (a ValueError) goes back to the model as a tool error
        task_id = session_id.removeprefix(TASK_PREFIX)
        task = await self._task(task_id)
        if task.end_reason in ("stopped", "archived") or not self.runner.record_report(session_id, report):
            raise ToolError("This task is not running (it was stopped or has ended); nothing was recorded.")
        now = self._clock.time()
        await self._db.write(
            lambda s: task_rows.update_task(s, task_id, now=now, report=json.dumps(report.to_json()))
        )
        if report.state == "needs_you" and report.question is not None:
            await self._ask(task, report)
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

    # ---- questions (P3 §6 "Questions: ask early, keep working") -------------------------------------

    async def _ask(self, task: TaskRecord, report: Report) -> None:
        """Ask right away, whether or not the run goes on; asking again replaces the open question. The
        question and its push commit together, so a crash never leaves a question nobody was asked."""
        assert report.question is not None
        question = report.question
        question_id = new_id("q")
        now = self._clock.time()
        run_id = self.runner.active_run(task.id) or ""
        lang = language_of(task.brief)
        text = pushed(lang, "question", title=task.title, question=question.text)
        if question.options:
            text += "\n" + pushed(lang, "options", options=" / ".join(question.options))
        if question.default is not None:
            text += "\n" + pushed(lang, "default", default=question.default)

        def insert(s: Session) -> None:
            for old in approval_rows.open_approvals(s, task_id=task.id):
                if old.kind == "question":
                    approval_rows.decide(s, old.id, status="withdrawn", now=now, decided_by="")
            approval_rows.insert_approval(
                s,
                id=question_id,
                kind="question",
                bot_id=task.bot_id,
                conversation_id=task.conversation_id,
                text=question.text,
                now=now,
                task_id=task.id,
                run_id=run_id,
                options=question.options,
                default=question.default,
                code=new_code(approval_rows.open_codes(s), _RANDOM.randint),
            )
            self._outbox.stage(
                s,
                delivery_id=f"{question_id}:ask",
                bot_id=task.bot_id,
                conversation_id=task.conversation_id,
                purpose="question",
                text=text,
                task_id=task.id,
                run_id=run_id,
            )

        await self._db.write(insert)
        await self._outbox.flush()

    async def fail_for_approval_timeout(self, task_id: str) -> None:
        """Nobody approved within 12 h: the run fails 「批准超时」 and the failure is pushed (P3 §11)."""
        run_id = self.runner.active_run(task_id)
        if run_id is not None:
            await self.runner.fail_run(run_id, "批准超时")

    async def open_approvals(self) -> list[ApprovalRecord]:
        return await self._db.read(
            lambda s: [a for a in approval_rows.open_approvals(s) if a.kind == "approval"]
        )

    async def open_questions(self) -> list[ApprovalRecord]:
        return await self._db.read(
            lambda s: [a for a in approval_rows.open_approvals(s) if a.kind == "question"]
        )

    async def answer(self, question_id: str, answer: str) -> str:
        """A person answers a task's question: steered into the run that asked, or it starts a run on the
        reserved person slot. Returns how it went in ('steered', 'queued' or 'resumed')."""
        question = await self._db.read(lambda s: approval_rows.get_approval(s, question_id))
        if question is None or question.kind != "question":
            raise NotFoundError("question", question_id)
        if question.status == "withdrawn":
            return await self._late_answer(question, answer)
        if question.status != "open":
            raise ConflictError(f"This question is already {question.status}; there is nothing to answer.")
        if not answer.strip():
            raise InvalidInputError("answer", "must not be empty; pick an option or write a reply")
        try:
            chosen = validate_answer(answer, question.options, allows_free_text=True)
        except AnswerError as exc:
            raise InvalidInputError("answer", str(exc)) from exc
        now = self._clock.time()
        await self._db.write(
            lambda s: approval_rows.decide(
                s, question_id, status="answered", now=now, answer=chosen, decided_by="person"
            )
        )
        text = f"[The user answered your question] Question: {question.text}\nAnswer: {chosen}"
        how = await self.follow_up(question.task_id, text, cause="answer", kind="answer")
        await self._outbox.flush()  # a question held behind this one may go now
        return how

    async def _late_answer(self, question: ApprovalRecord, answer: str) -> str:
        """An answer to a question the task withdrew (it finished with its default, or failed) reaches the
        task as a late answer and resumes it (P3 §6)."""
        if not answer.strip():
            raise InvalidInputError("answer", "must not be empty; pick an option or write a reply")
        chosen = validate_answer(answer, question.options, allows_free_text=True)
        went_with = f" (you already finished with {question.default!r})" if question.default else ""
        text = (
            f"[The user answered a question you asked earlier{went_with}] "
            f"Question: {question.text}\nAnswer: {chosen}"
        )
        return await self.follow_up(question.task_id, text, cause="answer", kind="answer")

    def _stage_pushes(self, s: Session, run: RunRecord, task: TaskRecord, report: Report | None) -> None:
        """What a run's end owes the task's conversation, queued in the transaction that ends it."""
        lang = language_of(task.brief)
        if run.outcome == "done" and report is not None and report.message:
            self._stage(s, task, run, "result", report.message)
        elif run.outcome == "failed":
            reason = run.error or (report.message if report else "") or "unknown error"
            self._stage(s, task, run, "failure", pushed(lang, "failure", title=task.title, reason=reason))
        elif run.outcome == "budget":
            # The budget question (P3 §8): pushed like any question; answered in needs-you or here.
            line = pushed(lang, "budget", title=task.title, spent=f"{task.spent_usd:.2f}")
            self._stage(s, task, run, "question", f"{line}\n{pushed(lang, 'budget_options')}")

    async def _run_finished(self, run: RunRecord, task: TaskRecord, report: Report | None) -> None:
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

    async def _tell_chat(self, delivery: DeliveryRecord) -> None:
        """The chat session learns that a result reached the user (P3 §10 `inject`), without a new turn."""
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

    # ---- restart recovery (P3 §3) -------------------------------------------------------------------

    async def _recover(self) -> None:
        now = self._clock.time()

        def gather(
            s: Session,
        ) -> tuple[list[LiveRun], list[TaskFacts], list[PendingInput], dict[str, list[str]]]:
            live = [r for r in run_rows.live_runs(s) if r.task_id and r.state in ("running", "settling")]
            runs, facts, inputs, jobs = [], [], [], {}
            for run in live:
                task = task_rows.get_task(s, run.task_id)
                if task is None:
                    continue
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
        if self.expire_stale_approvals is not None:
            await self.expire_stale_approvals()
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


def _decoded_report(encoded: str) -> dict[str, Any] | None:
    if not encoded:
        return None
    try:
        decoded = json.loads(encoded)
    except ValueError:
        return None
    return decoded if isinstance(decoded, dict) else None


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


def _queue_run(s: Session, task: TaskRecord, cause: RunCause, now: float) -> str:
    """A run for the task's untaken inputs, unless one is queued already: 'queued' or 'resumed'."""
    if any(r.state in ("queued", "running", "settling") for r in run_rows.runs_of_task(s, task.id)):
        return "queued"
    run_rows.insert_run(
        s,
        id=new_id("r"),
        bot_id=task.bot_id,
        session_id=task.session_id,
        cause=cause,
        now=now,
        task_id=task.id,
    )
    task_rows.update_task(s, task.id, now=now, ended_at=0, end_reason="")
    return "resumed"


def _check_length(field: str, text: str) -> None:
    if len(text) > MAX_TEXT:
        raise InvalidInputError(
            field, f"must be at most {MAX_TEXT:,} characters; shorten it or put the rest in a file"
        )


def _refuse_ended(task: TaskRecord) -> None:
    """A stopped or archived task takes no follow-ups (P3 §11): a new task is the way on."""
    if task.end_reason in ("stopped", "archived") or task.archived_at:
        why = "archived" if task.archived_at else task.end_reason
        raise ConflictError(f"「{task.title}」 was {why}; it cannot continue. Start a new task instead.")
