"""ApprovalCenter: a tool call that needs a person waits here (docs/attention.md#approvals), and is the one
writer of approval rows of kind `approval`. A task's approval waits 12 h, a chat's 10 minutes, an acting rule
run's 1 h; at the deadline it is refused and the task (or the rule run) fails 「批准超时」. An observing rule
run's requests are refused at once (the rule runner records them). Approvals do not survive a restart: the
call that waited is gone with its turn."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Protocol

from sqlalchemy.orm import Session

from core.audit.recorder import AuditRecorder
from core.bus import EventBus
from core.changes import AttentionChanged, TaskChanged
from core.clock import Clock
from core.delivery.outbox import Outbox
from core.ids import new_id
from core.store import approvals as approval_rows
from core.store import conversations as conv_rows
from core.store import rules as rule_rows
from core.store import tasks as task_rows
from core.store.approvals import ApprovalRecord, ApprovalStatus, DecidedBy
from core.store.database import Database
from core.store.rules import RuleRecord
from core.store.runs import RunMode
from core.tasks.language import language_of
from core.translations import has_text, text

log = logging.getLogger(__name__)

TASK_TTL_S = 12 * 3600.0
CHAT_TTL_S = 10 * 60.0
RULE_TTL_S = 3600.0
TIMEOUT_ERROR = text("zh", "approval.timeout")


class TaskRunApprovals(Protocol):
    """What the center needs of task runs (the TaskRunner)."""

    def active_run(self, task_id: str) -> str | None:
        """The task's running run, if any: the approval belongs to it."""
        ...

    def wait_for_person(self, task_id: str, waiting: bool) -> None:
        """The run waits on a person (or no longer does): its time cap does not count the wait."""
        ...

    async def fail_run(self, run_id: str, error: str) -> None:
        """Nobody approved in time: the run fails with `error` and the failure is pushed
        (docs/recovery.md)."""
        ...


class RuleRunApprovals(Protocol):
    """What the center needs of rule runs (the RuleRunner, docs/permissions.md): act runs ask here with a 1 h
    limit; observe runs are refused at once and the runner records it."""

    def approval_context(self, session_id: str) -> tuple[str, RunMode, RuleRecord] | None:
        """(run id, mode, rule) of the live rule run whose session this is; None otherwise."""
        ...

    def refuse_observed_approval(self, session_id: str, action: str, detail: str) -> None: ...

    def approval_expired(self, run_id: str) -> None: ...

    def wait_for_person(self, run_id: str, waiting: bool) -> None:
        """(rule run, is waiting): the run's time cap does not count time spent waiting on the person."""
        ...


