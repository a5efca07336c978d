"""What the UI and the API read about chat. Plain immutable values; never ORM objects."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from core.activity_steps import ActivityStep

MessageRole = Literal["user", "assistant", "error", "notice"]
MessageState = Literal["queued", "taken", "answered", "done", "cancelled", "error"]


@dataclass(frozen=True, slots=True)
class TaskChip:
    """A background task a reply started (docs/desktop.md#chat-view: 「后台任务 · <title> · <stage>」);
    updates with the task."""

    task_id: str
    title: str
    stage_label: str
    group: str  # working | needs | ended: the dot's colour
    stage: str = ""  # the stage key, so a view can label it in its own language

    def to_json(self) -> dict[str, object]:
        return {
            "taskId": self.task_id,
            "title": self.title,
            "stage": self.stage,
            "stageLabel": self.stage_label,
            "group": self.group,
        }


@dataclass(frozen=True, slots=True)
class RuleChip:
    """A rule a reply created in chat (「规则 · <title> ›」), opening the rule; gone with the rule."""

    rule_id: str
    title: str
    mode: str  # off | observe | act
    paused: bool = False

    def to_json(self) -> dict[str, object]:
        return {"ruleId": self.rule_id, "title": self.title, "mode": self.mode, "paused": self.paused}


@dataclass(frozen=True, slots=True)
class QuestionCard:
    """A task's question as pushed into the conversation: answered with its options or a reply
    (docs/attention.md#questions)."""

    question_id: str
    options: tuple[str, ...]
    default: str | None
    status: str  # open | answered | withdrawn | expired
    answer: str = ""
    kind: str = "question"  # question | approval (approve / deny)

    def to_json(self) -> dict[str, object]:
        return {
            "questionId": self.question_id,
            "kind": self.kind,
            "options": list(self.options),
            "default": self.default,
            "status": self.status,
            "answer": self.answer,
        }


@dataclass(frozen=True, slots=True)
class MessageView:
    id: int
    conversation_id: str
    role: MessageRole
    text: str
    state: MessageState
    created_at: float
    model: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    duration_ms: int = 0
    steps: tuple[ActivityStep, ...] = field(default_factory=tuple)
    task_id: str = ""  # set when this message is a background task's result, failure or question
    task_chips: tuple[TaskChip, ...] = ()  # tasks this reply started
    question: QuestionCard | None = None  # set when this message asks the person something
    on_platform: bool = False  # a chat platform (WeChat) confirmed it has this message of ours
    retryable: bool = False  # the latest failed reply: 重试 asks the model again (core.chat.retry)
    rule_id: str = ""  # set when a rule's run pushed this message (docs/desktop.md#chat-view)
    rule_title: str = ""  # that rule's title now; '' once the rule was deleted (the id stays)
    rule_chips: tuple[RuleChip, ...] = ()  # rules this reply created (`rule_create`)


@dataclass(frozen=True, slots=True)
class LiveReply:
    """The reply a conversation's current turn is streaming, held in memory until it is stored."""

    conversation_id: str
    turn_id: str
    text: str
    steps: tuple[ActivityStep, ...]
    started_at: float


@dataclass(frozen=True, slots=True)
class ConversationView:
    id: str
    bot_id: str
    bot_name: str
    title: str
    updated_at: float
    last_line: str
    busy: bool
    channel: str = "desktop"  # where its person writes from: desktop, wechat, ...
