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
