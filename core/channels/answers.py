"""What a person's message on a chat platform does before it can become chat
(docs/channels.md#answers-and-follow-ups): answer an open question or approval, follow up the task whose
result it quotes, or run the `/tasks` command. Anything else is ordinary chat.

A task question can wait for hours, so a message answers it only when it quotes the pushed question,
starts with the question's 4-digit code, or is a bare option while that question is the bot's latest
message (`core.attention.routing.route`). An approval is answered with `y 4821` or `n 4821`. A quote of a
task's pushed result or failure goes to that task, and a quote of a question the task withdrew is a late
answer to it.
"""

from __future__ import annotations

import contextlib
import logging
import re
import unicodedata
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from sqlalchemy.orm import Session

from core.attention.routing import Incoming, OpenQuestion, route
from core.errors import ConflictError, InvalidInputError, NotFoundError
from core.rules.views import RuleView
from core.store import approvals as approval_rows
from core.store import deliveries as delivery_rows
from core.store import messages as msg_rows
from core.store import tasks as task_rows
from core.store.approvals import ApprovalRecord
from core.store.database import Database
from core.tasks.language import language_of
from core.tasks.views import TaskView
from core.translations import Language, text

log = logging.getLogger(__name__)

# "y 4821", "n4821", "4821 y", "是 4821", "批准 4821", "拒绝 4821" (after NFKC: full-width digits too).
_YES = ("y", "yes", "是", "好", "批准", "同意", "ok")
_NO = ("n", "no", "否", "不", "拒绝")
_WORD = "|".join(re.escape(w) for w in (*_YES, *_NO))
_APPROVAL = re.compile(
    rf"^\s*(?:({_WORD})\s*[,,:: ]?\s*(\d{{4}})|(\d{{4}})\s*[,,:: ]?\s*({_WORD}))\s*[.。!]?\s*$"
)
_COMMAND = re.compile(r"^\s*/tasks\b\s*(.*)$", re.IGNORECASE | re.DOTALL)
_STOP = re.compile(r"^stop\s+(\d{1,3})\s*$", re.IGNORECASE)
OPEN_GROUPS = ["working", "needs"]
LANGUAGE_SAMPLE = 5  # the person's latest messages, which tell the conversation's language


class TaskPort(Protocol):
    async def answer(self, question_id: str, answer: str) -> str: ...

    async def follow_up(self, task_id: str, text: str) -> str: ...

    async def stop_task(self, task_id: str) -> TaskView: ...

    async def list_tasks(
        self, *, bot_id: str | None, groups: list[str] | None, lang: Language
    ) -> list[TaskView]: ...


class ApprovalPort(Protocol):
    async def decide(self, approval_id: str, approve: bool) -> ApprovalRecord: ...

    async def answer_chat_question(self, question_id: str, answer: str) -> ApprovalRecord: ...


class RulePort(Protocol):
    async def list_rules(self, bot_id: str | None = None, lang: Language = "zh") -> list[RuleView]: ...

    async def turn_off(self, rule_id: str) -> RuleView: ...


@dataclass(frozen=True, slots=True)
class Handled:
    """The message was dealt with here; `reply` is what the bot says back ('' for nothing)."""

    reply: str


@dataclass(frozen=True, slots=True)
class _Asked:
    record: ApprovalRecord
    pushed_ref: str  # the platform's id of the pushed question ('' when not pushed yet)
    pushed_message_id: int


@dataclass(frozen=True, slots=True)
class _Listed:
    kind: str  # task | rule
    id: str
    title: str
    detail: str  # a task's stage, a rule's schedule in words


Commit = Callable[[], Awaitable[bool]]


@dataclass(frozen=True, slots=True)
class AnswerContext:
    conversation_id: str
    asked: tuple[_Asked, ...]  # open questions and approvals of this conversation
    latest_bot_message_id: int
    quoted_task: tuple[str, str] | None  # (task id, title) of a quoted result or failure
    quoted_withdrawn: ApprovalRecord | None  # a quoted question the task withdrew
    earlier_words: str  # what the person wrote here lately


