"""A task's questions (docs/attention.md#questions): asked at once and pushed in the same
transaction, answered by a person (steered into the run that asked, or a new run), late answers to a
withdrawn question, and the open approvals and questions needs-you lists."""

from __future__ import annotations

import secrets

from sqlalchemy.orm import Session

from core.attention.routing import AnswerError, new_code, validate_answer
from core.clock import Clock
from core.delivery.outbox import Outbox
from core.errors import ConflictError, InvalidInputError, NotFoundError
from core.ids import new_id
from core.store import approvals as approval_rows
from core.store.approvals import ApprovalRecord
from core.store.database import Database
from core.store.tasks import TaskRecord
from core.tasks.commands import TaskCommands
from core.tasks.language import language_of, pushed
from core.tasks.report import Report
from core.tasks.runner import TaskRunner

_RANDOM = secrets.SystemRandom()  # question codes: unpredictable, so a stray number rarely answers


class TaskQuestions:
    def __init__(
        self, db: Database, clock: Clock, outbox: Outbox, runner: TaskRunner, commands: TaskCommands
    ) -> None:
        self._db = db
        self._clock = clock
        self._outbox = outbox
        self._runner = runner
        self._commands = commands

    async def ask(self, task: TaskRecord, report: Report) -> None:
        """Ask right away, whether or not the run goes on; asking again replaces the open question. The
        question and its push commit together, so a crash never leaves a question nobody was asked."""
        assert report.question is not None
        question = report.question
        question_id = new_id("q")
        now = self._clock.time()
        run_id = self._runner.active_run(task.id) or ""
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
        how = await self._commands.follow_up(question.task_id, text, cause="answer", kind="answer")
        await self._outbox.flush()  # a question held behind this one may go now
        return how

    async def _late_answer(self, question: ApprovalRecord, answer: str) -> str:
        """An answer to a question the task withdrew (it finished with its default, or failed) reaches the
        task as a late answer and resumes it (docs/attention.md#questions)."""
        if not answer.strip():
            raise InvalidInputError("answer", "must not be empty; pick an option or write a reply")
        chosen = validate_answer(answer, question.options, allows_free_text=True)
        went_with = f" (you already finished with {question.default!r})" if question.default else ""
        text = (
            f"[The user answered a question you asked earlier{went_with}] "
            f"Question: {question.text}\nAnswer: {chosen}"
        )
        return await self._commands.follow_up(question.task_id, text, cause="answer", kind="answer")
