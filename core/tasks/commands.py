"""A person's commands on tasks (docs/domain.md#tasks, docs/cost.md#task-budget, docs/retention.md#keep):
create, follow up, stop, delete, budget, keep.
Each checks before it writes, so a refused command changes nothing; each state change is one transaction."""

from __future__ import annotations

import asyncio
import json
import math
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from sqlalchemy.orm import Session

from core.agent.tool_api import ToolEffects
from core.bots.service import BotService
from core.bus import EventBus
from core.changes import ConversationsChanged, MessagesChanged, TaskChanged
from core.chat.attachments import absolute_markers
from core.chat.destination import conversation_for
from core.clock import Clock
from core.cost.budget_answer import parse_budget_answer
from core.errors import ConflictError, InvalidInputError, NotFoundError
from core.goals.acceptance import CommandCheck, Criterion, parse_acceptance
from core.goals.rounds import GoalState, restarted
from core.goals.words import criteria_brief
from core.guard.guard import GuardedCall
from core.ids import new_id
from core.plans.state import PlanState
from core.store import conversations as conv_rows
from core.store import messages as msg_rows
from core.store import run_inputs as input_rows
from core.store import runs as run_rows
from core.store import tasks as task_rows
from core.store.database import Database
from core.store.run_inputs import InputKind
from core.store.runs import RunCause
from core.store.tasks import TaskRecord
from core.tasks.folders import remove_folder, task_folder
from core.tasks.prompts import task_brief
from core.tasks.reads import TaskReads
from core.tasks.runner import TaskRunner, task_session_id
from core.tasks.stage import BUDGET
from core.tasks.titles import title_from
from core.tasks.views import TaskDetail, TaskView

if TYPE_CHECKING:
    from core.agent.runtime import AgentRuntime
    from core.tasks.planned import PlannedTasks

MAX_OPEN_TASKS = 10
MAX_TEXT = 100_000  # a person's words, a brief or a follow-up, as for a chat message
DEFAULT_BUDGET_USD = 1.0
MAX_BUDGET_USD = 1000.0


class ChatReserve(Protocol):
    """Whether what is left of a bot's provider balance is kept for chat (the ReserveWatcher,
    docs/cost.md)."""

    def is_low(self, bot_id: str) -> bool: ...