class ChannelAnswers:
    def __init__(self, db: Database, tasks: TaskPort, approvals: ApprovalPort, rules: RulePort) -> None:
        self._db = db
        self._tasks = tasks
        self._approvals = approvals
        self._rules = rules
        self._listed: dict[str, list[_Listed]] = {}  # the latest `/tasks` list sent to each conversation

    async def context(self, conversation_id: str, quoted_ref: str) -> AnswerContext:
        """What a message could answer here, read before anything else is sent: a held message going out
        first must not make a pushed question stop being the bot's latest message."""
        return await self._db.read(lambda s: _context(s, conversation_id, quoted_ref))

    async def handle(
        self,
        found: AnswerContext,
        *,
        bot_id: str,
        words: str,
        quoted_ref: str,
        owner: bool,
        commit: Commit,
    ) -> Handled | None:
        """Deal with `words` if they are an answer, a follow-up or a command; None for ordinary chat.
        `commit()` stores the message as said right before anything is done, and says whether it is new:
        after a crash the same message is not acted on twice (at worst not at all; the question then
        still waits in needs-you). `owner`: the person who connected the channel, who may see and stop
        all of the bot's work; anyone else only this conversation's."""
        # "2" or "/tasks" says nothing of a language: the person's earlier words here do.
        lang = language_of(f"{words} {found.earlier_words}")
        command = _COMMAND.match(words)
        if command is not None:
            if not await commit():
                return Handled("")
            scope = None if owner else found.conversation_id
            return Handled(
                await self._command(found.conversation_id, bot_id, scope, command.group(1).strip(), lang)
            )
        approval = _approval_of(found, words)
        if approval is not None:
            asked, approve = approval
            if not await commit():
                return Handled("")
            try:
                await self._approvals.decide(asked.id, approve)
            except ConflictError:
                return Handled("")  # decided meanwhile (the desktop, a time-out): nothing more to say
            return Handled(_say(lang, "approved" if approve else "denied"))
        questions = [
            OpenQuestion(
                question_id=a.record.id,
                task_id=a.record.task_id,
                code=a.record.code,
                options=a.record.options,
                pushed_message_ref=a.pushed_ref,
                is_latest_bot_message=bool(a.pushed_message_id)
                and a.pushed_message_id == found.latest_bot_message_id,
                allows_free_text=True,
            )
            for a in found.asked
            if a.record.kind == "question" and len(a.record.code) == 4
        ]
        routed = route(Incoming(words, quoted_ref or None), questions)
        if routed.is_answer and routed.question_id is not None:
            asked = next(a.record for a in found.asked if a.record.id == routed.question_id)
            return await self._answer(asked, routed.answer, lang, commit)
        if found.quoted_withdrawn is not None:
            return await self._answer(found.quoted_withdrawn, words, lang, commit)
        if found.quoted_task is not None:
            task_id, title = found.quoted_task
            if not await commit():
                return Handled("")
            try:
                await self._tasks.follow_up(task_id, words)
            except (ConflictError, InvalidInputError, NotFoundError) as exc:
                return Handled(_say(lang, "follow_up_refused", title=title, reason=str(exc)))
            return Handled(_say(lang, "going_on", title=title))
        return None

    async def _answer(self, asked: ApprovalRecord, answer: str, lang: Language, commit: Commit) -> Handled:
        if not await commit():
            return Handled("")
        if not asked.task_id:  # the chat agent's own question: its turn goes on and replies by itself
            with contextlib.suppress(ConflictError, NotFoundError):
                await self._approvals.answer_chat_question(asked.id, answer)
            return Handled("")
        title = await self._db.read(lambda s: _title(s, asked.task_id))
        try:
            await self._tasks.answer(asked.id, answer)
        except (ConflictError, NotFoundError):
            return Handled("")  # answered meanwhile elsewhere
        except InvalidInputError as exc:
            return Handled(_say(lang, "answer_refused", reason=str(exc)))
        return Handled(_say(lang, "going_on", title=title))

    async def _command(
        self, conversation_id: str, bot_id: str, scope: str | None, rest: str, lang: Language
    ) -> str:
        if not rest:
            listed = await self._open_work(bot_id, scope, lang)
            # `/tasks stop 2` means the second of this list, even if work starts or ends meanwhile.
            self._listed[conversation_id] = listed
            if not listed:
                return _say(lang, "nothing_open")
            lines = [_say(lang, "open_head")]
            for n, item in enumerate(listed, 1):
                lines.append(_say(lang, f"{item.kind}_line", n=str(n), title=item.title, stage=item.detail))
            lines.append(_say(lang, "stop_hint"))
            return "\n".join(lines)
        stop = _STOP.match(rest)
        if stop is None:
            return _say(lang, "command_help")
        n = int(stop.group(1))
        shown = self._listed.get(conversation_id)
        if shown is None:
            return _say(lang, "list_first")
        if not 1 <= n <= len(shown):
            return _say(lang, "no_such_item", n=str(n))
        item = shown[n - 1]
        if item.kind == "task":
            try:
                await self._tasks.stop_task(item.id)
            except (ConflictError, NotFoundError) as exc:
                return str(exc)
            return _say(lang, "task_stopped", title=item.title)
        try:
            await self._rules.turn_off(item.id)
        except NotFoundError as exc:
            return str(exc)
        return _say(lang, "rule_off", title=item.title)

    async def _open_work(self, bot_id: str, scope: str | None, lang: Language) -> list[_Listed]:
        """The bot's open tasks, then its rules that run, oldest first; only those of conversation
        `scope` when it is given."""
        tasks = await self._tasks.list_tasks(bot_id=bot_id, groups=OPEN_GROUPS, lang=lang)
        rules = [r for r in await self._rules.list_rules(bot_id, lang) if r.mode != "off"]
        listed = [
            _Listed("task", task.id, task.title, task.stage_label)
            for task in sorted(tasks, key=lambda task: task.created_at)
            if scope is None or task.conversation_id == scope
        ]
        listed += [
            _Listed("rule", rule.id, rule.title, rule.schedule_words)
            for rule in sorted(rules, key=lambda rule: rule.created_at)
            if scope is None or rule.conversation_id == scope
        ]
        return listed