class ApprovalCenter:
    def __init__(
        self,
        db: Database,
        bus: EventBus,
        clock: Clock,
        outbox: Outbox,
        *,
        task_runs: TaskRunApprovals,
        rule_runs: RuleRunApprovals,
        audit: AuditRecorder | None = None,
    ) -> None:
        self._db = db
        self._bus = bus
        self._clock = clock
        self._outbox = outbox
        self._task_runs = task_runs
        self._rule_runs = rule_runs
        self._audit = audit  # every approval decided, and by whom (docs/audit.md)
        self._waiting: dict[str, asyncio.Future[bool]] = {}
        self._failing: set[asyncio.Future[None]] = set()

    def _rule_run(self, session_id: str) -> tuple[str, str, str, str] | None:
        """A live rule run's (run id, mode, rule title, rule id) by its session id."""
        found = self._rule_runs.approval_context(session_id) if session_id.startswith("rule-") else None
        return (found[0], found[1], found[2].title, found[2].id) if found is not None else None

    async def request(self, session_id: str, action: str, detail: str) -> bool:
        rule_run = self._rule_run(session_id)
        if rule_run is not None and rule_run[1] == "observe":
            self._rule_runs.refuse_observed_approval(session_id, action, detail)
            return False
        owner = await self._owner(session_id)
        if owner is None:
            return False
        bot_id, conversation_id, task_id, title = owner
        rule_run_id = rule_run[0] if rule_run is not None else ""
        rule_id = rule_run[3] if rule_run is not None else ""
        approval_id = new_id("a")
        now = self._clock.time()

        def insert(s: Session) -> ApprovalRecord:
            return approval_rows.insert_approval(
                s,
                id=approval_id,
                kind="approval",
                bot_id=bot_id,
                conversation_id=conversation_id,
                text=detail,  # what is shown to the person: the command or the path itself
                now=now,
                task_id=task_id,
                run_id=(self._task_runs.active_run(task_id) or "") if task_id else rule_run_id,
            )

        await self._db.write(insert)
        future = self._register(approval_id)
        lang = language_of(title or detail)
        where = ("rule" if rule_run_id else "task") if title else "chat"
        action_key = "approval.action." + action.replace(" ", "_")
        words = text(lang, action_key) if has_text(action_key) else action
        place = text(lang, f"approval.where.{where}", title=title)
        ask = text(lang, "approval.ask", where=place, action=words, detail=detail)
        await self._outbox.push(
            delivery_id=f"{approval_id}:ask",
            bot_id=bot_id,
            conversation_id=conversation_id,
            purpose="approval",
            text=ask,
            task_id=task_id,
            rule_id=rule_id,  # the message names the rule that asks (docs/desktop.md#chat-view)
        )
        if rule_run_id:
            self._rule_runs.wait_for_person(rule_run_id, True)
            try:
                approved = await self._wait(approval_id, future, RULE_TTL_S, "")
            finally:
                self._rule_runs.wait_for_person(rule_run_id, False)
            if not approved and (record := await self._get(approval_id)) and record.decided_by == "ttl":
                self._rule_runs.approval_expired(rule_run_id)
            return approved
        return await self._wait(approval_id, future, TASK_TTL_S if task_id else CHAT_TTL_S, task_id)

    async def _get(self, approval_id: str) -> ApprovalRecord | None:
        return await self._db.read(lambda s: approval_rows.get_approval(s, approval_id))

    async def ask(self, session_id: str, question: str, options: tuple[str, ...]) -> str | None:
        """The chat agent's `ask_user_question`: a card in the conversation; the turn waits for the answer
        (10 minutes, then None). Only chat sessions ask this way; tasks use task_report."""
        owner = await self._owner(session_id) if session_id.startswith("chat-") else None
        if owner is None:
            return None
        bot_id, conversation_id, _, _ = owner
        question_id = new_id("q")
        now = self._clock.time()
        await self._db.write(
            lambda s: approval_rows.insert_approval(
                s,
                id=question_id,
                kind="question",
                bot_id=bot_id,
                conversation_id=conversation_id,
                text=question,
                now=now,
                options=options,
            )
        )
        future = self._register(question_id)
        await self._outbox.push(
            delivery_id=f"{question_id}:ask",
            bot_id=bot_id,
            conversation_id=conversation_id,
            purpose="question",
            text=question + (f"\n{' / '.join(options)}" if options else ""),
        )
        if not await self._wait(question_id, future, CHAT_TTL_S, ""):
            return None
        record = await self._db.read(lambda s: approval_rows.get_approval(s, question_id))
        return record.answer if record else None

    def _register(self, item_id: str) -> asyncio.Future[bool]:
        """Before the item is pushed, so a decision that comes at once still finds its waiter."""
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._waiting[item_id] = future
        return future

    async def _wait(self, item_id: str, future: asyncio.Future[bool], ttl: float, task_id: str) -> bool:
        """Wait for the person: True when decided for, False when refused or nobody answered in time."""
        self._changed(task_id)
        timer = asyncio.get_running_loop().create_task(self._expire_after(item_id, ttl, task_id))
        if task_id:
            self._task_runs.wait_for_person(task_id, True)
        try:
            return await future
        except asyncio.CancelledError:
            # The turn was stopped while waiting: the item no longer has anyone to answer it (unless it
            # was just decided or expired, which is why that is not an error here).
            with contextlib.suppress(ValueError):
                await asyncio.shield(self._close(item_id, "withdrawn", "", ""))
            raise
        finally:
            timer.cancel()
            self._waiting.pop(item_id, None)
            if task_id:
                self._task_runs.wait_for_person(task_id, False)

    async def answer_chat_question(self, question_id: str, answer: str) -> ApprovalRecord:
        """The person answered the chat agent's question: the waiting turn goes on with the answer."""
        record = await self._close(question_id, "answered", answer, "person")
        future = self._waiting.get(question_id)
        if future is not None and not future.done():
            future.set_result(True)
        await self._outbox.flush()
        return record

    async def decide(self, approval_id: str, approve: bool) -> ApprovalRecord:
        record = await self._close(approval_id, "answered", "approved" if approve else "denied", "person")
        future = self._waiting.get(approval_id)
        if future is not None and not future.done():
            future.set_result(approve)
        await self._outbox.flush()  # a question or approval held behind this one may go now
        return record

    async def expire_all_open(self) -> list[ApprovalRecord]:
        """At start: approvals, and the chat agent's own questions, from before a restart lost the call that
        waited for them. (A task's question is not a waiting call: it survives.)"""
        now = self._clock.time()

        def expire(s: Session) -> list[ApprovalRecord]:
            stale = [a for a in approval_rows.open_approvals(s) if a.kind == "approval" or not a.task_id]
            return [approval_rows.decide(s, a.id, status="expired", now=now, decided_by="") for a in stale]

        expired = await self._db.write(expire)
        for record in expired:
            self._audited(record)
        return expired

    async def _expire_after(self, approval_id: str, ttl: float, task_id: str) -> None:
        await self._clock.sleep(ttl)
        with contextlib.suppress(ValueError):
            await self._close(approval_id, "expired", "", "ttl")
        future = self._waiting.get(approval_id)
        if future is not None and not future.done():
            future.set_result(False)
        if task_id:
            # Its own task: failing the run cancels the waiting call, whose cleanup cancels this timer.
            failing: asyncio.Future[None] = asyncio.ensure_future(self._fail_task_run(task_id))
            self._failing.add(failing)
            failing.add_done_callback(self._failing.discard)

    async def _fail_task_run(self, task_id: str) -> None:
        """Nobody approved within 12 h: the task's run fails 「批准超时」, the failure pushed
        (docs/attention.md#timeouts)."""
        run_id = self._task_runs.active_run(task_id)
        if run_id is not None:
            await self._task_runs.fail_run(run_id, TIMEOUT_ERROR)

    async def _close(
        self, approval_id: str, status: ApprovalStatus, answer: str, by: DecidedBy
    ) -> ApprovalRecord:
        now = self._clock.time()
        record = await self._db.write(
            lambda s: approval_rows.decide(
                s, approval_id, status=status, now=now, answer=answer, decided_by=by
            )
        )
        self._changed(record.task_id)
        self._audited(record)
        return record

    def _audited(self, record: ApprovalRecord) -> None:
        if self._audit is not None and record.kind == "approval":
            self._audit.approval(
                task_id=record.task_id,
                run_id=record.run_id,
                target=record.text,
                status=record.status,
                answer=record.answer,
                by=record.decided_by,
            )

    async def _owner(self, session_id: str) -> tuple[str, str, str, str] | None:
        """(bot, conversation, task, task title) of the session asking."""
        if session_id.startswith("task-"):
            task = await self._db.read(lambda s: task_rows.get_task(s, session_id.removeprefix("task-")))
            return (task.bot_id, task.conversation_id, task.id, task.title) if task else None
        if session_id.startswith("chat-"):
            cid = session_id.removeprefix("chat-")
            conversation = await self._db.read(lambda s: conv_rows.get_conversation(s, cid))
            return (conversation.bot_id, conversation.id, "", "") if conversation else None
        if session_id.startswith("rule-"):
            # rule-<rule id>-<n>: the rule's bot and conversation, no task; titled with the rule.
            rule_id = session_id.removeprefix("rule-").rpartition("-")[0]
            rule = await self._db.read(lambda s: rule_rows.get_rule(s, rule_id))
            return (rule.bot_id, rule.conversation_id, "", rule.title) if rule else None
        return None

    def _changed(self, task_id: str) -> None:
        """A task's question or approval shows in its detail too; a chat's or rule run's only in needs-you."""
        self._bus.publish(TaskChanged(task_id) if task_id else AttentionChanged())