class TaskCommands:
    def __init__(
        self,
        db: Database,
        bus: EventBus,
        clock: Clock,
        bots: BotService,
        runner: TaskRunner,
        reads: TaskReads,
        *,
        reserve: ChatReserve,
        sessions: Callable[[], AgentRuntime | None],
        planned: PlannedTasks,
    ) -> None:
        self._db = db
        self._bus = bus
        self._clock = clock
        self._bots = bots
        self._runner = runner
        self._reads = reads
        self._reserve = reserve
        self._sessions = sessions
        self._planned = planned

    @property
    def _runtime(self) -> AgentRuntime | None:
        return self._sessions()

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
        """A person asked for background work (chat's task_start, or POST /api/tasks).

        `acceptance`, when given, makes it a goal task: its raw criteria, validated whole here
        (docs/goals.md#criteria), before anything is made. `plan` makes it a planned task: a planner turn
        splits it into subtasks (docs/plans.md).

        `record_request` stores the words as the person's message in the conversation (the desktop's
        "new task"), so the result arrives under the request. `in_new_conversation` makes the task a
        conversation of its own, titled after it, in the task's own transaction: a refused task leaves no
        empty conversation, and a crash no conversation without its task (docs/desktop.md#new-task)."""
        _check_request(words, brief, new_conversation=in_new_conversation, conversation_id=conversation_id)
        budget = DEFAULT_BUDGET_USD if budget_usd is None else budget_usd
        if not 0 < budget <= MAX_BUDGET_USD:
            raise InvalidInputError("budgetUsd", f"must be more than 0 and at most {MAX_BUDGET_USD:g}")
        bot = await self._bots.get(bot_id) if bot_id else await self._bots.ensure_default()
        if self._reserve.is_low(bot.id):
            raise ConflictError(
                f"{bot.name}'s remaining provider balance is below 20 % of its limit; what is left is kept "
                "for chat. Raise the limit or top up, then start the task again."
            )
        title = (title.strip() or title_from(words))[:80]
        if in_new_conversation:
            conversation_id = new_id("c")
        else:
            conversation_id = await conversation_for(
                self._db, self._bus, self._clock, bot.id, conversation_id
            )
        task_id = new_id("t")
        folder = task_folder(Path(bot.workspace), title, task_id)
        criteria = await self._goal_criteria(acceptance, bot.id, bot.preset, folder)
        await asyncio.to_thread((folder / ".task").mkdir, parents=True, exist_ok=True)
        now = self._clock.time()

        def insert(s: Session) -> TaskRecord:
            if task_rows.count_open_tasks(s, bot.id) >= MAX_OPEN_TASKS:
                raise ConflictError(
                    f"{bot.name} already has {MAX_OPEN_TASKS} open tasks. "
                    "Stop or finish one before starting another."
                )
            if in_new_conversation:
                conv_rows.insert_conversation(s, id=conversation_id, bot_id=bot.id, title=title, now=now)
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
                acceptance=_stored(criteria),
                plan=PlanState().dumps() if plan else "",
            )
            task_rows.update_task(s, task_id, now=now, last_used_at=now)
            _first_run(
                s,
                record,
                _first_input(words, brief, recent, Path(bot.workspace), criteria),
                now,
                planned=plan,
            )
            return record

        try:
            await self._db.write(insert)
        except BaseException:
            # Whatever refused the insert, nothing of the task is left behind: no folder without a row.
            await asyncio.to_thread(shutil.rmtree, folder, True)
            raise
        if plan:
            self._planned.launched(task_id)
        else:
            self._runner.poke()
        self._bus.publish(TaskChanged(task_id))
        if in_new_conversation:
            self._bus.publish(ConversationsChanged())  # the sidebar shows the new conversation
        if record_request:
            self._bus.publish(MessagesChanged(conversation_id))
        return await self._reads.view(task_id)

    async def _goal_criteria(
        self, acceptance: object, bot_id: str, preset: str, folder: Path
    ) -> tuple[Criterion, ...]:
        """The task's criteria, validated. A check command the task's guard would refuse is refused now,
        not found out after the work."""
        criteria = parse_acceptance(acceptance) if acceptance is not None else ()
        runtime = self._runtime
        if runtime is None or runtime.guard is None:
            return criteria
        paths = runtime.path_guard(await self._bots.permission(bot_id, preset=preset))
        for index, criterion in enumerate(criteria):
            if not isinstance(criterion.check, CommandCheck):
                continue
            call = GuardedCall(
                "acceptance check", ToolEffects(command=criterion.check.command), folder, paths
            )
            verdict = runtime.guard.check(call)
            if verdict.decision == "deny":
                raise InvalidInputError(
                    f"acceptance[{index}].check.command",
                    f"the guard refuses it (rule {verdict.rule}: {verdict.reason}); give a check that stays "
                    "inside the task folder",
                )
        return criteria

    async def follow_up(
        self, task_id: str, text: str, *, cause: RunCause = "followup", kind: InputKind = "followup"
    ) -> str:
        """A person's follow-up: steered into a working task, or it resumes a done or failed one.
        Returns 'steered', 'queued' or 'resumed'."""
        if not text.strip():
            raise InvalidInputError("text", "must be a non-empty string")
        _check_length("text", text)
        task = await self._reads.task(task_id)
        _refuse_ended(task)
        if task.plan:
            how = await self._planned.follow_up(task, text, cause)
            self._bus.publish(TaskChanged(task_id))
            return how
        input_id = new_id("i")
        now = self._clock.time()
        active = self._runner.active_run(task_id)

        def add(s: Session) -> str:
            # Checked again in the transaction: a retention pass may have archived it since the read.
            current = task_rows.get_task(s, task_id)
            if current is None:
                raise NotFoundError("task", task_id)
            _refuse_ended(current)
            input_rows.insert_input(
                s, id=input_id, kind=kind, text=text, now=now, task_id=task_id, from_person=True
            )
            # Any use restarts the task's 30 idle days and takes back a folder's deletion date
            # (docs/retention.md#idle-time).
            task_rows.update_task(s, task_id, now=now, last_used_at=now, cleanup_at=0.0)
            if active is not None:
                input_rows.mark_delivered(s, input_id, run_id=active, now=now)
                return "steered"
            if current.acceptance and kind == "followup":
                # A person going on after the rounds ended gives the goal its rounds afresh
                # (docs/goals.md#rounds).
                restart = restarted(GoalState.loads(current.goal), now)
                task_rows.update_task(s, task_id, now=now, goal=restart.dumps())
            return _queue_run(s, current, cause, now)

        how = await self._db.write(add)
        if how == "steered" and active is not None and not await self._runner.hand_over(active):
            # The run ended between the read and the hand-over: the input is owed a run of its own.
            def requeue(s: Session) -> str:
                current = task_rows.get_task(s, task_id)
                if current is None or current.end_reason in ("stopped", "archived") or current.archived_at:
                    return "steered"  # kept untaken; a stopped task takes nothing more
                return _queue_run(s, current, cause, self._clock.time())

            how = await self._db.write(requeue)
        self._runner.poke()
        self._bus.publish(TaskChanged(task_id))
        return how

    async def stop_task(self, task_id: str) -> TaskView:
        """A person stops the task: its turn is cancelled, its jobs killed; chat and other tasks go on."""
        task = await self._reads.task(task_id)
        if task.end_reason == "stopped":
            return await self._reads.view(task_id)
        now = self._clock.time()
        await self._db.write(
            lambda s: task_rows.update_task(
                s, task_id, now=now, ended_at=now, end_reason="stopped", stopped_by="person"
            )
        )
        for subtask in await self._planned.stop(task):
            await self.stop_task(subtask)
        active = self._runner.active_run(task_id)
        if active is not None:
            await self._runner.stop_run(active, refuse=True)
        elif self._runtime is not None and (session := self._runtime.get(task.session_id)) is not None:
            session.refuse_tools("This task was stopped by the user. Do nothing more.")

        def end_queued(s: Session) -> None:
            for run in run_rows.runs_of_task(s, task_id):
                if run.state != "ended":
                    run_rows.end_run(s, run.id, outcome="stopped", now=now)

        await self._db.write(end_queued)
        self._bus.publish(TaskChanged(task_id))
        return await self._reads.view(task_id)

    async def delete_task(self, task_id: str) -> None:
        """Stop it, then remove its rows, folder and session history."""
        task = await self._reads.task(task_id)
        await self.stop_task(task_id)
        subtasks = await self._db.read(lambda s: task_rows.subtasks_of(s, task_id))
        for part in [*subtasks, task]:
            if self._runtime is not None:
                await self._runtime.close_session(part.session_id)
        workspace = Path((await self._bots.get(task.bot_id)).workspace)
        await asyncio.to_thread(remove_folder, Path(task.folder), workspace)
        if self._runtime is not None:
            for part in [*subtasks, task]:
                await self._runtime.delete_history(part.session_id)
        await self._db.write(lambda s: task_rows.delete_task(s, task_id))
        self._bus.publish(TaskChanged(task_id))

    async def set_budget(
        self, task_id: str, *, add_usd: float | None = None, budget_usd: float | None = None
    ) -> TaskView:
        """Raise the budget by `add_usd` or set it to `budget_usd` (exactly one; docs/cost.md#task-budget). A
        task stopped at its budget goes on with a new run. Refused, changing nothing: zero, negative, a total
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
        self._runner.set_budget(task_id, new_budget)
        if (await self._reads.view(task_id)).stage == BUDGET.key:
            note = f"[The user raised this task's budget to ${new_budget:.2f}] Continue where you left off."
            await self.follow_up(task_id, note, cause="continue", kind="followup")
        self._bus.publish(TaskChanged(task_id))
        return await self._reads.view(task_id)

    async def answer_budget(self, task_id: str, answer: str) -> str:
        """The budget question's answer (needs-you or the API): 'added', 'stopped'. See budget_answer."""
        view = await self._reads.view(task_id)
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
        """保留 (docs/retention.md#keep): the task counts as used now, so its folder's deletion date goes and
        the 30 idle days start again. An archived task stays archived (its follow-ups stay closed); its folder
        is kept."""
        await self._reads.task(task_id)
        now = self._clock.time()
        await self._db.write(
            lambda s: task_rows.update_task(
                s, task_id, now=now, last_used_at=now, cleanup_at=0.0, archived_at=0.0
            )
        )
        self._bus.publish(TaskChanged(task_id))
        return await self._reads.detail(task_id)


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