def _approval_of(found: AnswerContext, words: str) -> tuple[ApprovalRecord, bool] | None:
    """The open approval of this conversation that `y 4821` / `n 4821` decides, and how."""
    match = _APPROVAL.match(unicodedata.normalize("NFKC", words).lower())
    if match is None:
        return None
    word = match.group(1) or match.group(4)
    code = match.group(2) or match.group(3)
    asked = next(
        (a.record for a in found.asked if a.record.kind == "approval" and a.record.code == code), None
    )
    return None if asked is None else (asked, word in _YES)


def _context(s: Session, conversation_id: str, quoted_ref: str) -> AnswerContext:
    asked: list[_Asked] = []
    for record in approval_rows.open_approvals(s):
        if record.conversation_id != conversation_id:
            continue
        pushed = delivery_rows.get_delivery(s, f"{record.id}:ask")
        message = msg_rows.get_message(s, pushed.message_id) if pushed and pushed.message_id else None
        asked.append(_Asked(record, message.channel_ref if message else "", message.id if message else 0))
    latest = msg_rows.last_bot_message(s, conversation_id)
    quoted_task = None
    withdrawn = None
    quoted = msg_rows.find_by_channel_ref(s, conversation_id, quoted_ref) if quoted_ref else None
    if quoted is not None:
        asking = delivery_rows.asking_messages(s, conversation_id).get(quoted.id)
        ask = approval_rows.get_approval(s, asking) if asking else None
        if ask is not None and ask.kind == "question" and ask.status == "withdrawn" and ask.task_id:
            withdrawn = ask
        elif ask is None and quoted.task_id:
            quoted_task = (quoted.task_id, _title(s, quoted.task_id))
        elif ask is None and quoted.role == "user" and (asked_for := task_rows.task_of_origin(s, quoted.id)):
            quoted_task = (asked_for.id, asked_for.title)  # a reply under the request that started a task
    earlier = " ".join(msg_rows.recent_user_texts(s, conversation_id, LANGUAGE_SAMPLE))
    return AnswerContext(
        conversation_id, tuple(asked), latest.id if latest else 0, quoted_task, withdrawn, earlier
    )


def _title(s: Session, task_id: str) -> str:
    task = task_rows.get_task(s, task_id)
    return task.title if task is not None else task_id


def _say(lang: Language, key: str, **fields: str) -> str:
    return text(lang, f"channel_answer.{key}", **fields)