def _check_request(words: str, brief: str, *, new_conversation: bool, conversation_id: str | None) -> None:
    if new_conversation and conversation_id:
        raise InvalidInputError("conversationId", "must be empty for a task in a new conversation")
    if not words.strip():
        raise InvalidInputError("text", "must be a non-empty string")
    _check_length("text", words)
    _check_length("brief", brief)


def _first_run(s: Session, task: TaskRecord, brief: str, now: float, *, planned: bool) -> None:
    """The task's brief and its first run. A planned task has no session to take its brief: its planner
    reads it; and its own run spans the plan, holding no slot (core.tasks.planned)."""
    brief_id = new_id("i")
    input_rows.insert_input(
        s, id=brief_id, kind="brief", text=brief, now=now, task_id=task.id, from_person=True
    )
    run = run_rows.insert_run(
        s,
        id=new_id("r"),
        bot_id=task.bot_id,
        session_id=task.session_id,
        cause="launch",
        now=now,
        task_id=task.id,
    )
    if planned:
        input_rows.mark_taken(s, brief_id, now=now)
        run_rows.set_run_state(s, run.id, "running", now=now)


def _first_input(
    words: str,
    brief: str,
    recent: Sequence[tuple[str, str]],
    workspace: Path,
    criteria: tuple[Criterion, ...],
) -> str:
    """The task's brief input, and its acceptance criteria when it has a goal."""
    first = task_brief(
        words=words,
        brief=brief,
        recent=recent[-6:],
        attachments=absolute_markers([*(text for _, text in recent[-6:]), words], workspace),
    )
    return f"{first}\n\n{criteria_brief(criteria)}" if criteria else first


def _stored(criteria: tuple[Criterion, ...]) -> str:
    return json.dumps([c.to_json() for c in criteria], ensure_ascii=False) if criteria else ""


def _check_length(field: str, text: str) -> None:
    if len(text) > MAX_TEXT:
        raise InvalidInputError(
            field, f"must be at most {MAX_TEXT:,} characters; shorten it or put the rest in a file"
        )


def _refuse_ended(task: TaskRecord) -> None:
    """A stopped or archived task takes no follow-ups (docs/runs.md#follow-ups-and-steering): a new task is
    the way on."""
    if task.end_reason in ("stopped", "archived") or task.archived_at:
        why = "archived" if task.archived_at else task.end_reason
        raise ConflictError(f"「{task.title}」 was {why}; it cannot continue. Start a new task instead.")
